#include "io/hdf5/codec/bitshuffle_encode_host.hpp"

#include <lz4.h>
#include <zstd.h>

#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#include "core/error.hpp"
#include "io/hdf5/codec/bit_transpose.hpp"
#include "io/hdf5/codec/bitshuffle_format.hpp"
#include "io/hdf5/codec/byte_order.hpp"
#include "io/hdf5/codec/parallel_chunks.hpp"

namespace qgpu::io::codec {

namespace {

struct ZstdCctxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct Scratch {
  std::vector<std::uint8_t> planes;
  std::vector<std::uint8_t> swapped;  // the frame in stored (big-endian) order
  std::unique_ptr<ZSTD_CCtx, ZstdCctxFree> zstd;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

std::size_t block_bound(BlockCompression c, std::size_t bytes) {
  return c == BlockCompression::lz4 ? std::size_t(LZ4_compressBound(int(bytes))) : ZSTD_compressBound(bytes);
}

#if defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
bool shuffle(std::size_t elem_size, const std::uint8_t* in, std::size_t n, std::uint8_t* planes) {
  return bit_shuffle_block(elem_size, in, n, planes);
}

}  // namespace

std::size_t max_encoded_bytes(const BitshuffleParams& p, std::size_t frame_elems) {
  validate(p);
  const ChunkGeometry g{p.elem_size, frame_elems, p.block_elems};
  if (frame_elems > SIZE_MAX / 2 / p.elem_size) throw InvalidArgument("frame too large to encode");
  std::size_t bound = kChunkHeaderBytes + g.tail_elems() * p.elem_size;
  bound += g.full_blocks() * (kBlockLengthBytes + block_bound(p.compression, p.block_bytes()));
  if (g.partial_block_elems())
    bound += kBlockLengthBytes + block_bound(p.compression, g.partial_block_elems() * p.elem_size);
  return bound;
}

std::size_t encode_chunk(const BitshuffleParams& p, std::size_t frame_elems, const void* src, std::uint8_t* dst,
                         std::size_t dst_capacity) {
  const std::size_t bound = max_encoded_bytes(p, frame_elems);
  if (dst_capacity < bound)
    throw InvalidArgument("bitshuffle encode: output capacity " + std::to_string(dst_capacity) + " bytes, need " +
                          std::to_string(bound));
  const ChunkGeometry g{p.elem_size, frame_elems, p.block_elems};
  const auto* in = static_cast<const std::uint8_t*>(src);
  write_be64(dst, std::uint64_t(frame_elems) * p.elem_size);
  write_be32(dst + 8, std::uint32_t(p.block_bytes()));
  Scratch& s = scratch();
  if (p.big_endian && p.elem_size > 1 && frame_elems > 0) {  // shuffle the elements as they are stored
    s.swapped.assign(in, in + frame_elems * p.elem_size);
    swap_element_bytes(s.swapped.data(), frame_elems, p.elem_size);
    in = s.swapped.data();
  }
  if (s.planes.size() < p.block_bytes()) s.planes.resize(p.block_bytes());
  if (p.compression == BlockCompression::zstd && !s.zstd) {
    s.zstd.reset(ZSTD_createCCtx());
    if (!s.zstd) throw Error("bitshuffle encode: cannot create a zstd context");
  }
  BlockCursor b(g);
  while (!b.done()) {
    const std::size_t bytes = b.raw_bytes();
    shuffle(p.elem_size, in + b.frame_offset(), b.elems(), s.planes.data());
    std::uint8_t* out = dst + b.data_at();
    const std::size_t cap = block_bound(p.compression, bytes);
    std::size_t len;
    if (p.compression == BlockCompression::lz4) {
      const int n = LZ4_compress_default(reinterpret_cast<const char*>(s.planes.data()), reinterpret_cast<char*>(out),
                                         int(bytes), int(cap));
      if (n <= 0) throw Error("bitshuffle encode: LZ4 compression failed");
      len = std::size_t(n);
    } else {
      len = ZSTD_compressCCtx(s.zstd.get(), out, cap, s.planes.data(), bytes, p.zstd_level);
      if (ZSTD_isError(len)) throw Error(std::string("bitshuffle encode: zstd failed: ") + ZSTD_getErrorName(len));
    }
    write_be32(dst + b.length_at(), std::uint32_t(len));
    b.next(len);
  }
  const std::size_t tail = g.tail_elems() * p.elem_size;
  if (tail) std::memcpy(dst + b.length_at(), in + frame_elems * p.elem_size - tail, tail);  // src null when n == 0
  return b.length_at() + tail;
}

std::vector<std::uint8_t> encode_chunk(const BitshuffleParams& p, std::size_t frame_elems, const void* src) {
  std::vector<std::uint8_t> out(max_encoded_bytes(p, frame_elems));
  out.resize(encode_chunk(p, frame_elems, src, out.data(), out.size()));
  return out;
}

void encode_chunks(const BitshuffleParams& p, std::size_t frame_elems, const void* frames, std::size_t n_frames,
                   std::vector<std::vector<std::uint8_t>>& out, unsigned threads) {
  const std::size_t bound = max_encoded_bytes(p, frame_elems);
  const std::size_t frame_bytes = frame_elems * p.elem_size;
  out.resize(n_frames);
  std::mutex mu;
  std::exception_ptr error;
  parallel_indices(n_frames, threads, [&](std::size_t i) {
    try {
      out[i].resize(bound);
      out[i].resize(encode_chunk(p, frame_elems, static_cast<const std::uint8_t*>(frames) + i * frame_bytes,
                                 out[i].data(), bound));
    } catch (...) {
      std::lock_guard lock(mu);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace qgpu::io::codec
