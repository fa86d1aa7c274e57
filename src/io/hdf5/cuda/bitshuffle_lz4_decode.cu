#include <algorithm>
#include <cstdlib>
#include <string>
#include "device/cuda/cuda_check.hpp"
#include "io/hdf5/codec/bit_transpose_word.hpp"
#include "io/hdf5/codec/lz4_block_rules.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"

namespace qgpu::io::cuda {

namespace {

constexpr int kWarpsPerBlock = 4;

using codec::read_be32;
using codec::read_be64;
__device__ __forceinline__ void report(unsigned long long* err, std::uint64_t chunk, unsigned code) {
  atomicMin(err, (static_cast<unsigned long long>(chunk) << 8) | code);
}

// One thread per chunk: checks the header, walks the block length headers into the block table and copies
// the verbatim tail elements.
__global__ void parse_chunks(DecodeBatch b, DecodeGeometry g, std::uint8_t* out, DecodeScratch s,
                             unsigned long long* err) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= b.n_chunks) return;
  const std::uint64_t id = b.first_chunk_id + i;
  const std::uint8_t* c = b.comp + b.chunk_offset[i];
  const std::uint64_t size = b.chunk_size[i];
  const std::size_t mb = g.max_blocks();
  for (std::size_t k = 0; k < mb; ++k) s.block_len[i * mb + k] = 0xffffffffu;  // "not decodable"
  if (size < 12) return report(err, id, kBlockBounds);
  if (read_be64(c) != g.frame_elems * g.elem_size) return report(err, id, kHeaderSize);
  if (read_be32(c + 8) != g.block_elems * g.elem_size) return report(err, id, kHeaderBlock);
  const std::size_t n = g.frame_elems, rem = n % g.block_elems;
  const std::size_t nblocks = n / g.block_elems + ((rem - rem % 8) > 0 ? 1 : 0);
  std::uint64_t pos = 12;
  for (std::size_t k = 0; k < nblocks; ++k) {
    if (pos + 4 > size) return report(err, id, kBlockBounds);
    const std::uint32_t len = read_be32(c + pos);
    pos += 4;
    if (pos + len > size) return report(err, id, kBlockBounds);
    s.block_src[i * mb + k] = b.chunk_offset[i] + pos;
    s.block_len[i * mb + k] = len;
    pos += len;
  }
  const std::size_t tail = (n % 8) * g.elem_size;
  if (pos + tail != size) return report(err, id, kTrailing);
  std::uint8_t* dst = out + (b.dest_frame[i] * n + (n - n % 8)) * g.elem_size;
  // (none with live marks: n is a multiple of 32). Big-endian elements: byte k of the tail comes from byte
  // k ^ (elem_size - 1) as stored (the bytes of each element reversed; elem_size is 1, 2 or 4).
  const std::size_t flip = g.swap_bytes ? g.elem_size - 1 : 0;
  for (std::size_t k = 0; k < tail; ++k) dst[k] = c[pos + (k ^ flip)];
}

