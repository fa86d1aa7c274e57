#include "live/cuda/live_cuda.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "io/hdf5/cuda/apply_pixel_mask.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"
#include "io/merlin/cuda/decode_mib.hpp"
#include "io/source/cuda/decode_plain.hpp"

namespace qgpu::live::cuda {

namespace {

// Frame i of src (frame_bytes each) to frame pos[i] of dst, words of 4 bytes (frame_bytes % 4 == 0) or bytes.
__global__ void scatter_frames(const std::uint8_t* src, std::uint8_t* dst, const std::uint64_t* pos,
                               std::size_t frame_bytes, bool words) {
  const std::size_t f = blockIdx.y;
  const std::uint8_t* s = src + f * frame_bytes;
  std::uint8_t* d = dst + pos[f] * frame_bytes;
  if (words) {
    const std::size_t n = frame_bytes / 4;
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
      reinterpret_cast<std::uint32_t*>(d)[i] = reinterpret_cast<const std::uint32_t*>(s)[i];
  } else {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < frame_bytes; i += std::size_t(gridDim.x) * blockDim.x)
      d[i] = s[i];
  }
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { QGPU_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
};

}  // namespace

std::shared_ptr<std::uint8_t> pinned_bytes(std::size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    throw OutOfMemory("cannot allocate " + std::to_string(bytes >> 20) + " MiB of pinned host memory for the live ring");
  }
  return std::shared_ptr<std::uint8_t>(static_cast<std::uint8_t*>(p), [](std::uint8_t* q) { cudaFreeHost(q); });
}

std::shared_ptr<DeviceBuffer> zeroed_device(std::size_t bytes) {
  auto b = std::make_shared<DeviceBuffer>(bytes);
  if (bytes) QGPU_CUDA(cudaMemset(b->data(), 0, bytes));
  return b;
}

struct BatchDecoder::Impl {
  io::FileInfo fi;
  std::size_t max_frames = 0, frame_bytes = 0, max_blocks = 0;
  io::cuda::DecodeGeometry geo;
  Stream stream;
  DeviceBuffer comp, table, block_src, block_len, error, bad, positions;
  std::shared_ptr<std::uint8_t> host_table;  // pinned: offsets, sizes, dest frames, positions
  std::size_t n_bad = 0;
};

BatchDecoder::BatchDecoder(const io::FileInfo& codec, std::size_t max_frames, std::size_t max_record_bytes,
                           const std::vector<std::uint32_t>& bad_pixels)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.fi = codec;
  m.max_frames = max_frames;
  m.frame_bytes = codec.frame_bytes();
  const std::size_t es = dtype_size(codec.dtype);
  const bool bitshuffle = codec.codec.kind == io::FrameCodecKind::bitshuffle;
  m.geo = io::cuda::DecodeGeometry{es, codec.shape.frame_pixels(), bitshuffle ? codec.bitshuffle_block_elems : 0, false};
  if (bitshuffle && (m.geo.block_elems % 8 || m.geo.block_elems * es > 16384 || m.geo.block_elems == 0))
    throw FormatError("the stream's bitshuffle block size of " + std::to_string(m.geo.block_elems) +
                      " elements: the GPU decoder handles multiples of 8 up to 16 KiB per block");
  m.max_blocks = bitshuffle ? m.geo.max_blocks() : 0;
  m.comp = DeviceBuffer(max_record_bytes);
  m.table = DeviceBuffer(3 * max_frames * sizeof(std::uint64_t));
  m.positions = DeviceBuffer(max_frames * sizeof(std::uint64_t));
  m.block_src = DeviceBuffer(std::max<std::size_t>(1, max_frames * m.max_blocks) * sizeof(std::uint64_t));
  m.block_len = DeviceBuffer(std::max<std::size_t>(1, max_frames * m.max_blocks) * sizeof(std::uint32_t));
  m.error = DeviceBuffer(sizeof(unsigned long long));
  m.host_table = pinned_bytes(4 * max_frames * sizeof(std::uint64_t));
  m.n_bad = bad_pixels.size();
  m.bad = DeviceBuffer(std::max<std::size_t>(1, m.n_bad) * sizeof(std::uint32_t));
  if (m.n_bad) m.bad.upload(bad_pixels.data(), m.n_bad * sizeof(std::uint32_t));
  staging_ = std::make_shared<DeviceBuffer>(max_frames * m.frame_bytes);
}

