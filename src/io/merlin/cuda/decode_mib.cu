#include <algorithm>
#include <type_traits>

#include "device/cuda/cuda_check.hpp"
#include "io/merlin/cuda/decode_mib.hpp"
#include "io/merlin/mib_decode.hpp"

namespace qgpu::io::merlin::cuda {

namespace {

// Block x: pixels of one frame (grid-stride over the frame), block y: frames (grid-stride over the batch).
template <class T>
__global__ void decode_mib_kernel(const std::uint8_t* comp, const std::uint64_t* chunk_offset,
                                  const std::uint64_t* chunk_size, const std::uint64_t* dest_frame,
                                  std::size_t n_frames, std::uint64_t first_id, PixelFormat f, T* out,
                                  unsigned long long* err) {
  const std::uint32_t pixels = f.rows * f.cols;
  for (std::size_t i = blockIdx.y; i < n_frames; i += gridDim.y) {
    if (chunk_size[i] != f.payload_bytes) {
      if (err && threadIdx.x == 0 && blockIdx.x == 0)
        atomicMin(err, (static_cast<unsigned long long>(first_id + i) << 8) | kPayloadSize);
      continue;
    }
    const std::uint8_t* p = comp + chunk_offset[i];
    T* dst = out + dest_frame[i] * std::uint64_t(pixels);
    for (std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < pixels; k += gridDim.x * blockDim.x) {
      const std::uint32_t r = k / f.cols, c = k - r * f.cols;
      dst[k] = T(mib_pixel(f, p, r, c));
    }
  }
}

}  // namespace

std::string describe_mib_decode_error(unsigned long long word) {
  if (word == 0) return "no error";
  const unsigned code = unsigned(word & 0xff);
  const std::string frame = "frame " + std::to_string(word >> 8);
  if (code == kPayloadSize) return frame + ": payload size differs from the frame format's";
  return frame + ": Merlin decode error code " + std::to_string(code);
}

void decode_mib_frames(const io::cuda::DecodeBatch& batch, const PixelFormat& f, void* out, cudaStream_t stream,
                       unsigned long long* d_error) {
  if (batch.n_chunks == 0 || f.frame_pixels() == 0) return;
  const unsigned threads = 256;
  const std::uint64_t blocks_per_frame = (f.frame_pixels() + threads - 1) / threads;
  const dim3 grid(unsigned(std::min<std::uint64_t>(blocks_per_frame, 1024)),
                  unsigned(std::min<std::size_t>(batch.n_chunks, 65535)));
  auto launch = [&](auto* o) {
    using T = std::remove_pointer_t<decltype(o)>;
    decode_mib_kernel<T><<<grid, threads, 0, stream>>>(batch.comp, batch.chunk_offset, batch.chunk_size,
                                                       batch.dest_frame, batch.n_chunks, batch.first_chunk_id, f, o,
                                                       d_error);
  };
  switch (f.out_dtype) {
    case DType::u8: launch(static_cast<std::uint8_t*>(out)); break;
    case DType::u16: launch(static_cast<std::uint16_t*>(out)); break;
    case DType::u32: launch(static_cast<std::uint32_t*>(out)); break;
    default: throw DTypeError("decode_mib_frames: output dtype " + dtype_name(f.out_dtype) + " is not uint8/16/32");
  }
  QGPU_CUDA_LAUNCHED("decode_mib_kernel");
}

}  // namespace qgpu::io::merlin::cuda
