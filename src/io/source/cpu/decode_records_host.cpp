#include "io/source/cpu/decode_records_host.hpp"

#include <cstring>

#include "core/error.hpp"
#include "io/hdf5/codec/bitshuffle_params.hpp"
#include "io/hdf5/codec/parallel_chunks.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/merlin/mib_decode.hpp"

namespace qgpu::io {

namespace {

template <class T> void swap_all(T* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) p[i] = byte_swapped(p[i]);
}

}  // namespace

void swap_bytes_host(void* data, std::size_t elem_size, std::size_t n) {
  if (elem_size == 2) swap_all(static_cast<std::uint16_t*>(data), n);
  else if (elem_size == 4) swap_all(static_cast<std::uint32_t*>(data), n);
}

std::string host_decoder_name(const FileInfo& fi) {
  switch (fi.codec.kind) {
    case FrameCodecKind::bitshuffle:
      return "quantem-gpu host " + codec::describe(bitshuffle_params(fi).compression) + ", all cores";
    case FrameCodecKind::plain: return "quantem-gpu host plain frames, all cores";
    case FrameCodecKind::merlin: return "quantem-gpu host Merlin, all cores";
  }
  return "unknown";
}

std::optional<codec::ChunkFailure> decode_records_host(const FileInfo& fi, const codec::ChunkBatch& b,
                                                       unsigned threads) {
  // es: the stored element size (float64 records decode to float32 frames)
  const std::size_t es = dtype_size(fi.stored_dtype()), elems = fi.shape.frame_pixels(), frame_bytes = es * elems;
  const bool swap = fi.swap_bytes();
  switch (fi.codec.kind) {
    case FrameCodecKind::bitshuffle: {
      require_decoded_elements(fi);
      return codec::decode_chunks(bitshuffle_params(fi), elems, b, threads);  // swaps big-endian elements itself
    }
    case FrameCodecKind::plain: {
      for (std::size_t i = 0; i < b.n_chunks; ++i)
        if (b.size[i] != frame_bytes || b.offset[i] > b.base_bytes || b.size[i] > b.base_bytes - b.offset[i])
          return codec::ChunkFailure{i, "record of " + std::to_string(b.size[i]) + " bytes; a frame has " +
                                            std::to_string(frame_bytes)};
      if (es == 8) {  // float64 -> float32
        codec::parallel_indices(b.n_chunks, threads, [&](std::size_t i) {
          const std::uint8_t* src = b.base + b.offset[i];
          float* out = reinterpret_cast<float*>(b.dest[i]);
          for (std::size_t e = 0; e < elems; ++e) {
            std::uint64_t bits;
            std::memcpy(&bits, src + 8 * e, 8);
            if (swap) bits = byte_swapped(bits);
            double v;
            std::memcpy(&v, &bits, 8);
            out[e] = float(v);
          }
        });
        return std::nullopt;
      }
      codec::parallel_indices(b.n_chunks, threads, [&](std::size_t i) {
        std::memcpy(b.dest[i], b.base + b.offset[i], frame_bytes);
        if (swap) swap_bytes_host(b.dest[i], es, elems);
      });
      return std::nullopt;
    }
    case FrameCodecKind::merlin: {
      const merlin::PixelFormat& f = fi.codec.merlin;
      for (std::size_t i = 0; i < b.n_chunks; ++i)
        if (b.size[i] != f.payload_bytes || b.offset[i] > b.base_bytes || b.size[i] > b.base_bytes - b.offset[i])
          return codec::ChunkFailure{i, "payload of " + std::to_string(b.size[i]) + " bytes; the frame format has " +
                                            std::to_string(f.payload_bytes)};
      codec::parallel_indices(b.n_chunks, threads,
                              [&](std::size_t i) { merlin::decode_frame_host(f, b.base + b.offset[i], b.dest[i]); });
      return std::nullopt;
    }
  }
  throw FormatError("the host has no decoder for codec " + fi.codec.name());
}

}  // namespace qgpu::io
