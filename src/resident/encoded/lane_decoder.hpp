#pragma once
// LaneDecoder: the fast masked-sum kernel's decoder of one dense stream (constant, raw, or rANS with an alphabet
// up to kMaxK), host and device code so that the CPU tests check it value by value against decode_stream. Its
// rANS tables live in caller memory (place(): on the GPU a per-warp shared array, every lane reading its own banks):
//   cum[0 .. K + 1]: kCumWords words, one per word, at col[0], col[stride], ... (a step of the search is one load);
//   16 coarse slots of 256: two words each at lut[0], lut[1], lut[2 stride], ... (one 64-bit load):
//     sym | cum[sym] << 5 | cum[sym + 1] << 18, and cum[sym + 2] (4096 when sym = K), sym the symbol whose
//     interval holds the coarse slot's start.
// A symbol is then one table load and a select when its coarse slot holds at most one symbol boundary below the
// slot (slot < cum[sym + 2]), else a forward search over cum as the reference's.
// Lanes of a warp renormalise and escape at different symbols, so the common cases take no branch: every symbol
// loads the next two renormalisation bytes and the next escape byte (clamped inside the stream) and selects; only
// an escape of more than one varint byte branches. A constant stream (and no stream: as_constant(0)) can also
// decode through rans_next as a one-symbol rANS stream whose state never changes, so that a warp whose lanes hold
// rANS, constant and empty streams runs one instruction stream. The stream may lie in any memory (on the GPU the
// kernel's shared-memory copy, or global memory; BasicLaneDecoder<true> for shared memory only). Same values and
// the same malformed-stream verdicts as decode_stream / StreamCursor (every check of StreamCursor::open; truncated
// renormalisation or escape bytes set `bad`).
#include <cstdint>

#include "resident/encoded/format.hpp"
#include "resident/encoded/stream_codec.hpp"

namespace qgpu::encoded {

// Shared = true (device code only): the stream lies in shared memory, and the per-symbol byte loads are
// shared-memory loads with 32-bit addresses instead of generic ones with 64-bit address arithmetic.
template <bool Shared = false>
struct BasicLaneDecoder {
  static constexpr bool kShared = Shared;
  static constexpr std::uint32_t kMaxK = 30;  // the symbol (<= K) fits 5 bits of a packed entry
  static constexpr std::uint32_t kCumWords = kMaxK + 2;
  static constexpr std::uint32_t kLutShift = 8;  // 16 coarse slots of 256
  static constexpr std::uint32_t kLutSlots = kRansScale >> kLutShift;
  static constexpr std::uint32_t kWords = kCumWords + 2 * kLutSlots;  // per lane
  static_assert(kRansScale == 4096, "packed entries assume 12-bit frequencies");

  std::uint32_t model = kZero;  // kZero after open() of an empty or malformed stream: values 0
  std::uint32_t base = 0;       // constant: the value; raw, rANS: the base
  std::uint32_t w = 0;          // raw: bit width
  std::uint32_t K = 0;          // rANS: the escape symbol
  std::uint32_t x = 0;          // rANS: state
  const std::uint8_t* p = nullptr;  // raw: packed bits; rANS: the stream
  std::uint32_t at = 0, lim = 0;       // rANS: offsets of the next renormalisation byte and of the stream's end
                                       // (raw: lim = the bytes from raw_word(0) to the stream's end)
  std::uint32_t esc_at = 0, esc_lim = 0;  // rANS: offsets of the next escape byte and of the escapes' end
  std::uint32_t* col = nullptr;       // cum (kCumWords words, `stride` apart)
  std::uint32_t* lut = nullptr;       // the coarse entries (pairs of words, 2 * stride apart; 8-byte aligned)
  std::uint32_t shared_p = 0;         // Shared: p as a shared-memory address
  std::uint32_t raw_shift = 0;        // raw: bit offset of the packed bits from the 32-bit word holding p's byte
  std::uint32_t stride = 32;