BatchDecoder::~BatchDecoder() = default;

std::vector<std::pair<std::size_t, std::string>> BatchDecoder::decode(const std::uint8_t* ring,
                                                                      const std::uint64_t* offsets,
                                                                      const std::uint64_t* sizes, std::size_t n,
                                                                      bool zero_bad_pixels) {
  Impl& m = *impl_;
  if (n > m.max_frames) throw InvalidArgument("live batch of " + std::to_string(n) + " frames: at most " +
                                              std::to_string(m.max_frames));
  std::vector<std::pair<std::size_t, std::string>> failed;
  if (n == 0) return failed;
  // The records lie in at most two spans of the ring (FIFO order, wrapping once): copied one after the other.
  std::size_t wrap = n;
  for (std::size_t i = 1; i < n; ++i)
    if (offsets[i] < offsets[i - 1]) {
      wrap = i;
      break;
    }
  const std::uint64_t a0 = offsets[0], a1 = offsets[wrap - 1] + sizes[wrap - 1];
  const std::uint64_t b1 = wrap < n ? offsets[n - 1] + sizes[n - 1] : 0;
  if ((a1 - a0) + b1 > m.comp.bytes()) throw InvalidArgument("live batch larger than the ring");
  QGPU_CUDA(cudaMemcpyAsync(m.comp.data(), ring + a0, a1 - a0, cudaMemcpyHostToDevice, m.stream.s));
  if (b1) QGPU_CUDA(cudaMemcpyAsync(m.comp.as<std::uint8_t>() + (a1 - a0), ring, b1, cudaMemcpyHostToDevice, m.stream.s));
  auto* tab = reinterpret_cast<std::uint64_t*>(m.host_table.get());
  for (std::size_t i = 0; i < n; ++i) {
    tab[i] = i < wrap ? offsets[i] - a0 : (a1 - a0) + offsets[i];
    tab[m.max_frames + i] = sizes[i];
    tab[2 * m.max_frames + i] = i;
  }
  QGPU_CUDA(cudaMemcpyAsync(m.table.data(), tab, 3 * m.max_frames * sizeof(std::uint64_t), cudaMemcpyHostToDevice,
                            m.stream.s));
  QGPU_CUDA(cudaMemsetAsync(staging_->data(), 0, n * m.frame_bytes, m.stream.s));
  const auto* dtab = m.table.as<std::uint64_t>();
  std::size_t from = 0;
  while (from < n) {
    const unsigned long long none = ~0ull;
    QGPU_CUDA(cudaMemcpyAsync(m.error.data(), &none, sizeof none, cudaMemcpyHostToDevice, m.stream.s));
    io::cuda::DecodeBatch db{m.comp.as<std::uint8_t>(), dtab + from, dtab + m.max_frames + from,
                             dtab + 2 * m.max_frames + from, n - from, from};
    auto* d_error = m.error.as<unsigned long long>();
    switch (m.fi.codec.kind) {
      case io::FrameCodecKind::bitshuffle: {
        io::cuda::DecodeScratch scratch{m.block_src.as<std::uint64_t>(), m.block_len.as<std::uint32_t>(),
                                        m.max_frames * m.max_blocks};
        io::cuda::decode_bitshuffle_lz4(db, m.geo, staging_->data(), scratch, d_error, m.stream.s);
        break;
      }
      case io::FrameCodecKind::plain:
        io::cuda::decode_plain(db, dtype_size(m.fi.dtype), m.fi.shape.frame_pixels(), false, staging_->data(), d_error,
                               m.stream.s);
        break;
      case io::FrameCodecKind::merlin:
        io::merlin::cuda::decode_mib_frames(db, m.fi.codec.merlin, staging_->data(), m.stream.s, d_error);
        break;
    }
    unsigned long long err = 0;
    QGPU_CUDA(cudaMemcpyAsync(&err, m.error.data(), sizeof err, cudaMemcpyDeviceToHost, m.stream.s));
    QGPU_CUDA(cudaStreamSynchronize(m.stream.s));
    if (err == ~0ull) break;
    const std::size_t k = std::size_t(err >> 8);
    const std::string why = m.fi.codec.kind == io::FrameCodecKind::merlin
                                ? io::merlin::cuda::describe_mib_decode_error(err)
                                : io::cuda::describe_decode_error(err);
    if (k < from || k >= n) throw DeviceError("live GPU decode reported record " + std::to_string(k) + " of a batch of " +
                                              std::to_string(n) + ": " + why);
    failed.emplace_back(k, why);
    QGPU_CUDA(cudaMemsetAsync(staging_->as<std::uint8_t>() + k * m.frame_bytes, 0, m.frame_bytes, m.stream.s));
    from = k + 1;
  }
  if (zero_bad_pixels && m.n_bad)
    io::cuda::apply_pixel_mask(staging_->data(), m.fi.dtype, n, m.fi.shape.frame_pixels(), m.bad.as<std::uint32_t>(),
                               m.n_bad, m.stream.s);
  QGPU_CUDA(cudaStreamSynchronize(m.stream.s));
  return failed;
}

