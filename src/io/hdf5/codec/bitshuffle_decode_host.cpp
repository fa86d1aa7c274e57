#include "io/hdf5/codec/bitshuffle_decode_host.hpp"

#include <lz4.h>
#include <zstd.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5/codec/bit_transpose.hpp"
#include "io/hdf5/codec/bitshuffle_format.hpp"
#include "io/hdf5/codec/byte_order.hpp"
#include "io/hdf5/codec/lz4_block_rules.hpp"
#include "io/hdf5/codec/parallel_chunks.hpp"

namespace qgpu::io::codec {

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

struct ZstdDctxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

// Per-thread scratch: one decompressed block of bit planes and a zstd context.
struct Scratch {
  std::vector<std::uint8_t> planes;
  std::unique_ptr<ZSTD_DCtx, ZstdDctxFree> zstd;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

std::size_t compressed_bound(BlockCompression c, std::size_t bytes) {
  return c == BlockCompression::lz4 ? std::size_t(LZ4_compressBound(int(bytes))) : ZSTD_compressBound(bytes);
}

// Decompresses one block into planes (exactly `bytes` bytes). Returns "" or the reason.
std::string decompress_block(const BitshuffleParams& p, const std::uint8_t* src, std::size_t len, std::uint8_t* planes,
                             std::size_t bytes, Scratch& s) {
  if (p.compression == BlockCompression::lz4) {
    if (const char* broken = lz4_block_violation(src, len, bytes)) return broken;  // the CUDA decoder's rules
    const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(planes), int(len),
                                        int(bytes));
    if (got < 0) return "malformed LZ4 block";
    if (std::size_t(got) != bytes) return "LZ4 block decodes to " + num(got) + " bytes, expected " + num(bytes);
    return {};
  }
  if (!s.zstd) {
    s.zstd.reset(ZSTD_createDCtx());
    if (!s.zstd) return "cannot create a zstd decompression context";
  }
  const std::size_t got = ZSTD_decompressDCtx(s.zstd.get(), planes, bytes, src, len);
  if (ZSTD_isError(got)) return std::string("malformed zstd block (") + ZSTD_getErrorName(got) + ")";
  if (got != bytes) return "zstd block decodes to " + num(got) + " bytes, expected " + num(bytes);
  return {};
}

// The bit unshuffle, compiled for AVX2 and for baseline x86-64, picked at load time.
#if defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
bool unshuffle(std::size_t elem_size, const std::uint8_t* planes, std::size_t n, std::uint8_t* out) {
  return bit_unshuffle_block(elem_size, planes, n, out);
}

}  // namespace