  // Lane `lane`'s tables in an array of kWords x lanes words (lanes = stride): cum as [word][lane], then the
  // coarse entries as [slot][lane][2].
  QGPU_HD void place(std::uint32_t* tables, std::uint32_t lane, std::uint32_t lanes = 32) {
    stride = lanes;
    col = tables + lane;
    lut = tables + kCumWords * lanes + 2 * lane;
  }
  QGPU_HD_INLINE std::uint32_t& word(std::uint32_t i) const { return col[i * stride]; }
  QGPU_HD_INLINE std::uint32_t cum(std::uint32_t s) const { return word(s); }
  QGPU_HD_INLINE void set_cum(std::uint32_t s, std::uint32_t c) const { word(s) = c; }

  // The alphabets this decoder takes: constant, raw, and rANS with K <= kMaxK (rans_alphabet() of the stream).
  QGPU_HD static bool takes(const std::uint8_t* s, std::uint32_t size) {
    if (size == 0) return false;
    const std::uint8_t m = s[0];
    return m == kConstant || m == kRaw || (m == kRans && rans_alphabet(s, size) <= kMaxK);
  }

  // Parses the header of the stream s (size bytes, n values) with StreamCursor::open's checks; false on a
  // malformed stream or a rANS alphabet above kMaxK (then model = kZero).
  QGPU_HD bool open(const std::uint8_t* s, std::uint32_t size, std::uint32_t n) {
    model = kZero;
    if (size == 0) return true;
    ByteReader rd{s, s + size};
    const std::uint32_t m = rd.byte();
    bool ok = rd.ok;
    if (m == kConstant) {
      base = rd.varint();
      ok = rd.ok;
    } else if (m == kRaw) {
      base = rd.varint();
      w = rd.byte();
      ok = rd.ok && w <= 32 &&
           static_cast<std::uint64_t>(rd.end - rd.p) >= (static_cast<std::uint64_t>(n) * w + 7) / 8;
      set_stream(rd.p);
      raw_shift = 8u * static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(rd.p) & 3u);
      lim = static_cast<std::uint32_t>(rd.end - rd.p) + raw_shift / 8;  // bytes from the aligned word to the end
    } else if (m == kRans) {
      base = rd.varint();
      K = rd.byte();
      ok = rd.ok && K >= 1 && K <= kMaxK;
      std::uint32_t c = 0;
      if (ok) set_cum(0, 0);
      for (std::uint32_t s2 = 0; ok && s2 <= K; ++s2) {
        const std::uint32_t f = rd.varint();
        if (!rd.ok || f > kRansScale - c) {
          ok = false;
          break;
        }
        c += f;
        set_cum(s2 + 1, c);
      }
      if (ok && c != kRansScale) ok = false;
      if (ok) {
        const std::uint32_t esc_bytes = rd.varint();
        ok = rd.ok && static_cast<std::uint64_t>(rd.end - rd.p) >= esc_bytes;
        if (ok) {
          esc_at = static_cast<std::uint32_t>(rd.p - s);
          esc_lim = esc_at + esc_bytes;
          rd.p += esc_bytes;
          x = 0;
          for (std::uint32_t k = 0; k < 4; ++k) x |= static_cast<std::uint32_t>(rd.byte()) << (8 * k);
          ok = rd.ok && rans_state_ok(x);
          set_stream(s);
          at = static_cast<std::uint32_t>(rd.p - s);
          lim = size;  // > at >= 1: the clamped loads below stay inside the stream
        }
      }
      if (ok) {  // the coarse entries (the search of detail::build_rans_lut; cum[K + 1] == 4096 ends it)
        std::uint32_t sym = 0;
        for (std::uint32_t j = 0; j < kLutSlots; ++j) {
          while (cum(sym + 1) <= (j << kLutShift)) ++sym;
          set_entry(j, sym | (cum(sym) << 5) | (cum(sym + 1) << 18), sym < K ? cum(sym + 2) : kRansScale);
        }
      }
    } else {
      ok = false;
    }
    if (ok) model = m;
    if (ok && m == kConstant) as_constant(base, s);
    return ok;
  }

