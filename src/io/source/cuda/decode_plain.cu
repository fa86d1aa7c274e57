#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/error.hpp"

#include "device/cuda/cuda_check.hpp"
#include "io/source/cuda/decode_plain.hpp"
#include "io/source/frame_codec.hpp"

namespace qgpu::io::cuda {

namespace {

constexpr int kThreads = 256;

int grid_for(std::size_t items) {
  return int(std::max<std::size_t>(1, std::min<std::size_t>((items + kThreads - 1) / kThreads, 65535u * 16)));
}

// One thread per output element, grid-stride over (record, element). Records lie at any byte offset in the batch:
// aligned ones are read element-wise, others byte by byte.
template <class T, bool Swap, class Out = T>
__global__ void plain_kernel(DecodeBatch b, std::size_t frame_elems, Out* out, unsigned long long* err) {
  const std::size_t total = b.n_chunks * frame_elems;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t c = i / frame_elems, e = i - c * frame_elems;
    if (b.chunk_size[c] != frame_elems * sizeof(T)) {
      if (e == 0) atomicMin(err, ((b.first_chunk_id + c) << 8) | kHeaderSize);
      continue;
    }
    const std::uint8_t* src = b.comp + b.chunk_offset[c] + e * sizeof(T);
    T v;
    if (reinterpret_cast<std::uintptr_t>(src) % sizeof(T) == 0) {
      v = *reinterpret_cast<const T*>(src);
    } else {
      typename std::make_unsigned<T>::type u = 0;
      for (unsigned k = 0; k < sizeof(T); ++k) u |= decltype(u)(src[k]) << (8 * k);
      v = T(u);
    }
    if constexpr (std::is_same_v<T, std::uint64_t>) {  // float64 -> float32
      const std::uint64_t bits = Swap ? byte_swapped(v) : v;
      out[b.dest_frame[c] * frame_elems + e] = float(__longlong_as_double(static_cast<long long>(bits)));
    } else {
      out[b.dest_frame[c] * frame_elems + e] = Swap ? byte_swapped(v) : v;
    }
  }
}

}  // namespace

void decode_plain(const DecodeBatch& b, std::size_t elem_size, std::size_t frame_elems, bool big_endian, void* out,
                  unsigned long long* d_error, cudaStream_t stream) {
  const std::size_t items = b.n_chunks * frame_elems;
  if (items == 0) return;
  const int grid = grid_for(items);
  auto launch = [&](auto t, auto o) {
    using T = decltype(t);
    using Out = decltype(o);
    if (big_endian && sizeof(T) > 1)
      plain_kernel<T, true, Out><<<grid, kThreads, 0, stream>>>(b, frame_elems, static_cast<Out*>(out), d_error);
    else
      plain_kernel<T, false, Out><<<grid, kThreads, 0, stream>>>(b, frame_elems, static_cast<Out*>(out), d_error);
  };
  switch (elem_size) {  // the bits as they are, whatever the element type; 8: float64 converted to float32
    case 1: launch(std::uint8_t{}, std::uint8_t{}); break;
    case 2: launch(std::uint16_t{}, std::uint16_t{}); break;
    case 4: launch(std::uint32_t{}, std::uint32_t{}); break;
    case 8: launch(std::uint64_t{}, float{}); break;
    default: throw InvalidArgument("decode_plain: element size " + std::to_string(elem_size));
  }
  QGPU_CUDA_LAUNCHED("plain_kernel");
}

}  // namespace qgpu::io::cuda