// Decodes one LZ4 block cooperatively: every lane parses the same token stream (uniform control flow) and
// the lanes copy literals and matches side by side. A match copies out[op + i] = out[op - off + i % off],
// which is right for overlapping matches too. Returns false on a malformed stream, and on a block that breaks the
// LZ4 block format's rules (codec/lz4_block_rules.hpp; the host codec refuses the same blocks).
__device__ bool lz4_block_warp(const std::uint8_t* in, std::uint32_t in_len, std::uint8_t* out,
                               std::uint32_t out_len, unsigned lane) {
  std::uint32_t ip = 0, op = 0;
  while (true) {
    if (ip >= in_len) return false;
    const std::uint32_t token = in[ip++];
    std::uint32_t lit = token >> 4;
    if (lit == 15) {
      std::uint32_t x;
      do {
        if (ip >= in_len) return false;
        x = in[ip++];
        lit += x;
      } while (x == 255);
    }
    if (ip + lit > in_len || op + lit > out_len) return false;
    for (std::uint32_t k = lane; k < lit; k += 32) out[op + k] = in[ip + k];
    ip += lit;
    op += lit;
    if (ip == in_len) {
      __syncwarp();
      return op == out_len;
    }
    if (out_len - op < codec::kMatchStartMargin) return false;  // rule 3 of codec/lz4_block_rules.hpp
    if (ip + 2 > in_len) return false;
    const std::uint32_t off = in[ip] | (std::uint32_t(in[ip + 1]) << 8);
    ip += 2;
    std::uint32_t ml = token & 15;
    if (ml == 15) {
      std::uint32_t x;
      do {
        if (ip >= in_len) return false;
        x = in[ip++];
        ml += x;
      } while (x == 255);
    }
    ml += 4;
    if (off == 0 || off > op || ml > out_len - op || out_len - op - ml < codec::kLastLiterals) return false;  // rules 4, 2
    __syncwarp();
    if (off <= 4 && 4 % off == 0 && ml >= 64) {  // a run of period 1, 2 or 4 (zero bit planes): 32-bit stores
      const std::uint32_t head = std::min<std::uint32_t>((4u - (op & 3u)) & 3u, ml);
      if (lane < head) out[op + lane] = out[op - off + lane % off];
      const std::uint32_t p = op + head, words = (ml - head) / 4u;
      std::uint32_t w = 0;  // aligned word at p + 4j: byte b is pattern byte (head + b) % off
      for (std::uint32_t b = 0; b < 4; ++b) w |= std::uint32_t(out[op - off + (head + b) % off]) << (8 * b);
      auto* wout = reinterpret_cast<std::uint32_t*>(out + p);
      for (std::uint32_t j = lane; j < words; j += 32) wout[j] = w;
      const std::uint32_t done = head + 4 * words;
      if (lane < ml - done) out[op + done + lane] = out[op - off + (done + lane) % off];
    } else if (off >= ml) {  // no overlap: a plain copy
      for (std::uint32_t k = lane; k < ml; k += 32) out[op + k] = out[op - off + k];
    } else {  // overlap: source index k % off, stepped without a division per byte
      std::uint32_t r = lane % off;
      const std::uint32_t step = 32u % off;
      for (std::uint32_t k = lane; k < ml; k += 32) {
        out[op + k] = out[op - off + r];
        r += step;
        if (r >= off) r -= off;
      }
    }
    __syncwarp();
    op += ml;
  }
}

// Bit planes -> elements: plane p holds bit p of every element; element e is bit (e & 7) of byte e >> 3.
// Fast path (planes of whole 8-byte words, 8-byte aligned destination): each lane rebuilds 64 elements from one
// word of every plane with 8x8 bit-matrix transposes (the host codec's unshuffle64). Otherwise each lane rebuilds
// 8 elements from one byte of every plane. With live.bits, the lane marks the pixel groups of its nonzero elements
// (the OR of the plane words it read: bit e for element e); dst is element `first` of frame `frame`.
// Swap (elements stored big-endian): output bit p is stored bit p ^ (8 * (sizeof(T) - 1)), i.e. the planes of stored
// byte sizeof(T) - 1 - b make output byte b; the elements come out in the host's order at no extra cost.
// Live: the load marks live groups or sums frames (live.bits or live.totals set); a dense load compiles without
// either (its decode kernel was 52.9 against 42.8 ms for the sample on an H100 with them compiled in, s30a).
// (live.totals) The warp's sums added to frame `frame`'s total by one lane (called by the whole warp).
__device__ void add_frame_sum(const encoded::LiveGroups& live, std::size_t frame, std::uint64_t sum) {
  if (!live.totals) return;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if ((threadIdx.x & 31u) == 0 && sum) atomicAdd(live.totals + frame, static_cast<unsigned long long>(sum));
}

// The fast path's loop (Sum: add the elements to *sum; a compile-time choice: see unshuffle64).
template <class T, bool Swap, bool Live, bool Sum>
__device__ void unshuffle_words(const std::uint8_t* planes, std::size_t bytes_per_plane, std::uint8_t* out,
                                unsigned lane, const encoded::LiveGroups& live, std::size_t frame, std::size_t first,
                                std::uint64_t* sum) {
  for (std::size_t g = 8 * lane; g < bytes_per_plane; g += 8 * 32) {
    const std::uint64_t nz = codec::detail::unshuffle64<sizeof(T), Swap, Sum>(planes + g, bytes_per_plane,
                                                                              out + g * 8 * sizeof(T), sum);
    if (Live && live.bits && nz) {  // elements first + 8 g .. + 63; first is a multiple of 8, not always of 32
      const std::size_t e0 = first + 8 * g;
      const std::size_t q0 = e0 / encoded::kGroupPixels, split = (q0 + 1) * encoded::kGroupPixels - e0;  // 8..32
      const std::uint64_t in_q0 = split >= 64 ? nz : nz & ((std::uint64_t{1} << split) - 1);
      if (in_q0) live.mark(frame, q0);
      const std::uint64_t rest = split >= 64 ? 0 : nz >> split;  // the next 64 - split <= 56 elements
      if (rest & 0xffffffffull) live.mark(frame, q0 + 1);
      if (rest >> 32) live.mark(frame, q0 + 2);
    }
  }
}