  // Sets up rans_next to give `value` at every position (model unchanged): a one-symbol alphabet (K = 1, symbol 0
  // of frequency 4096) leaves the state at kRansL, so no byte is ever consumed; `any` is one readable byte (the
  // clamped loads read it).
  QGPU_HD void as_constant(std::uint32_t value, const std::uint8_t* any) {
    base = value;
    K = 1;
    set_cum(0, 0);
    set_cum(1, kRansScale);
    set_cum(2, kRansScale);
    for (std::uint32_t j = 0; j < kLutSlots; ++j) set_entry(j, kRansScale << 18, kRansScale);  // sym 0, [0, 4096)
    x = kRansL;
    set_stream(any);
    at = esc_at = esc_lim = 0;
    lim = 1;
  }

  // The next rANS value (decode_stream's step); sets bad where decode_stream would fail (renormalisation or
  // escape bytes run out).
  QGPU_HD_INLINE std::uint32_t rans_next(bool& bad) {
    const std::uint32_t sym = rans_advance();
    rans_renorm();
    return rans_value(sym, bad);
  }
  QGPU_HD_INLINE void set_entry(std::uint32_t j, std::uint32_t a, std::uint32_t b) const {
    lut[j * 2 * stride] = a;
    lut[j * 2 * stride + 1] = b;
  }
  // The symbol of the state's slot; x becomes the decoded state before renormalisation.
  QGPU_HD_INLINE std::uint32_t rans_advance() {
    const std::uint32_t slot = x & (kRansScale - 1);
    const std::uint32_t* const e = lut + (slot >> kLutShift) * 2 * stride;
#ifdef __CUDA_ARCH__
    const uint2 pair = *reinterpret_cast<const uint2*>(e);  // one 64-bit shared-memory load
    const std::uint32_t a = pair.x, hi2 = pair.y;
#else
    const std::uint32_t a = e[0], hi2 = e[1];
#endif
    std::uint32_t sym = a & 31u, lo = (a >> 5) & 0x1fffu, hi = a >> 18;
    const bool step = slot >= hi;  // one symbol boundary below the slot inside its coarse slot: select
    sym += step ? 1u : 0u;
    lo = step ? hi : lo;
    hi = step ? hi2 : hi;
    if (slot >= hi) {  // more boundaries (rare): step forward as the reference does
      do {
        lo = hi;
        ++sym;
        hi = cum(sym + 1);
      } while (hi <= slot);
    }
    x = (hi - lo) * (x >> kRansScaleBits) + slot - lo;
    return sym;
  }
  // The stream's byte i (the rANS loop's loads).
  QGPU_HD_INLINE std::uint32_t hot_byte(std::uint32_t i) const {
#ifdef __CUDA_ARCH__
    if constexpr (Shared) {
      std::uint32_t v;
      asm("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(shared_p + i));
      return v;
    }
#endif
    return p[i];
  }
  QGPU_HD_INLINE void set_stream(const std::uint8_t* q) {
    p = q;
#ifdef __CUDA_ARCH__
    if constexpr (Shared) shared_p = static_cast<std::uint32_t>(__cvta_generic_to_shared(q));
#endif
  }

  // Without a branch: the decoded state is >= 2^11 (x >> 12 >= 2^11 before, every frequency >= 1), so at most two
  // bytes bring it back to >= kRansL; both candidate bytes are loaded at every symbol (clamped inside the stream)
  // and selected.
  QGPU_HD_INLINE void rans_renorm() {
    const std::uint32_t b0 = hot_byte(at < lim ? at : lim - 1), b1 = hot_byte(at + 1 < lim ? at + 1 : lim - 1);
    const bool r0 = x < kRansL;
    x = r0 ? (x << 8) | b0 : x;  // past the end: wrong bytes, and finish() reports it
    const bool r1 = x < kRansL;
    x = r1 ? (x << 8) | b1 : x;
    at += (r0 ? 1u : 0u) + (r1 ? 1u : 0u);
  }
  // After the stream's last value: `bad` when a renormalisation read past the stream's end (at counts every byte
  // taken, so at > lim exactly then), as decode_stream fails.
  QGPU_HD_INLINE void finish(bool& bad) const {
    if (model == kRans && at > lim) bad = true;
  }
  // The value of symbol sym: base + sym, and for the escape symbol K plus the next escape varint. A one-byte
  // varint (the common escape) is the byte at esc_at, loaded at every symbol and selected; a longer one branches.
  QGPU_HD_INLINE std::uint32_t rans_value(std::uint32_t sym, bool& bad) {
    const std::uint32_t eb = hot_byte(esc_at < esc_lim ? esc_at : 0u);
    const bool e = sym >= K;
    const bool one = e && esc_at < esc_lim && eb < 0x80u;
    std::uint32_t v = base + sym + (one ? eb : 0u);
    esc_at += one ? 1u : 0u;
    if (e && !one) v += long_escape(bad);
    return v;
  }
  // The escape varint at esc_at read whole (several bytes, or none left: `bad`).
  QGPU_HD std::uint32_t long_escape(bool& bad) {
    ByteReader rd{p + esc_at, p + esc_lim};
    const std::uint32_t v = rd.varint();
    if (!rd.ok) bad = true;
    esc_at = static_cast<std::uint32_t>(rd.p - p);
    return v;
  }

  // Word j (32 bits, little endian) counted from the aligned word that holds p's byte. The stream's staged copy
  // keeps its address modulo 4 (and payloads start 16-byte aligned), so the words holding any of its bytes are
  // staged / inside the allocation.
  QGPU_HD_INLINE std::uint32_t raw_word(std::uint32_t j) const {
#ifdef __CUDA_ARCH__
    if constexpr (Shared) {
      std::uint32_t v;
      asm("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"((shared_p & ~3u) + 4u * j));
      return v;
    }
    return reinterpret_cast<const std::uint32_t*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{3})[j];
#else
    // (host: byte by byte, nothing read past the stream's end, where a device payload has its pad)
    const std::uint8_t* const w0 = p - raw_shift / 8;
    std::uint32_t v = 0;
    for (std::uint32_t k = 0; k < 4; ++k)
      if (4u * j + k < lim) v |= static_cast<std::uint32_t>(w0[4u * j + k]) << (8 * k);
    return v;
#endif
  }
  // The raw value at position i (< n; open() checked that the packed bits are there): the one or two aligned words
  // holding its w bits (a fixed-width read: two loads at most, where a byte-wise read took up to five).
  QGPU_HD_INLINE std::uint32_t raw_at(std::uint32_t i) const {
    if (w == 0) return base;  // (no packed bytes to read)
    const std::uint32_t bit = raw_shift + i * w;  // < 24 + 4096 x 32
    const std::uint32_t j = bit >> 5, sh = bit & 31u;
    const std::uint32_t lo = raw_word(j), hi = sh + w > 32u ? raw_word(j + 1) : 0u;
    const std::uint64_t acc = ((static_cast<std::uint64_t>(hi) << 32) | lo) >> sh;
    return base + static_cast<std::uint32_t>(acc & ((1ull << w) - 1));
  }

  // Values at positions 0, 1, ... in order, any model (the CPU tests' entry point; the kernel calls the
  // model-specific functions in loops of its own); finish() after the last.
  QGPU_HD std::uint32_t next(std::uint32_t i, bool& bad) {
    switch (model) {
      case kConstant: return base;
      case kRaw: return raw_at(i);
      case kRans: return rans_next(bad);
      default: return 0;
    }
  }
};
using LaneDecoder = BasicLaneDecoder<false>;
static_assert(LaneDecoder::kMaxK == kFastMaxAlphabet, "the fast policy's rANS streams decode in LaneDecoder");

}  // namespace qgpu::encoded
