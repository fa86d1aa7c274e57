// GPU bitshuffle+LZ4 decode kernel alone: every compressed chunk of the file already in device memory, decoded into
// the frames over and over (bench/cuda_timer.hpp: median of 10 after 3 warm-ups), once per decoder variant (how the
// warp reads the compressed block). GB/s of decoded output; the goal is >= 500.
// usage: bench_decode FILE
#include <cuda_runtime.h>

#include <cstdio>

#include "bench_common.hpp"
#include "cuda_timer.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_decode FILE\n");
    return 2;
  }
  const io::LoadPlan p = io::plan_load(argv[1], {});
  const io::FileInfo& fi = p.info;
  const io::ChunkSources src = io::locate_chunks(p);
  io::BatchLimits all;
  all.max_bytes = ~std::uint64_t(0);
  const auto batches = io::plan_batches(src, p.scan.cols, p.scan.rows, all);
  const io::ReadBatch& b = batches.front();
  std::vector<std::uint8_t> host(b.buffer_bytes);
  io::ParallelReader(src.files, false, 0).read(b, host.data());
  const std::size_t n = b.chunks;
  std::vector<std::uint64_t> table(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    table[i] = b.chunk_dst[i];
    table[n + i] = src.chunks[i].size;
    table[2 * n + i] = i;
  }
  DeviceBuffer comp(host.size()), tab(table.size() * 8), out(n * fi.frame_bytes());
  comp.upload(host.data(), host.size());
  tab.upload(table.data(), table.size() * 8);
  io::cuda::DecodeGeometry geo{dtype_size(fi.dtype), fi.shape.frame_pixels(), fi.bitshuffle_block_elems,
                               fi.swap_bytes()};
  const std::size_t mb = geo.max_blocks();
  DeviceBuffer bsrc(n * mb * 8), blen(n * mb * 4), err(8);
  const auto* t = tab.as<std::uint64_t>();
  io::cuda::DecodeBatch db{comp.as<std::uint8_t>(), t, t + n, t + 2 * n, n, 0};
  io::cuda::DecodeScratch scratch{bsrc.as<std::uint64_t>(), blen.as<std::uint32_t>(), n * mb};
  const unsigned long long none = ~0ull;
  err.upload(&none, 8);
  const double decoded = double(n) * double(fi.frame_bytes());
  char shape[128];
  std::snprintf(shape, sizeof(shape), "%zux%zux%zux%zu %s", fi.shape.scan_rows, fi.shape.scan_cols, fi.shape.det_rows,
                fi.shape.det_cols, dtype_name(fi.dtype).c_str());
  for (const auto variant : {io::cuda::DecodeVariant::kGlobal, io::cuda::DecodeVariant::kPrefetchL2,
                             io::cuda::DecodeVariant::kStageShared}) {
    const double ms = bench::time_ms(
        [&] {
          io::cuda::decode_bitshuffle_lz4(db, geo, out.data(), scratch, err.as<unsigned long long>(), nullptr, variant);
        },
        10);
    unsigned long long e = 0;
    err.download(&e, 8);
    if (e != none) {
      std::fprintf(stderr, "decode error (%s): %s\n", io::cuda::decode_variant_name(variant),
                   io::cuda::describe_decode_error(e).c_str());
      return 1;
    }
    const bool is_default = variant == io::cuda::kDefaultDecodeVariant;
    bench::row(std::string("decode kernel alone, variant ") + io::cuda::decode_variant_name(variant) +
                   (is_default ? " (default)" : ""),
               shape, ms / 1e3, decoded,
               "GB/s of decoded output; " + std::to_string(host.size() >> 20) + " MiB compressed");
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_decode FILE")