template <class T, bool Swap, bool Live>
__device__ void unshuffle_warp(const std::uint8_t* planes, std::size_t elems, T* dst, unsigned lane,
                               const encoded::LiveGroups& live, std::size_t frame, std::size_t first) {
  constexpr int kBits = 8 * sizeof(T);
  constexpr int kFlip = Swap ? kBits - 8 : 0;  // plane index of output bit p: p ^ kFlip
  const std::size_t bytes_per_plane = elems / 8;
  std::uint64_t sum = 0;  // (live.totals) this lane's elements
  if (bytes_per_plane % 8 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 8 == 0) {
    auto* out = reinterpret_cast<std::uint8_t*>(dst);
    if (Live && live.totals)
      unshuffle_words<T, Swap, Live, true>(planes, bytes_per_plane, out, lane, live, frame, first, &sum);
    else
      unshuffle_words<T, Swap, Live, false>(planes, bytes_per_plane, out, lane, live, frame, first, nullptr);
    if constexpr (Live) add_frame_sum(live, frame, sum);
    return;
  }
  for (std::size_t gi = lane; gi < bytes_per_plane; gi += 32) {
    T v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    unsigned any = 0;
#pragma unroll
    for (int p = 0; p < kBits; ++p) {
      const unsigned byte = planes[(p ^ kFlip) * bytes_per_plane + gi];
      any |= byte;
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] |= T((byte >> k) & 1u) << p;
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) dst[gi * 8 + k] = v[k];
    if (Live && live.bits && any) live.mark(frame, (first + gi * 8) / encoded::kGroupPixels);  // 8 aligned elements: one group
    if (Live && live.totals)
#pragma unroll
      for (int k = 0; k < 8; ++k) sum += v[k];
  }
  if constexpr (Live) add_frame_sum(live, frame, sum);
}

// Shared memory of one warp: its decoded block, then (kStageShared) the staged compressed block.
QGPU_HD inline std::size_t warp_smem_bytes(const DecodeGeometry& g, DecodeVariant v) {
  return g.block_elems * g.elem_size + (v == DecodeVariant::kStageShared ? kStageBytes : 0);
}

// The compressed block as the parse will read it: staged into shared memory, prefetched, or as it is.
__device__ const std::uint8_t* place_compressed(const std::uint8_t* src, std::uint32_t len, std::uint8_t* stage,
                                                DecodeVariant v, unsigned lane) {
  if (v == DecodeVariant::kStageShared && len <= kStageBytes) {
    for (std::uint32_t k = lane; k < len; k += 32) stage[k] = src[k];
    __syncwarp();
    return stage;
  }
  if (v == DecodeVariant::kPrefetchL2) {
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(src) & ~std::uintptr_t(127);
    const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(src) + len;
    for (std::uintptr_t a = first + 128 * lane; a < end; a += 128 * 32)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
  }
  return src;
}

template <class T, bool Swap, bool Live>
__global__ void decode_blocks(DecodeBatch b, DecodeGeometry g, T* out, DecodeScratch s, unsigned long long* err,
                              DecodeVariant variant, encoded::LiveGroups live) {
  extern __shared__ __align__(16) std::uint8_t smem[];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const std::size_t mb = g.max_blocks();
  const std::size_t w = blockIdx.x * std::size_t(kWarpsPerBlock) + warp;
  if (w >= b.n_chunks * mb) return;
  const std::size_t chunk = w / mb, k = w % mb;
  const std::size_t n = g.frame_elems;
  const std::size_t nfull = n / g.block_elems, rem = n % g.block_elems;
  const std::size_t elems = k < nfull ? g.block_elems : (rem - rem % 8);
  if (elems == 0) return;  // no partial block in this geometry
  const std::uint32_t len = s.block_len[chunk * mb + k];
  if (len == 0xffffffffu) return;  // the chunk failed to parse and is already reported
  std::uint8_t* buf = smem + warp * warp_smem_bytes(g, variant);
  const std::uint8_t* in =
      place_compressed(b.comp + s.block_src[chunk * mb + k], len, buf + g.block_elems * sizeof(T), variant, lane);
  const bool ok = lz4_block_warp(in, len, buf, std::uint32_t(elems * sizeof(T)), lane);
  if (!ok) {
    if (lane == 0) report(err, b.first_chunk_id + chunk, kLz4Stream);
    return;
  }
  unshuffle_warp<T, Swap, Live>(buf, elems, out + b.dest_frame[chunk] * n + k * g.block_elems, lane, live,
                          b.dest_frame[chunk], k * g.block_elems);
}

