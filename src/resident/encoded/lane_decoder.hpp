#pragma once
// LaneDecoder: the fast masked-sum kernel's decoder of one dense stream (constant, raw, or rANS with an alphabet
// up to kMaxK), host and device code so that the CPU tests check it value by value against decode_stream. Its
// rANS tables live in caller memory, kWords 32-bit words at col[0], col[stride], ... (on the GPU one column of a
// per-warp shared array, stride 32: every lane reads its own bank):
//   words 0 .. kCumWords-1: cum[0 .. K + 1], one per word (a step of the forward search is one load);
//   words kCumWords ..    : the 32 coarse slots' packed entries sym | cum[sym] << 5 | cum[sym + 1] << 17, sym the
//                           coarse symbol of detail::build_rans_lut (the reference's search start).
// A symbol is then one table load when its coarse slot holds no symbol boundary below the slot (slot < cum[sym+1]),
// else the reference's forward search over cum. Same values and the same malformed-stream verdicts as
// decode_stream / StreamCursor (every check of StreamCursor::open; truncated renormalisation or escape bytes set
// `bad`).
#include <cstdint>

#include "resident/encoded/format.hpp"
#include "resident/encoded/stream_codec.hpp"

namespace qgpu::encoded {

QGPU_HD_INLINE std::uint8_t load_readonly(const std::uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

struct LaneDecoder {
  static constexpr std::uint32_t kMaxK = 30;  // the symbol (<= K) fits 5 bits of a packed entry
  static constexpr std::uint32_t kCumWords = kMaxK + 2;
  static constexpr std::uint32_t kLutShift = detail::kRansLutShift;  // 7: 32 coarse slots of 128
  static constexpr std::uint32_t kLutWords = detail::kRansLut;
  static constexpr std::uint32_t kWords = kCumWords + kLutWords;
  static constexpr std::uint32_t kLutBase = kCumWords;  // first word of the coarse entries
  static_assert(kRansScale == 4096 && kLutWords == 32, "packed entries assume 12-bit frequencies, 32 coarse slots");

  std::uint32_t model = kZero;  // kZero after open() of an empty or malformed stream: values 0
  std::uint32_t base = 0;       // constant: the value; raw, rANS: the base
  std::uint32_t w = 0;          // raw: bit width
  std::uint32_t K = 0;          // rANS: the escape symbol
  std::uint32_t x = 0;          // rANS: state
  const std::uint8_t* p = nullptr;  // raw: packed bits; rANS: the stream
  std::uint32_t at = 0, lim = 0;     // rANS: offsets of the next renormalisation byte and of the stream's end
  ByteReader esc{nullptr, nullptr};   // rANS escapes
  std::uint32_t* col = nullptr;       // the tables (kWords words, `stride` apart)
  std::uint32_t stride = 32;

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
      p = rd.p;
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
          esc = ByteReader{rd.p, rd.p + esc_bytes};
          rd.p += esc_bytes;
          x = 0;
          for (std::uint32_t k = 0; k < 4; ++k) x |= static_cast<std::uint32_t>(rd.byte()) << (8 * k);
          ok = rd.ok;
          p = s;
          at = static_cast<std::uint32_t>(rd.p - s);
          lim = size;
        }
      }
      if (ok) {  // packed coarse entries (the search of detail::build_rans_lut; cum[K + 1] == 4096 ends it)
        std::uint32_t sym = 0;
        for (std::uint32_t j = 0; j < kLutWords; ++j) {
          while (cum(sym + 1) <= (j << kLutShift)) ++sym;
          word(kLutBase + j) = sym | (cum(sym) << 5) | (cum(sym + 1) << 17);
        }
      }
    } else {
      ok = false;
    }
    if (ok) model = m;
    return ok;
  }

  // The next rANS value (decode_stream's step); sets bad where decode_stream would fail (renormalisation or
  // escape bytes run out).
  QGPU_HD_INLINE std::uint32_t rans_next(bool& bad) {
    const std::uint32_t sym = rans_advance(rans_entry());
    rans_renorm(bad);
    return rans_value(sym, bad);
  }
  // The packed coarse entry of the state's slot (one table load).
  QGPU_HD_INLINE std::uint32_t rans_entry() const {
    return word(kLutBase + ((x & (kRansScale - 1)) >> kLutShift));
  }
  // The symbol of the state's slot (e = rans_entry()); x becomes the decoded state before renormalisation.
  QGPU_HD_INLINE std::uint32_t rans_advance(std::uint32_t e) {
    const std::uint32_t slot = x & (kRansScale - 1);
    std::uint32_t sym = e & 31u, lo = (e >> 5) & 0xfffu, hi = e >> 17;
    if (slot >= hi) {  // a symbol boundary inside the coarse slot: step forward as the reference does
      do {
        lo = hi;
        ++sym;
        hi = cum(sym + 1);
      } while (hi <= slot);
    }
    x = (hi - lo) * (x >> kRansScaleBits) + slot - lo;
    return sym;
  }
  QGPU_HD_INLINE void rans_renorm(bool& bad) {
    if (x < kRansL) {  // one byte (short enough to be predicated), more only after a rare small frequency
      renorm_byte(bad);
      while (x < kRansL) renorm_byte(bad);
    }
  }
  // The value of symbol sym (an escape reads the next escape varint).
  QGPU_HD_INLINE std::uint32_t rans_value(std::uint32_t sym, bool& bad) {
    if (sym < K) return base + sym;
    const std::uint32_t v = base + K + esc.varint();
    if (!esc.ok) bad = true;
    return v;
  }

  // x = x << 8 | the next byte; past the stream's end decode_stream fails: `bad`, and x = kRansL ends the loop.
  QGPU_HD_INLINE void renorm_byte(bool& bad) {
    if (at < lim) {
      x = (x << 8) | load_readonly(p + at);
    } else {
      bad = true;
      x = kRansL;
    }
    ++at;
  }

  // The raw value at position i (< n; open() checked that the packed bits are there).
  QGPU_HD_INLINE std::uint32_t raw_at(std::uint32_t i) const {
    const std::uint64_t bit = static_cast<std::uint64_t>(i) * w;
    const std::uint32_t nb = static_cast<std::uint32_t>(((bit & 7u) + w + 7) / 8);
    std::uint64_t acc = 0;
    for (std::uint32_t k = 0; k < nb; ++k)
      acc |= static_cast<std::uint64_t>(load_readonly(p + (bit >> 3) + k)) << (8 * k);
    const std::uint64_t mask = (1ull << w) - 1;
    return base + static_cast<std::uint32_t>((acc >> (bit & 7u)) & mask);
  }

  // Values at positions 0, 1, ... in order, any model (the CPU tests' entry point; the kernel calls the
  // model-specific functions in loops of its own).
  QGPU_HD std::uint32_t next(std::uint32_t i, bool& bad) {
    switch (model) {
      case kConstant: return base;
      case kRaw: return raw_at(i);
      case kRans: return rans_next(bad);
      default: return 0;
    }
  }
};

}  // namespace qgpu::encoded
