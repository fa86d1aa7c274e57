// The CUDA Merlin decoder (decode_mib_frames) against the host decoder, on the sample writer's files of every
// counter depth, single/quad (with and without the gap), binary/raw: identical bytes. Skips without a GPU.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "io/merlin/acquisition.hpp"
#include "io/merlin/cuda/decode_mib.hpp"
#include "io/merlin/mib_decode.hpp"
#include "io/sample/sample.hpp"
#include "merlin_files.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;
using namespace qgpu::io::merlin;

namespace {

template <class T> struct Dev {
  T* p = nullptr;
  explicit Dev(std::size_t n) { QGPU_CUDA(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T))); }
  ~Dev() { cudaFree(p); }
};

// Decodes every frame of the acquisition on the GPU (frames written in reverse order, one launch, the file's bytes
// with headers in device memory) and on the host; expects identical bytes. Returns the error word.
unsigned long long compare(const MerlinAcquisition& a, const PixelFormat& f, bool break_one = false) {
  const std::vector<std::uint8_t> file = test::read_bytes(a.files[0]);
  const std::size_t n = a.frames.size();
  std::vector<std::uint64_t> off(n), size(n, f.payload_bytes), dest(n);
  for (std::size_t i = 0; i < n; ++i) off[i] = a.frames[i].offset, dest[i] = n - 1 - i;
  if (break_one) size[1] += 1;
  Dev<std::uint8_t> d_comp(file.size()), d_out(n * f.frame_bytes_out());
  Dev<std::uint64_t> d_off(n), d_size(n), d_dest(n);
  Dev<unsigned long long> d_err(1);
  QGPU_CUDA(cudaMemcpy(d_comp.p, file.data(), file.size(), cudaMemcpyHostToDevice));
  QGPU_CUDA(cudaMemcpy(d_off.p, off.data(), n * 8, cudaMemcpyHostToDevice));
  QGPU_CUDA(cudaMemcpy(d_size.p, size.data(), n * 8, cudaMemcpyHostToDevice));
  QGPU_CUDA(cudaMemcpy(d_dest.p, dest.data(), n * 8, cudaMemcpyHostToDevice));
  QGPU_CUDA(cudaMemset(d_out.p, 0xab, n * f.frame_bytes_out()));
  const unsigned long long none = ~0ull;
  QGPU_CUDA(cudaMemcpy(d_err.p, &none, 8, cudaMemcpyHostToDevice));
  io::cuda::DecodeBatch b;
  b.comp = d_comp.p, b.chunk_offset = d_off.p, b.chunk_size = d_size.p, b.dest_frame = d_dest.p, b.n_chunks = n;
  b.first_chunk_id = 100;
  cuda::decode_mib_frames(b, f, d_out.p, nullptr, d_err.p);
  QGPU_CUDA(cudaDeviceSynchronize());
  std::vector<std::uint8_t> gpu(n * f.frame_bytes_out()), host(f.frame_bytes_out());
  QGPU_CUDA(cudaMemcpy(gpu.data(), d_out.p, gpu.size(), cudaMemcpyDeviceToHost));
  unsigned long long err = 0;
  QGPU_CUDA(cudaMemcpy(&err, d_err.p, 8, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i) {
    if (break_one && i == 1) continue;
    decode_frame_host(f, file.data() + off[i], host.data());
    const std::uint8_t* g = gpu.data() + dest[i] * f.frame_bytes_out();
    EXPECT_TRUE(std::equal(host.begin(), host.end(), g)) << "frame " << i;
  }
  return err;
}

}  // namespace

TEST(MerlinCuda, DecoderMatchesHostEveryForm) {
  QGPU_REQUIRE_CUDA();
  int forms = 0;
  for (std::uint32_t d : {1u, 6u, 12u, 24u})
    for (bool quad : {false, true})
      for (bool raw : {false, true})
        for (bool gap : {false, true}) {
          if (gap && !quad) continue;
          SCOPED_TRACE("depth " + std::to_string(d) + (quad ? " quad" : " single") + (raw ? " raw" : " binary") +
                       (gap ? " gap" : ""));
          sample::SampleSpec s;
          s.scan_rows = 2, s.scan_cols = 3, s.seed = 9, s.dose_per_frame = 3000;
          s.det_rows = s.det_cols = quad ? (gap ? 130 : 128) : 64;
          sample::MibSampleOptions o{d, quad, raw, gap};
          const std::string path = test::temp_path("form.mib");
          sample::write_sample_mib(path, s, o);
          MerlinAcquisition a = scan_merlin(path);
          ASSERT_EQ(a.frames.size(), 6u);
          EXPECT_EQ(compare(a, a.format), ~0ull);
          PixelFormat flipped = a.format;
          flipped.flip_rows = true;
          EXPECT_EQ(compare(a, flipped), ~0ull);
          ++forms;
        }
  EXPECT_EQ(forms, 24);  // 4 depths x (single: binary, raw; quad: binary, raw, each with and without the gap)
}

TEST(MerlinCuda, PayloadSizeMismatchIsReportedAndTheFrameLeftAlone) {
  QGPU_REQUIRE_CUDA();
  const std::filesystem::path dir = test::merlin_dir("cuda_size");
  MibWriteSpec s;
  s.counter_depth = 12, s.rows = s.cols = 32;
  const auto files = test::write_merlin(dir, "scan", s, 2, 3);
  const MerlinAcquisition a = scan_merlin(files[0]);
  const unsigned long long err = compare(a, a.format, true);
  EXPECT_EQ(err, (101ull << 8) | cuda::kPayloadSize);
  EXPECT_EQ(cuda::describe_mib_decode_error(err), "frame 101: payload size differs from the frame format's");
}