void decode_chunk(const BitshuffleParams& p, std::size_t frame_elems, const std::uint8_t* chunk,
                  std::size_t chunk_bytes, void* dst) {
  validate(p);
  const ChunkGeometry g{p.elem_size, frame_elems, p.block_elems};
  if (frame_elems > SIZE_MAX / p.elem_size)
    throw FormatError("frame of " + num(frame_elems) + " elements is too large");
  const std::uint64_t frame_bytes = std::uint64_t(frame_elems) * p.elem_size;
  const std::size_t block_bytes = p.block_bytes();
  if (chunk_bytes < kChunkHeaderBytes)
    throw FormatError("chunk of " + num(chunk_bytes) + " bytes is shorter than the 12-byte bitshuffle header");
  const std::uint64_t total = read_be64(chunk);
  if (total != frame_bytes)
    throw FormatError("header states " + num(total) + " decoded bytes, the frame holds " + num(frame_bytes));
  const std::uint32_t header_block = read_be32(chunk + 8);
  if (header_block != block_bytes)
    throw FormatError("header states blocks of " + num(header_block) + " bytes, the dataset's filter uses " +
                      num(block_bytes) + " (" + num(p.block_elems) + " elements)");

  // Walk the block lengths first: the structure must hold before any block is decompressed.
  BlockCursor b(g);
  for (; !b.done(); b.next(read_be32(chunk + b.length_at()))) {
    const std::size_t k = b.k, pos = b.length_at();
    if (chunk_bytes - pos < kBlockLengthBytes)
      throw FormatError("block " + num(k) + " of " + num(g.blocks()) + ": length field at byte " + num(pos) +
                        " lies past the end of the " + num(chunk_bytes) + "-byte chunk (truncated chunk)");
    const std::uint32_t len = read_be32(chunk + pos);
    const std::size_t left = chunk_bytes - b.data_at();
    if (len == 0) throw FormatError("block " + num(k) + ": compressed length is 0");
    if (len > left)
      throw FormatError("block " + num(k) + ": compressed length " + num(len) + " reaches past the end of the chunk (" +
                        num(left) + " bytes left; truncated or corrupt chunk)");
    if (len > compressed_bound(p.compression, b.raw_bytes()))
      throw FormatError("block " + num(k) + ": compressed length " + num(len) + " exceeds the codec's bound for " +
                        num(b.raw_bytes()) + " bytes");
  }
  const std::size_t after = chunk_bytes - b.length_at(), tail_bytes = g.tail_elems() * p.elem_size;
  if (after != tail_bytes)
    throw FormatError("chunk holds " + num(after) + " bytes after its last block, expected " + num(tail_bytes) +
                      " (the last " + num(g.tail_elems()) + " elements verbatim)" +
                      (after > tail_bytes ? "; trailing bytes" : "; truncated chunk"));

  Scratch& s = scratch();
  if (s.planes.size() < block_bytes) s.planes.resize(block_bytes);
  auto* out = static_cast<std::uint8_t*>(dst);
  for (BlockCursor c(g); !c.done(); c.next(read_be32(chunk + c.length_at()))) {
    const std::uint32_t len = read_be32(chunk + c.length_at());
    const std::string why = decompress_block(p, chunk + c.data_at(), len, s.planes.data(), c.raw_bytes(), s);
    if (!why.empty()) throw FormatError("block " + num(c.k) + ": " + why);
    unshuffle(p.elem_size, s.planes.data(), c.elems(), out + c.frame_offset());
  }
  if (tail_bytes) std::memcpy(out + frame_bytes - tail_bytes, chunk + b.length_at(), tail_bytes);
  if (p.big_endian) swap_element_bytes(out, frame_elems, p.elem_size);  // stored order -> host order
}

std::optional<ChunkFailure> decode_chunks(const BitshuffleParams& p, std::size_t frame_elems, const ChunkBatch& b,
                                          unsigned threads) {
  validate(p);
  std::mutex mu;
  std::optional<ChunkFailure> first;
  std::atomic<std::size_t> first_index{SIZE_MAX};
  auto fail = [&](std::size_t i, std::string why) {
    std::lock_guard lock(mu);
    if (!first || i < first->chunk) {
      first = ChunkFailure{i, std::move(why)};
      first_index.store(i, std::memory_order_relaxed);
    }
  };
  parallel_indices(b.n_chunks, threads, [&](std::size_t i) {
    if (i > first_index.load(std::memory_order_relaxed)) return;  // an earlier chunk already failed
    const std::uint64_t off = b.offset[i], size = b.size[i];
    if (off > b.base_bytes || size > b.base_bytes - off)
      return fail(i, "chunk bytes [" + num(off) + ", +" + num(size) + ") lie outside the " + num(b.base_bytes) +
                         "-byte batch buffer");
    try {
      decode_chunk(p, frame_elems, b.base + off, size, b.dest[i]);
    } catch (const FormatError& e) {
      fail(i, e.what());
    } catch (const std::exception& e) {
      fail(i, std::string("decode failed: ") + e.what());
    }
  });
  return first;
}

void decode_chunks_or_throw(const BitshuffleParams& p, std::size_t frame_elems, const ChunkBatch& batch,
                            unsigned threads) {
  if (auto f = decode_chunks(p, frame_elems, batch, threads))
    throw FormatError("chunk " + std::to_string(f->chunk) + ": " + f->reason);
}

}  // namespace qgpu::io::codec
