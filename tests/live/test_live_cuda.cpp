// The live acquisition on the cuda backend (pinned ring, GPU decode of each batch by the load pipeline's kernels,
// scatter into the GPU resident) against the cpu backend's, bit for bit: bitshuffle chunks, plain frames, Merlin
// payloads, a corrupt frame, frames out of order and missing, the stream's bad pixels zeroed. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "detector/virtual_detector.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/load.hpp"
#include "io/merlin/mib_decode.hpp"
#include "io/merlin/mib_writer.hpp"
#include "live/acquisition.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using namespace qgpu::live;

namespace {

struct Acquired {
  Dataset ds;
  LiveProducts products;
};

// Feeds `records` (index, bytes) as one series to an acquisition on `backend`; returns the finished series.
Acquired acquire(const std::string& backend, const SeriesInfo& info, io::FrameCodecKind kind,
            const std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>& records, bool zero_mask = false) {
  AcquisitionOptions o;
  o.backend = backend;
  o.batch_frames = 13;
  o.batch_ms = 1;
  o.pixel_mask = zero_mask ? "zero" : "keep";
  Acquisition a(o);
  a.series_start(info);
  for (const auto& [k, bytes] : records) a.frame({k, bytes.data(), bytes.size(), kind});
  a.series_end(info.series_id, "");
  EXPECT_TRUE(a.wait_finished(1, 60));
  const FinishedSeries f = a.finished().at(0);
  return {f.dataset, f.products};
}

void expect_same(const Acquired& gpu, const Acquired& cpu) {
  EXPECT_EQ(gpu.ds.backend(), Backend::cuda);
  EXPECT_EQ(cpu.ds.backend(), Backend::cpu);
  const HostArray4D g = gpu.ds.read();
  EXPECT_TRUE(g.bytes == std::vector<std::uint8_t>(cpu.ds.host_bytes().begin(), cpu.ds.host_bytes().end()));
  EXPECT_EQ(gpu.products.received, cpu.products.received);
  EXPECT_EQ(gpu.products.sum_pattern.data, cpu.products.sum_pattern.data);
  ASSERT_EQ(gpu.products.images.size(), cpu.products.images.size());
  for (const auto& [name, img] : cpu.products.images) EXPECT_EQ(gpu.products.images.at(name).data, img.data) << name;
  EXPECT_EQ(gpu.products.com_row.data, cpu.products.com_row.data);
  EXPECT_EQ(gpu.products.com_col.data, cpu.products.com_col.data);
  EXPECT_EQ(gpu.ds.provenance().parameters["missing_positions"], cpu.ds.provenance().parameters["missing_positions"]);
}

sample::SampleSpec spec(DType t) {
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = 32;
  s.det_cols = 32;
  s.dtype = t;
  return s;
}

SeriesInfo info_of(const Dataset& ds) {
  SeriesInfo s;
  s.protocol = "test";
  s.series_id = "1";
  s.det_rows = ds.shape().det_rows;
  s.det_cols = ds.shape().det_cols;
  s.dtype = ds.dtype();
  s.frames = ds.shape().frames();
  s.scan_rows = ds.shape().scan_rows;
  s.scan_cols = ds.shape().scan_cols;
  return s;
}

}  // namespace

TEST(LiveCuda, BitshuffleChunksPlainFramesAndFaultsEqualTheCpuBackend) {
  QGPU_REQUIRE_CUDA();
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    io::LoadOptions lo;
    lo.backend = "cpu";
    const Dataset ref = io::load(test::write_small_sample(dtype_name(t) + ".h5", spec(t)), lo);
    const std::size_t fb = ref.shape().frame_pixels() * dtype_size(t);
    io::codec::BitshuffleParams p;
    p.elem_size = dtype_size(t);
    p.block_elems = 8192 / p.elem_size;
    std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> chunks, plain;
    for (std::uint64_t k = 48; k-- > 0;) {  // reversed; 7 never sent; 30 corrupt
      if (k == 7) continue;
      auto c = io::codec::encode_chunk(p, ref.shape().frame_pixels(), ref.host_bytes().data() + k * fb);
      if (k == 30)
        for (std::size_t i = 12; i < 40 && i < c.size(); ++i) c[i] = 0xff;
      chunks.emplace_back(k, std::move(c));
      plain.emplace_back(k, std::vector<std::uint8_t>(ref.host_bytes().data() + k * fb, ref.host_bytes().data() + (k + 1) * fb));
    }
    SeriesInfo info = info_of(ref);
    info.codec.kind = io::FrameCodecKind::bitshuffle;
    info.bad_pixels = {0, 33, 500, 1023};
    const Acquired gpu = acquire("cuda", info, io::FrameCodecKind::bitshuffle, chunks, true);
    const Acquired cpu = acquire("cpu", info, io::FrameCodecKind::bitshuffle, chunks, true);
    expect_same(gpu, cpu);
    EXPECT_EQ(cpu.ds.provenance().parameters["missing_positions"], (std::vector<std::uint64_t>{7, 30}));
    info.codec.kind = io::FrameCodecKind::plain;
    expect_same(acquire("cuda", info, io::FrameCodecKind::plain, plain), acquire("cpu", info, io::FrameCodecKind::plain, plain));
  }
}

TEST(LiveCuda, MerlinPayloadsEqualTheCpuBackend) {
  QGPU_REQUIRE_CUDA();
  for (std::uint32_t depth : {1u, 6u, 12u, 24u}) {
    SCOPED_TRACE(depth);
    io::merlin::MibWriteSpec spec;
    spec.counter_depth = depth;
    spec.rows = spec.cols = 64;
    const io::merlin::PixelFormat f = io::merlin::writer_format(spec);
    std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> payloads;
    const std::uint32_t top = depth == 1 ? 1 : depth == 6 ? 63 : depth == 12 ? 4095 : 100000;
    for (std::uint64_t k = 0; k < 24; ++k) {
      std::vector<std::uint8_t> frame(f.frame_bytes_out());
      for (std::size_t i = 0; i < f.frame_pixels(); ++i) {
        const std::uint32_t v = std::uint32_t((i * 31 + k * 7) % (top + 1));
        std::memcpy(frame.data() + i * f.out_bytes(), &v, f.out_bytes());
      }
      std::vector<std::uint8_t> pay(f.payload_bytes);
      io::merlin::encode_frame_host(f, frame.data(), pay.data());
      payloads.emplace_back(k, std::move(pay));
    }
    SeriesInfo info;
    info.protocol = "merlin";
    info.series_id = "1";
    info.det_rows = f.rows;
    info.det_cols = f.cols;
    info.dtype = f.out_dtype;
    info.codec.kind = io::FrameCodecKind::merlin;
    info.codec.merlin = f;
    info.scan_rows = 4;
    info.scan_cols = 6;
    expect_same(acquire("cuda", info, io::FrameCodecKind::merlin, payloads),
                acquire("cpu", info, io::FrameCodecKind::merlin, payloads));
  }
}