template <class T, bool Swap, bool Live>
void launch_blocks(const DecodeBatch& b, const DecodeGeometry& g, void* out, const DecodeScratch& s,
                   unsigned long long* err, cudaStream_t stream, DecodeVariant variant,
                   const encoded::LiveGroups& live) {
  const std::size_t smem = kWarpsPerBlock * warp_smem_bytes(g, variant);
  if (smem > 48 * 1024)
    QGPU_CUDA(
        cudaFuncSetAttribute(decode_blocks<T, Swap, Live>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const std::size_t warps = b.n_chunks * g.max_blocks();
  if (warps == 0) return;  // frames of fewer than 8 elements: no LZ4 block, parse_chunks copied the tail
  const std::size_t blocks = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  decode_blocks<T, Swap, Live>
      <<<blocks, kWarpsPerBlock * 32, smem, stream>>>(b, g, static_cast<T*>(out), s, err, variant, live);
  QGPU_CUDA_LAUNCHED("decode_blocks");
}

template <class T>
void launch(const DecodeBatch& b, const DecodeGeometry& g, void* out, const DecodeScratch& s,
            unsigned long long* err, cudaStream_t stream, DecodeVariant variant, const encoded::LiveGroups& live) {
  const bool with_live = live.bits || live.totals;
  if constexpr (sizeof(T) > 1)
    if (g.swap_bytes)
      return with_live ? launch_blocks<T, true, true>(b, g, out, s, err, stream, variant, live)
                       : launch_blocks<T, true, false>(b, g, out, s, err, stream, variant, live);
  with_live ? launch_blocks<T, false, true>(b, g, out, s, err, stream, variant, live)
            : launch_blocks<T, false, false>(b, g, out, s, err, stream, variant, live);
}

}  // namespace

const char* decode_variant_name(DecodeVariant v) {
  switch (v) {
    case DecodeVariant::kGlobal: return "global";
    case DecodeVariant::kPrefetchL2: return "prefetch-l2";
    case DecodeVariant::kStageShared: return "stage-shared";
  }
  return "unknown";
}

std::string describe_decode_error(unsigned long long word) {
  const unsigned code = word & 0xff;
  const std::string chunk = "chunk " + std::to_string(word >> 8);
  switch (code) {
    case kHeaderSize: return chunk + ": header states a decoded size other than one frame (corrupt chunk)";
    case kHeaderBlock: return chunk + ": header states a block size other than the dataset's (corrupt chunk)";
    case kBlockBounds: return chunk + ": a block reaches past the end of the chunk (truncated or corrupt chunk)";
    case kTrailing: return chunk + ": bytes after the last block do not match the frame (truncated or corrupt chunk)";
    case kLz4Stream: return chunk + ": malformed LZ4 block (corrupt chunk)";
    default: return chunk + ": unknown decode error";
  }
}

void decode_bitshuffle_lz4(const DecodeBatch& b, const DecodeGeometry& g, void* out, const DecodeScratch& s,
                           unsigned long long* err, cudaStream_t stream, DecodeVariant variant,
                           const encoded::LiveGroups& live) {
  if (b.n_chunks == 0) return;
  if (s.capacity_blocks < b.n_chunks * g.max_blocks()) throw Error("decode scratch too small");
  if (live.bits && (!encoded::LiveGroups::applies(g.frame_elems) || live.tile == 0 ||
                    live.words_per_tile != encoded::LiveGroups::words_for(g.frame_elems, live.tile)))
    throw InvalidArgument("decode: live-group marks need frames of a multiple of 32 pixels, a tile and " +
                          (live.tile ? std::to_string(encoded::LiveGroups::words_for(g.frame_elems, live.tile)) :
                                       std::string("a count of")) + " words per tile");
  const unsigned threads = 128;
  parse_chunks<<<unsigned((b.n_chunks + threads - 1) / threads), threads, 0, stream>>>(
      b, g, static_cast<std::uint8_t*>(out), s, err);
  QGPU_CUDA_LAUNCHED("parse_chunks");
  switch (g.elem_size) {
    case 1: return launch<std::uint8_t>(b, g, out, s, err, stream, variant, live);
    case 2: return launch<std::uint16_t>(b, g, out, s, err, stream, variant, live);
    case 4: return launch<std::uint32_t>(b, g, out, s, err, stream, variant, live);
    default: throw Error("bitshuffle decode: unsupported element size " + std::to_string(g.elem_size));
  }
}

}  // namespace qgpu::io::cuda