void BatchDecoder::scatter(void* resident, const std::uint64_t* positions, const std::uint8_t* good, std::size_t n) {
  Impl& m = *impl_;
  // Good frames only: the bad ones are skipped by pointing them at a copy of themselves is not possible, so the
  // good ones are compacted first (source frame i -> its position).
  std::vector<std::uint64_t> src_frame, pos;
  for (std::size_t i = 0; i < n; ++i)
    if (good[i]) {
      src_frame.push_back(i);
      pos.push_back(positions[i]);
    }
  if (pos.empty()) return;
  // Frames of staging are compacted in place (frame src_frame[j] -> j) when some were bad.
  for (std::size_t j = 0; j < src_frame.size(); ++j)
    if (src_frame[j] != j)
      QGPU_CUDA(cudaMemcpyAsync(staging_->as<std::uint8_t>() + j * m.frame_bytes,
                                staging_->as<std::uint8_t>() + src_frame[j] * m.frame_bytes, m.frame_bytes,
                                cudaMemcpyDeviceToDevice, m.stream.s));
  auto* tab = reinterpret_cast<std::uint64_t*>(m.host_table.get()) + 3 * m.max_frames;
  std::copy(pos.begin(), pos.end(), tab);
  QGPU_CUDA(cudaMemcpyAsync(m.positions.data(), tab, pos.size() * sizeof(std::uint64_t), cudaMemcpyHostToDevice,
                            m.stream.s));
  const bool words = m.frame_bytes % 4 == 0;
  const std::size_t units = words ? m.frame_bytes / 4 : m.frame_bytes;
  const dim3 grid(unsigned(std::min<std::size_t>((units + 255) / 256, 64)), unsigned(pos.size()));
  scatter_frames<<<grid, 256, 0, m.stream.s>>>(staging_->as<std::uint8_t>(), static_cast<std::uint8_t*>(resident),
                                               m.positions.as<std::uint64_t>(), m.frame_bytes, words);
  QGPU_CUDA(cudaGetLastError());
  QGPU_CUDA(cudaStreamSynchronize(m.stream.s));
}

}  // namespace qgpu::live::cuda
