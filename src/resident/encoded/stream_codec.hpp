#pragma once
// encoded-v1 stream encoder and decoder, one function each for host and device (the CPU reference and the CUDA
// kernels run this same code, so both produce the same bytes). A stream is the n counts of one detector pixel
// over one tile of scan positions. Payloads (after the model byte), all integers unsigned LEB128 varints:
//   zero:     an empty stream (no model byte): every value is 0. The most common stream outside the BF disk.
//   constant: value (nonzero).
//   sparse:   m (nonzero count), then per nonzero value in position order: (gap << 1 | big) with gap the number of
//             positions skipped since the previous nonzero, and value - 2 when big (value >= 2; else value is 1).
//   raw:      base, width byte w (0..32), then n values - base packed LSB first, value i at bits [i*w, i*w + w).
//   rANS:     base, byte K (1..128), K + 1 frequencies (symbols 0..K, sum 4096), escape byte count E, E escape
//             bytes (varints value - base - K, in position order, for values with value - base >= K), then the
//             32-bit rANS state (little endian) and the renormalisation bytes in decode order. Symbol s < K means
//             value base + s; symbol K means "take the next escape".
// The encoder computes every candidate's exact size and keeps the smallest (order raw, sparse, rANS on ties;
// zero and constant streams always take their own model): the compact policy. The fast policy (format.hpp: Policy,
// the resident's default) keeps rANS only where it decodes in lockstep and saves a quarter of raw.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "resident/encoded/format.hpp"

namespace qgpu::encoded {

// Loops over a fixed number of loaded values are unrolled on the device, so that a thread has several loads in
// flight (a GPU thread reads its stream with one load per value; the loop bodies do not depend on each other's
// loads).
#if defined(__CUDA_ARCH__)
#define QGPU_ENC_UNROLL _Pragma("unroll")
#else
#define QGPU_ENC_UNROLL
#endif

namespace detail {

inline constexpr std::uint32_t kLoadAhead = 8;  // values loaded before they are used (one chunk)
// The statistics pass (stream_stats), which reads every value of the batch from device memory once, loads twice as
// many ahead (more loads in flight per thread; the CUDA encoder's registers stay at 64, no spills).
inline constexpr std::uint32_t kStatsAhead = 16;

// How far ahead of its reads a pass asks for the values (Get::prefetch): two chunks of the statistics pass.
inline constexpr std::uint32_t kReadAhead = 32;

// Says that positions i .. i + 15 will be read soon, where the Get has a prefetch (the CUDA encoder's, which asks L2
// for them: the passes wait on device memory most of the time); nothing for the others.
template <class Get>
QGPU_HD inline void read_ahead(const Get& get, std::uint32_t i) {
  if constexpr (requires { get.prefetch(i); }) get.prefetch(i);
}

// Calls f(i, get(i)) for i = 0 .. n-1 in order, loading kLoadAhead values ahead.
template <class Get, class F>
QGPU_HD inline void for_each_value(const Get& get, std::uint32_t n, F&& f) {
  std::uint32_t i = 0;
  for (; i + kLoadAhead <= n; i += kLoadAhead) {
    if (i % 16 == 0) read_ahead(get, i + kReadAhead);
    std::uint32_t v[kLoadAhead];
    QGPU_ENC_UNROLL
    for (std::uint32_t k = 0; k < kLoadAhead; ++k) v[k] = get(i + k);
    QGPU_ENC_UNROLL
    for (std::uint32_t k = 0; k < kLoadAhead; ++k) f(i + k, v[k]);
  }
  for (; i < n; ++i) f(i, get(i));
}

// Normalises symbol counts (total n > 0) to frequencies summing to kRansScale; every present symbol keeps >= 1.
// freq may be counts (normalised in place).
QGPU_HD inline void normalise_frequencies(const std::uint16_t* counts, std::uint32_t symbols, std::uint32_t n,
                                          std::uint16_t* freq) {
  std::uint32_t sum = 0, largest = 0, largest_count = 0;  // the first symbol with the most counts
  for (std::uint32_t s = 0; s < symbols; ++s) {
    const std::uint32_t c = counts[s];
    freq[s] = static_cast<std::uint16_t>(c == 0 ? 0u : (c * kRansScale) / n);
    if (c && freq[s] == 0) freq[s] = 1;
    sum += freq[s];
    if (c > largest_count) {
      largest = s;
      largest_count = c;
    }
  }
  if (sum < kRansScale) {
    freq[largest] = static_cast<std::uint16_t>(freq[largest] + (kRansScale - sum));
  } else {
    std::uint32_t excess = sum - kRansScale;
    while (excess > 0) {  // take from the currently largest frequency, keeping it >= 1
      std::uint32_t big = 0;
      for (std::uint32_t s = 1; s < symbols; ++s)
        if (freq[s] > freq[big]) big = s;
      const std::uint32_t take = excess < freq[big] - 1u ? excess : freq[big] - 1u;
      freq[big] = static_cast<std::uint16_t>(freq[big] - take);
      excess -= take;
    }
  }
}

// Coarse slot -> symbol table: lut[j] is the symbol whose interval [cum[s], cum[s + 1]) holds slot j << kRansLutShift,
// so the decoder's search for slot starts at lut[slot >> kRansLutShift] and moves forward over few symbols (the
// result is the same symbol as a search from 0). cum[K + 1] == kRansScale (checked by the decoders) ends each search.
inline constexpr std::uint32_t kRansLutShift = 7;
inline constexpr std::uint32_t kRansLut = kRansScale >> kRansLutShift;  // 32 entries
QGPU_HD inline void build_rans_lut(const std::uint16_t* cum, std::uint8_t* lut) {
  std::uint32_t sym = 0;
  for (std::uint32_t j = 0; j < kRansLut; ++j) {
    while (cum[sym + 1] <= (j << kRansLutShift)) ++sym;
    lut[j] = static_cast<std::uint8_t>(sym);
  }
}

// Smallest size a rANS stream with this base can have: model byte, base, K byte, varint escape byte count (>= 1)
// and the 4-byte state (= 7 + varint_size(base)), plus the frequency table and the escapes, which together take at
// least 4 bytes: the range is >= 1 (else the stream is constant), so either K <= range, some value is escaped
// (>= 1 escape byte) and the K + 1 >= 2 frequencies take >= K + 2 >= 3 bytes, or K = range + 1 >= 2 and the K + 1
// >= 3 frequencies take >= K + 2 >= 4 bytes; in both cases with K + 1 <= 32 one frequency is >= 4096 / 32 = 128 (a
// two-byte varint; with K + 1 > 32 the table alone takes >= 33 bytes). try_rans returns 0 for best <= this, so it
// is skipped without reading the values (tested against the full computation).
QGPU_HD inline std::uint32_t rans_size_floor(std::uint32_t base) { return 11u + varint_size(base); }

// n log2 n - sum c log2 c over the symbol counts (total n): the bits the symbols take under their own frequencies.
// No static model codes them in fewer (Gibbs' inequality: sum c log2(4096 / f) >= this for any frequencies f summing
// to 4096). Float: a few tenths of a bit off at most (n <= kMaxTile), which rans_renorm_floor allows for.
QGPU_HD inline float information_bits(const std::uint16_t* counts, std::uint32_t symbols, std::uint32_t n) {
  float sum = 0.f;
  for (std::uint32_t s = 0; s < symbols; ++s)
    if (counts[s] > 1u) sum += static_cast<float>(counts[s]) * log2f(static_cast<float>(counts[s]));
  return static_cast<float>(n) * log2f(static_cast<float>(n)) - sum;
}

// A floor of the renormalisation bytes R that try_rans's encoder writes for n symbols of `info` information bits
// (the stream's rANS bytes are R + 4, the final state). From the state x in [2^23, 2^31): each symbol takes x to at
// least x * 4096 / f * (1 - 2^-11) (x >= 2^11 f when it is coded), each renormalisation byte keeps x * 256 >= x_old
// * (1 - 2^-11), so 31 + 8R > log2(x_end) + 8R >= 23 + sum log2(4096 / f) - 0.000705 (n + R) >= 23 + info - ...:
// R > (info - 8 - 0.000705 n) / 8.000705. Taken with 2 bits, 0.001 n bits and 8.001 to spare for the float sums.
QGPU_HD inline std::uint32_t rans_renorm_floor(float info, std::uint32_t n) {
  const float r = (info - 10.f - 0.001f * static_cast<float>(n)) / 8.001f;
  return r > 0.f ? static_cast<std::uint32_t>(r) : 0u;
}

// x / f without a division (Alverson's reciprocal, as in ryg_rans): for f >= 2, shift = bit_width(f - 1) (2^(shift-1)
// < f <= 2^shift) and rcp = ceil(2^(31 + shift) / f) < 2^32, (x * rcp) >> (31 + shift) == x / f for every x < 2^31:
// x * rcp / 2^(31 + shift) = x / f + x * e / (f * 2^(31 + shift)) with 0 <= e = rcp * f - 2^(31 + shift) < f, so the
// error is below x / 2^(31 + shift) < 2^-shift <= 1 / f, while x / f is at most (f - 1) / f past an integer: the
// floors are equal. f == 1: x. The rANS encoder divides states x < (kRansL >> kRansScaleBits << 8) * f <= 2^31.
// (A 32-bit division is a dozen dependent instructions on a GPU, on the critical path of every encoded value.)
struct RansReciprocal {
  std::uint32_t rcp = 0, shift = 0;  // shift: the right shift after the high 32 bits (shift - 1 above); f == 1: rcp 0
  QGPU_HD static RansReciprocal of(std::uint32_t f) {
    RansReciprocal r;
    if (f >= 2) {
      const std::uint32_t sh = bit_width(f - 1);
      r.rcp = static_cast<std::uint32_t>(((std::uint64_t{1} << (31 + sh)) + f - 1) / f);
      r.shift = sh - 1;
    }
    return r;
  }
  QGPU_HD std::uint32_t quotient(std::uint32_t x) const {  // x < 2^31
    return rcp ? static_cast<std::uint32_t>((static_cast<std::uint64_t>(x) * rcp) >> 32) >> shift : x;
  }
};

// Where the rANS encoder keeps its per-symbol words (the frequency word and the reciprocal, read at every value):
// with col, 2 x symbols words at col[0], col[stride], ... (on the GPU a thread's column of a block-wide
// shared-memory array, stride = the block's threads: every lane reads its own bank) for alphabets of up to
// `symbols` symbols (escape included); larger ones, and no col, use arrays in the encoder's frame (on the GPU local
// memory, which the 1.4 KB frames of a block's threads overflow from L1). The bytes are the same either way.
struct RansTableSlot {
  std::uint32_t* col = nullptr;
  std::uint32_t stride = 0, symbols = 0;
};

// Alphabet candidates of the rANS model: the smallest that covers the range, or leaves at most n/32 values escaped
// (a local array in each function that uses it: a namespace-scope array is not device code).
#define QGPU_RANS_ALPHABETS {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128}

// The largest alphabet candidate <= max_k (0: none).
QGPU_HD inline std::uint32_t widest_alphabet(std::uint32_t max_k) {
  const std::uint32_t candidates[] = QGPU_RANS_ALPHABETS;
  std::uint32_t c = 0;
  for (std::uint32_t x : candidates)
    if (x <= max_k) c = x;
  return c;
}

// Whether an alphabet of at most max_k symbols that does not cover a stream's range would need a pass counting the
// values below base + widest_alphabet(max_k) (its decision before any histogram; see try_rans).
QGPU_HD inline bool rans_window_test(std::uint32_t range, std::uint32_t max_k) {
  return max_k < kMaxAlphabet && range + 1 > max_k;
}

// A histogram of value - base with bins 0 .. used (the last one also every value at or above kMaxAlphabet; counts
// <= n <= kMaxTile: 16 bits), kept in the rANS table's words while they are free (bin s in the low or high half of
// word s / 2 of the column, RansTableSlot: on the GPU shared memory, where an array in the thread's frame is local
// memory, which the block's frames overflow from L1: one read-modify-write that missed it per value), else in the
// caller's array `own`. A handle of pointers (no array of its own, so that it stays in registers); the counts are
// read out before try_rans writes its table there.
struct RansHistogram {
  std::uint32_t* col = nullptr;  // the table's column, or null: own
  std::uint32_t stride = 0;
  std::uint16_t* own = nullptr;  // kMaxAlphabet + 1 bins
  // Bins 0 .. used, zeroed, in the table's words when they hold them, else in own_bins.
  QGPU_HD void start(RansTableSlot table, std::uint32_t used, std::uint16_t* own_bins) {
    const std::uint32_t words = used / 2 + 1;
    own = own_bins;
    if (table.col && words <= 2 * table.symbols) {
      col = table.col;
      stride = table.stride;
      for (std::uint32_t j = 0; j < words; ++j) col[j * stride] = 0;
    } else {
      col = nullptr;
      for (std::uint32_t b = 0; b <= used; ++b) own[b] = 0;
    }
  }
  QGPU_HD void add(std::uint32_t d) const {
    const std::uint32_t b = d < kMaxAlphabet ? d : kMaxAlphabet;
    if (col)
      col[(b >> 1) * stride] += 1u << (16 * (b & 1u));
    else
      ++own[b];
  }
  QGPU_HD std::uint16_t operator[](std::uint32_t b) const {
    return col ? static_cast<std::uint16_t>(col[(b >> 1) * stride] >> (16 * (b & 1u))) : own[b];
  }
};

// What try_rans reads from the values before its encoding pass, gathered by another pass (encode_stream_with's raw
// pass): the histogram of value - base (bins 0 .. min(range + 1, kMaxAlphabet), the last one every value at or above
// kMaxAlphabet), or, where rans_window_test, the number of values below base + widest_alphabet(max_k).
struct RansPrecount {
  bool window = false;  // inside is set (else hist)
  std::uint32_t inside = 0;
  RansHistogram hist;
  std::uint16_t own[kMaxAlphabet + 1];  // hist's bins where the table's column does not hold them
};

// Tries the rANS model; writes the stream to slot and returns its size when smaller than `best`, else 0. slot
// holds at least best bytes (the stream is smaller than best when it is written). counts16, when given (only for
// base 0 and range < kCountedValues), holds the counts of the values 0..15 (StreamStats::counts): the histogram
// without another pass over the values. at: null, the stream starts at slot; else the stream is left where the
// encoder built it, at slot + *at (<= best - size; no byte copy to the front: the CUDA encoder's compaction copies
// it from there). max_k: rANS loses (0) when its alphabet K would exceed it (decided from the histogram, before
// the encoding pass).
template <class Get>
QGPU_HD std::uint32_t try_rans(const Get& get, std::uint32_t n, std::uint32_t base, std::uint32_t range,
                               std::uint8_t* slot, std::uint32_t best, const std::uint64_t* counts16 = nullptr,
                               std::uint32_t* at = nullptr, RansTableSlot table = {},
                               std::uint32_t max_k = kMaxAlphabet, const RansPrecount* pre = nullptr,
                               bool* wrote = nullptr) {
  // freq[] holds the symbol counts (<= n <= kMaxTile: 16 bits), then the frequencies (normalised in place). Values
  // minus base are <= range: the counts, the alphabet K <= range + 1 and the escape count use freq[0 .. range + 1]
  // only (every entry when range + 1 >= kMaxAlphabet).
  // pre: what another pass counted (RansPrecount); wrote: set when the encoding pass starts writing slot (where it
  // may stop at the limit, leaving slot changed).
  // An alphabet of at most max_k that does not cover the range must leave at most n/32 values escaped at the largest
  // candidate c <= max_k: one pass counting the values below base + c decides it without the histogram (wide
  // streams at high dose, which the fast policy keeps raw).
  if (!counts16 && rans_window_test(range, max_k)) {
    const std::uint32_t c = widest_alphabet(max_k);
    if (c == 0) return 0;
    std::uint32_t inside = 0;
    if (pre && pre->window)
      inside = pre->inside;
    else
      for_each_value(get, n, [&](std::uint32_t, std::uint32_t v) { inside += v - base < c ? 1u : 0u; });
    if ((n - inside) * 32u > n) return 0;
  }
  std::uint16_t freq[kMaxAlphabet + 1];
  const std::uint32_t used = range < kMaxAlphabet ? range + 1 : kMaxAlphabet;
  for (std::uint32_t s = 0; s <= used; ++s) freq[s] = 0;
  if (counts16) {
    for (std::uint32_t s = 0; s <= range; ++s)
      freq[s] = static_cast<std::uint16_t>(counts16[s >> 2] >> (16 * (s & 3u)));
  } else if (pre && !pre->window) {
    for (std::uint32_t s = 0; s <= used; ++s) freq[s] = pre->hist[s];
  } else {
    RansHistogram h;
    h.start(table, used, freq);  // (counted in freq itself where the column does not hold the bins)
    for_each_value(get, n, [h, base](std::uint32_t, std::uint32_t v) { h.add(v - base); });
    if (h.col)
      for (std::uint32_t s = 0; s <= used; ++s) freq[s] = h[s];
  }
  // Values escaped by alphabet c: n minus the values below c (a running prefix sum over the histogram, so each
  // bin is read once).
  std::uint32_t K = kMaxAlphabet, below = 0, counted = 0;  // below = hist[0] + ... + hist[counted - 1]
  const std::uint32_t candidates[] = QGPU_RANS_ALPHABETS;
  for (std::uint32_t c : candidates) {
    if (c > range) {
      K = range + 1;
      break;
    }
    while (counted < c) below += freq[counted++];
    if ((n - below) * 32u <= n) {
      K = c;
      break;
    }
  }
  if (K > max_k) return 0;  // (the fast policy: an alphabet its lockstep decoder takes)
  while (counted < K) below += freq[counted++];
  const std::uint32_t esc_count = n - below;
  freq[K] = static_cast<std::uint16_t>(esc_count);
  const float info = information_bits(freq, K + 1, n);
  normalise_frequencies(freq, K + 1, n, freq);
  // Per symbol: the reciprocal of its frequency, and one word with the frequency f (bits 0..12, <= 4096), its start
  // cum = f(0) + ... + f(s - 1) (bits 13..25, <= 4096) and the reciprocal's shift (bits 26..29, <= 11).
  // The rest is instantiated twice, once per place of the table (kSlot: table's column; else the frame's arrays),
  // so that on a GPU the symbol words are read with shared-memory loads (one pointer that might be either would be
  // a generic one).
  std::uint32_t rcp_frame[kMaxAlphabet + 1], sym_frame[kMaxAlphabet + 1];
  const auto finish = [&](auto in_slot) -> std::uint32_t {
    constexpr bool kSlot = decltype(in_slot)::value;
    std::uint32_t table_bytes = 0, cum = 0;
    std::uint32_t* const sym = kSlot ? table.col : sym_frame;
    std::uint32_t* const rcp = kSlot ? table.col + table.symbols * table.stride : rcp_frame;
    const std::uint32_t step = kSlot ? table.stride : 1u;
    for (std::uint32_t s = 0; s <= K; ++s) {
      const std::uint32_t f = freq[s];
      table_bytes += varint_size(f);
      const RansReciprocal r = RansReciprocal::of(f);
      rcp[s * step] = r.rcp;
      sym[s * step] = f | (cum << 13) | (r.shift << 26);
      cum += f;
    }
    // Escaped values are value - base - K <= range - K: one varint byte each when that is below 128 (no pass).
    std::uint32_t esc_bytes = range - K < 128u ? esc_count : 0u;
    if (esc_count && range - K >= 128u)
      for_each_value(get, n, [&](std::uint32_t, std::uint32_t v) {
        const std::uint32_t d = v - base;
        if (d >= K) esc_bytes += varint_size(d - K);
      });
    const std::uint64_t header64 =
        1ull + varint_size(base) + 1 + table_bytes + varint_size(esc_bytes) + static_cast<std::uint64_t>(esc_bytes);
    if (header64 + 4 >= best) return 0;
    const std::uint32_t header = static_cast<std::uint32_t>(header64);
    const std::uint32_t limit = best - header;  // the rANS bytes must stay below this for rANS to win
    // A stream whose information alone reaches the limit loses without the encoding pass (the bytes are the same:
    // the pass would stop at the limit).
    if (rans_renorm_floor(info, n) + 4u >= limit) return 0;
    if (wrote) *wrote = true;
    std::uint8_t* const end = slot + best;
    std::uint8_t* ptr = end;
    std::uint32_t x = kRansL;
    // One-byte escapes (every escaped value - base - K <= range - K < 128) are written as the backward pass meets them,
    // last first, down from slot + header: in position order at the end of the header as it sits at slot (no pass of
    // their own; the rANS bytes stay above slot + header + 4, see limit).
    const std::uint32_t fields = header - esc_bytes;  // model byte .. escape byte count
    const bool one_byte_escapes = esc_count && range - K < 128u;
    std::uint8_t* esc = slot + header;
    // One symbol, encoded backwards; false when the rANS bytes reach the limit (rANS loses).
    const auto put = [&](std::uint32_t d) {
      const std::uint32_t s = d < K ? d : K;
      if (d >= K && one_byte_escapes) *--esc = static_cast<std::uint8_t>(d - K);
      const std::uint32_t w = sym[s * step], r = rcp[s * step], f = w & 0x1fffu;
      const std::uint32_t x_max = ((kRansL >> kRansScaleBits) << 8) * f;
      while (x >= x_max) {
        if (static_cast<std::uint32_t>(end - ptr) + 1 + 4 >= limit) return false;
        *--ptr = static_cast<std::uint8_t>(x & 0xffu);
        x >>= 8;
      }
      // x < x_max <= 2^31: q = x / f (RansReciprocal), x % f = x - q * f
      const std::uint32_t q = RansReciprocal{r, w >> 26}.quotient(x);
      x = (q << kRansScaleBits) + (x - q * f) + ((w >> 13) & 0x1fffu);
      return true;
  };
  std::uint32_t i = n;
  for (; i % kLoadAhead; --i)
    if (!put(get(i - 1) - base)) return 0;
  for (; i > 0; i -= kLoadAhead) {
    std::uint32_t d[kLoadAhead];
    QGPU_ENC_UNROLL
    for (std::uint32_t k = 0; k < kLoadAhead; ++k) d[k] = get(i - 1 - k) - base;
    QGPU_ENC_UNROLL
    for (std::uint32_t k = 0; k < kLoadAhead; ++k)
      if (!put(d[k])) return 0;
  }
  if (static_cast<std::uint32_t>(end - ptr) + 4 >= limit) return 0;
  ptr -= 4;
  ptr[0] = static_cast<std::uint8_t>(x);
  ptr[1] = static_cast<std::uint8_t>(x >> 8);
  ptr[2] = static_cast<std::uint8_t>(x >> 16);
  ptr[3] = static_cast<std::uint8_t>(x >> 24);
  const std::uint32_t rans_bytes = static_cast<std::uint32_t>(end - ptr);
  // Header, table and escapes at the front, or (at) just before the rANS bytes (they start after slot, since
  // header + rans_bytes < best).
  std::uint8_t* const out = at ? ptr - header : slot;
  if (at) {
    *at = static_cast<std::uint32_t>(out - slot);
    // The one-byte escapes move from slot + fields up to out + fields = ptr - esc_bytes (last byte first: the
    // regions may overlap, the destination is higher) before the fields below them are written.
    if (one_byte_escapes)
      for (std::uint32_t j = esc_bytes; j-- > 0;) out[fields + j] = slot[fields + j];
  }
  std::uint8_t* p = out;
  *p++ = kRans;
  p = put_varint(p, base);
  *p++ = static_cast<std::uint8_t>(K);
  for (std::uint32_t s = 0; s <= K; ++s) p = put_varint(p, freq[s]);
  p = put_varint(p, esc_bytes);
  if (one_byte_escapes)
    p += esc_bytes;  // already in place
  else if (esc_count)
    for_each_value(get, n, [&](std::uint32_t, std::uint32_t v) {
      const std::uint32_t d = v - base;
      if (d >= K) p = put_varint(p, d - K);
    });
  if (!at)
    for (std::uint32_t j = 0; j < rans_bytes; ++j) p[j] = ptr[j];  // forward copy: p + j < ptr + j
  return header + rans_bytes;
  };
  if (table.col && K + 1 <= table.symbols) return finish(std::true_type{});
  return finish(std::false_type{});
}

// Stores the 32-bit little-endian word x at q (4-byte aligned).
QGPU_HD inline void store_le32(std::uint8_t* q, std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<std::uint32_t*>(q) = x;
#else
  q[0] = static_cast<std::uint8_t>(x);
  q[1] = static_cast<std::uint8_t>(x >> 8);
  q[2] = static_cast<std::uint8_t>(x >> 16);
  q[3] = static_cast<std::uint8_t>(x >> 24);
#endif
}

// The raw model of the n values get(0..n-1) with minimum mn and max - min = range at slot (1 + varint(mn) + 1 +
// ceil(n w / 8) bytes); also calls each(value - mn) at every value, in order. The bits gather in a register and each
// byte is written once, in order (no zeroing pass, no read-modify-write of the stream in memory); once the write
// position is 4-byte aligned, four bytes at a time (a GPU thread's byte stores each took a store instruction to a
// line of its own).
template <class Get, class Each>
QGPU_HD void write_raw(const Get& get, std::uint32_t n, std::uint32_t mn, std::uint32_t range, std::uint8_t* slot,
                       Each&& each) {
  const std::uint32_t w = bit_width(range);
  std::uint8_t* q = slot;
  *q++ = kRaw;
  q = put_varint(q, mn);
  *q++ = static_cast<std::uint8_t>(w);
  std::uint64_t acc = 0;
  std::uint32_t have = 0;  // pending bits: <= 31 before a value is added (w <= 32)
  const auto put = [&](std::uint32_t v) {
    const std::uint32_t d = v - mn;
    each(d);
    acc |= static_cast<std::uint64_t>(d) << have;
    have += w;
    if ((reinterpret_cast<std::uintptr_t>(q) & 3u) == 0) {
      if (have >= 32) {
        store_le32(q, static_cast<std::uint32_t>(acc));
        q += 4;
        acc >>= 32;
        have -= 32;
      }
    } else {
      for (; have >= 8 && (reinterpret_cast<std::uintptr_t>(q) & 3u); have -= 8) {
        *q++ = static_cast<std::uint8_t>(acc);
        acc >>= 8;
      }
    }
  };
  for_each_value(get, n, [&](std::uint32_t, std::uint32_t v) { put(v); });
  for (; have > 0; have = have > 8 ? have - 8 : 0) {
    *q++ = static_cast<std::uint8_t>(acc);
    acc >>= 8;
  }
}

}  // namespace detail

// What one pass over a stream's values tells the encoder: its sum, range, the exact sparse and raw sizes, and
// `bound`, the size the encoded stream cannot exceed (0: the zero model; constant: its size; else the smaller of
// the sparse and raw sizes, since rANS is kept only when smaller). The CUDA encoder reserves `bound` bytes per
// stream from this pass before it encodes.
inline constexpr std::uint32_t kCountedValues = 16;  // StreamStats::counts
struct StreamStats {
  std::uint64_t total = 0;
  // Counts of the values 0..15 (value v: bits 16 (v & 3) .. + 15 of counts[v >> 2]; n <= kMaxTile < 2^16): the rANS
  // histogram when mn = 0 and mx < kCountedValues (the bright-field disk at low dose), without another pass. Only
  // then complete: once a dense chunk's maximum reaches kCountedValues, the pass stops counting.
  std::uint64_t counts[4] = {0, 0, 0, 0};
  std::uint32_t mn = 0, mx = 0, nnz = 0;
  std::uint32_t sparse_total = 0, raw = 0, bound = 0;
};

// Bit helpers for host and device code.
QGPU_HD inline std::uint32_t popcount32(std::uint32_t m) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__popc(m));
#else
  return static_cast<std::uint32_t>(__builtin_popcount(m));
#endif
}
QGPU_HD inline std::uint32_t lowest_bit(std::uint32_t m) {  // m != 0
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__ffs(m) - 1);
#else
  return static_cast<std::uint32_t>(__builtin_ctz(m));
#endif
}

QGPU_HD inline std::uint32_t highest_bit(std::uint32_t m) {  // m != 0
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(31 - __clz(m));
#else
  return static_cast<std::uint32_t>(31 - __builtin_clz(m));
#endif
}

// Which chunks of kStatsAhead values of a stream may hold a nonzero value (chunk c: values c * kStatsAhead ..
// + kStatsAhead - 1): the statistics pass and the sparse model's encoder skip the others without reading them (the
// CUDA encoder's chunks come from the decoder's marks, encoded::ChunkMarks). A chunk said empty must be all zero;
// the last, partial chunk is always read. AllChunks: every chunk is read.
struct AllChunks {
  QGPU_HD bool operator()(std::uint32_t) const { return true; }
};

// v[k] of a chunk by selects (an indexed register array would go to local memory on a GPU).
template <std::uint32_t N>
QGPU_HD inline std::uint32_t pick(const std::uint32_t (&v)[N], std::uint32_t k) {
  std::uint32_t x = v[0];
  QGPU_ENC_UNROLL
  for (std::uint32_t q = 1; q < N; ++q) x = q == k ? v[q] : x;
  return x;
}

// Loads the kStatsAhead values from position i into v; returns the mask of the nonzero ones (bit k: v[k]).
template <class Get>
QGPU_HD inline std::uint32_t load_chunk(const Get& get, std::uint32_t i, std::uint32_t (&v)[detail::kStatsAhead]) {
  std::uint32_t nz = 0;
  QGPU_ENC_UNROLL
  for (std::uint32_t k = 0; k < detail::kStatsAhead; ++k) {
    v[k] = get(i + k);
    nz |= static_cast<std::uint32_t>(v[k] != 0u) << k;
  }
  return nz;
}

// Calls f(i, get(i)) for the nonzero values in order, loading kStatsAhead values at a time (on a GPU a warp loops
// as often as its lane with the most nonzeros in the chunk, not at every position).
template <class Get, class F, class Chunks = AllChunks>
QGPU_HD inline void for_each_nonzero(const Get& get, std::uint32_t n, F&& f, const Chunks& may_hold = Chunks{}) {
  std::uint32_t i = 0;
  for (; i + detail::kStatsAhead <= n; i += detail::kStatsAhead) {
    if (!may_hold(i / detail::kStatsAhead)) continue;
    std::uint32_t v[detail::kStatsAhead];
    const std::uint32_t nz = load_chunk(get, i, v);
    for (std::uint32_t m = nz; m; m &= m - 1) {
      const std::uint32_t k = lowest_bit(m);
      f(i + k, pick(v, k));
    }
  }
  for (; i < n; ++i) {
    const std::uint32_t v = get(i);
    if (v) f(i, v);
  }
}

// At most this many nonzero values in a chunk of kStatsAhead: the statistics pass visits only the nonzero ones.
inline constexpr std::uint32_t kSparseChunk = 4;

// A stream_stats hook that does nothing (the CUDA encoder's hook sums the frame totals across its warp).
// dense(nonzeros): whether a chunk of kStatsAhead values with that many nonzeros is summed as a whole, passed to
// chunk(i, v) (else only the nonzero values are visited, each passed to sparse(i, v); zeros change nothing but the
// zero count and the minimum); the values of the last, partial chunk go to hook(i, v) one by one. A hook with
// collective operations across threads answers for all of them (the CUDA hook: every lane of its tile).
struct NoValueHook {
  QGPU_HD void operator()(std::uint32_t, std::uint32_t) const {}
  QGPU_HD void chunk(std::uint32_t, const std::uint32_t (&)[detail::kStatsAhead]) const {}
  QGPU_HD bool dense(std::uint32_t nonzeros) const { return nonzeros > kSparseChunk; }
  QGPU_HD void sparse(std::uint32_t, std::uint32_t) const {}
};

// Four nibble counts (x < 2^16: count j at bits 4j) as four 16-bit counts (count j at bits 16j).
QGPU_HD inline std::uint64_t spread_nibbles(std::uint32_t x) {
  const std::uint32_t lo = (x & 0xfu) | ((x & 0xf0u) << 12), hi = ((x >> 8) & 0xfu) | ((x & 0xf000u) << 4);
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

// In order over the positions: hook.chunk(i, values) for each dense chunk, hook.sparse(i, value) at the nonzero
// positions of the others, hook(i, value) at the positions of the partial last chunk. Chunks that may_hold says are
// empty are not read (all zero).
template <class Get, class Hook = NoValueHook, class Chunks = AllChunks>
QGPU_HD StreamStats stream_stats(const Get& get, std::uint32_t n, const Hook& hook = Hook{},
                                 const Chunks& may_hold = Chunks{}) {
  std::uint32_t mn = 0xffffffffu, mx = 0, nnz = 0, sparse = 0, zeros = 0;
  std::uint64_t total = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0;  // StreamStats::counts (four registers on a GPU)
  std::uint32_t next = 0;  // position after the previous nonzero
  const auto value = [&](std::uint32_t i, std::uint32_t v) {
    if (v < kCountedValues) {
      const std::uint64_t one = std::uint64_t{1} << (16u * (v & 3u));
      const std::uint32_t q = v >> 2;
      c0 += q == 0 ? one : 0;
      c1 += q == 1 ? one : 0;
      c2 += q == 2 ? one : 0;
      c3 += q == 3 ? one : 0;
    }
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    total += v;
    if (v) {
      const std::uint32_t big = v != 1u;
      sparse += varint_size(((i - next) << 1) | big) + (big ? varint_size(v - 2) : 0);
      ++nnz;
      next = i + 1;
    }
  };
  // As detail::for_each_value, in chunks of kStatsAhead: a chunk with few nonzeros (most streams outside the
  // bright-field disk) visits only those (a loop as long as the most nonzeros of a lane of the warp, instead of the
  // work per value at every position); its zeros are counted at the end. A dense chunk is summed as a whole: the
  // counts of the values 0..15 in nibbles (at most 8 per half chunk), its sparse size from the masks of its nonzero
  // and its >= 2 values (every gap inside the chunk and every value below 130 takes one byte).
  std::uint32_t i = 0;
  for (; i + detail::kStatsAhead <= n; i += detail::kStatsAhead) {
    if (!may_hold(i / detail::kStatsAhead)) {
      zeros += detail::kStatsAhead;
      continue;
    }
    if (i + detail::kReadAhead < n && may_hold((i + detail::kReadAhead) / detail::kStatsAhead))
      detail::read_ahead(get, i + detail::kReadAhead);
    std::uint32_t v[detail::kStatsAhead];
    const std::uint32_t nz = load_chunk(get, i, v);
    const std::uint32_t count = popcount32(nz);
    if (hook.dense(count)) {
      hook.chunk(i, v);
      std::uint32_t cmn = v[0], cmx = v[0], sum = 0, big = 0, lo = 0, hi = 0;
      QGPU_ENC_UNROLL
      for (std::uint32_t k = 0; k < detail::kStatsAhead; ++k) {
        const std::uint32_t x = v[k];
        cmn = x < cmn ? x : cmn;
        cmx = x > cmx ? x : cmx;
        sum += x;  // wraps only for values >= 2^28 (then summed again below)
        big |= (x >= 2u ? 1u : 0u) << k;
      }
      mn = cmn < mn ? cmn : mn;
      mx = cmx > mx ? cmx : mx;
      // The counts matter only while the stream's maximum stays below kCountedValues (at medium and high dose the
      // bright-field streams pass it in their first chunk and skip the counting's dozen instructions per value).
      if (mx < kCountedValues) {
        QGPU_ENC_UNROLL
        for (std::uint32_t k = 0; k < detail::kStatsAhead; ++k) {
          const std::uint32_t x = v[k];
          lo += x < 8u ? 1u << (4u * (x & 7u)) : 0u;
          hi += x - 8u < 8u ? 1u << (4u * (x & 7u)) : 0u;
          if (k % 8 == 7) {  // nibble counts of 8 values: into the 16-bit counts
            c0 += spread_nibbles(lo & 0xffffu);
            c1 += spread_nibbles(lo >> 16);
            c2 += spread_nibbles(hi & 0xffffu);
            c3 += spread_nibbles(hi >> 16);
            lo = hi = 0;
          }
        }
      }
      if (cmx < (1u << 28)) {
        total += sum;
      } else {
        QGPU_ENC_UNROLL
        for (std::uint32_t k = 0; k < detail::kStatsAhead; ++k) total += v[k];
      }
      if (nz) {
        const std::uint32_t k0 = lowest_bit(nz);
        // the first nonzero's gap code, one byte for each other one, a value byte for each value >= 2
        sparse += varint_size(((i + k0 - next) << 1) | ((big >> k0) & 1u)) + count - 1 + popcount32(big);
        if (cmx >= 130u)  // values of two or more varint bytes
          for (std::uint32_t m = big; m; m &= m - 1) sparse += varint_size(pick(v, lowest_bit(m)) - 2) - 1;
        nnz += count;
        next = i + highest_bit(nz) + 1;
      }
      continue;
    }
    zeros += detail::kStatsAhead - count;
    for (std::uint32_t m = nz; m; m &= m - 1) {
      const std::uint32_t k = lowest_bit(m), vk = pick(v, k);
      hook.sparse(i + k, vk);
      value(i + k, vk);
    }
  }
  for (; i < n; ++i) {
    const std::uint32_t v = get(i);
    hook(i, v);
    value(i, v);
  }
  if (zeros) {  // zeros <= n <= kMaxTile: the zero count stays within its 16 bits
    c0 += zeros;
    mn = 0;
  }
  StreamStats st;
  st.total = total;
  st.counts[0] = c0;
  st.counts[1] = c1;
  st.counts[2] = c2;
  st.counts[3] = c3;
  st.mn = mn;
  st.mx = mx;
  st.nnz = nnz;
  if (n == 0 || mx == 0) return st;  // the zero model: bound 0
  if (mn == mx) {
    st.bound = 1 + varint_size(mx);
    return st;
  }
  const std::uint32_t w = bit_width(mx - mn);
  const std::uint32_t packed = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * w + 7) / 8);
  st.raw = 1 + varint_size(mn) + 1 + packed;
  st.sparse_total = 1 + varint_size(nnz) + sparse;
  st.bound = st.sparse_total < st.raw ? st.sparse_total : st.raw;
  return st;
}

// Encodes the n values get(0..n-1) (n <= kMaxTile), whose stream_stats are st, into slot (at least st.bound
// bytes); returns the stream size (0 for an all-zero stream, <= st.bound). at: null, the stream starts at slot;
// else it starts at slot + *at (a rANS stream is left where it was built, see try_rans; at + size <= st.bound).
// table: where the rANS trial keeps its symbol words (detail::RansTableSlot; the bytes do not depend on it).
// may_hold: the chunks that may hold a nonzero value (as for stream_stats); the sparse model skips the others.
template <class Get, class Chunks = AllChunks>
QGPU_HD std::uint32_t encode_stream_with(const StreamStats& st, const Get& get, std::uint32_t n, std::uint8_t* slot,
                                         std::uint32_t* at = nullptr, detail::RansTableSlot table = {},
                                         const Chunks& may_hold = Chunks{}, Policy policy = Policy::compact) {
  if (at) *at = 0;
  if (st.bound == 0) return 0;  // the zero model: an empty stream
  if (st.mn == st.mx) {
    slot[0] = kConstant;
    return static_cast<std::uint32_t>(put_varint(slot + 1, st.mx) - slot);
  }
  // rANS is kept when smaller than best: compact, the smaller of sparse and raw; fast, also at most
  // kFastRansNum / kFastRansDen of raw, with an alphabet of at most kFastMaxAlphabet (format.hpp: Policy).
  std::uint32_t best = st.bound, max_k = kMaxAlphabet;
  if (policy == Policy::fast) {
    const std::uint32_t fast_best =
        static_cast<std::uint32_t>(static_cast<std::uint64_t>(st.raw) * kFastRansNum / kFastRansDen) + 1;
    best = fast_best < best ? fast_best : best;
    max_k = kFastMaxAlphabet;
  }
  const bool rans = best > detail::rans_size_floor(st.mn);
  const std::uint64_t* const counts16 = st.mn == 0 && st.mx < kCountedValues ? st.counts : nullptr;
  const std::uint32_t range = st.mx - st.mn;
  // Where raw is the fallback and the rANS trial would read the values before its encoding pass (its window count
  // or its histogram), the raw pass gathers that too and the trial follows it (most such streams then end there: at
  // high dose rANS loses at the window count or the information floor); else the trial comes first.
  if (rans && (counts16 || st.sparse_total < st.raw))
    if (const std::uint32_t r = detail::try_rans(get, n, st.mn, range, slot, best, counts16, at, table, max_k))
      return r;
  std::uint8_t* p = slot;
  if (st.sparse_total < st.raw) {
    *p++ = kSparse;
    p = put_varint(p, st.nnz);
    std::uint32_t after = 0;
    for_each_nonzero(get, n, [&](std::uint32_t i, std::uint32_t v) {
      const std::uint32_t big = v != 1u;
      p = put_varint(p, ((i - after) << 1) | big);
      if (big) p = put_varint(p, v - 2);
      after = i + 1;
    }, may_hold);
    return static_cast<std::uint32_t>(p - slot);
  }
  // One raw pass for every raw stream, counting on the way what the trial after it needs (none where the trial came
  // first or is not made; the window count or the histogram): one loop for all of them, so that the lanes of a GPU
  // warp whose streams differ here run it together (with a loop per case, a bright-field warp at 2e4 counts per
  // frame, its streams' maxima either side of kCountedValues, ran the raw loop twice: s27a).
  const bool count_after = rans && !counts16;
  detail::RansPrecount pre;
  std::uint32_t window_c = 0;
  if (count_after) {
    pre.window = detail::rans_window_test(range, max_k);
    if (pre.window)
      window_c = detail::widest_alphabet(max_k);
    else
      pre.hist.start(table, range < kMaxAlphabet ? range + 1 : kMaxAlphabet, pre.own);
  }
  const int counting = !count_after ? 0 : pre.window ? 1 : 2;
  const detail::RansHistogram h = pre.hist;  // (a copy of the pointers: registers, not pre's frame)
  std::uint32_t inside = 0;
  detail::write_raw(get, n, st.mn, range, slot, [h, counting, window_c, &inside](std::uint32_t d) {
    if (counting == 1)
      inside += d < window_c ? 1u : 0u;
    else if (counting == 2)
      h.add(d);
  });
  if (!count_after) return st.raw;
  pre.inside = inside;
  bool wrote = false;
  if (const std::uint32_t r =
          detail::try_rans(get, n, st.mn, range, slot, best, nullptr, at, table, max_k, &pre, &wrote))
    return r;
  if (wrote) detail::write_raw(get, n, st.mn, range, slot, [](std::uint32_t) {});  // the trial wrote over it
  return st.raw;
}

// Encodes the n values get(0..n-1) (n <= kMaxTile) into slot (stream_slot_bytes(n) bytes); returns the stream
// size (0 for an all-zero stream) and stores the values' sum in *sum.
template <class Get>
QGPU_HD std::uint32_t encode_stream(const Get& get, std::uint32_t n, std::uint8_t* slot, std::uint64_t* sum,
                                    Policy policy = Policy::compact) {
  const StreamStats st = stream_stats(get, n);
  *sum = st.total;
  return encode_stream_with(st, get, n, slot, nullptr, {}, AllChunks{}, policy);
}

// The encoder's final state lies in [kRansL, kRansL << 8); a stream starting elsewhere is malformed (and decoding
// it could need an unbounded number of renormalisation bytes per symbol). Within that range every decoding step
// keeps the state below 2^31 and at least 2^11, so at most two bytes renormalise it.
QGPU_HD inline bool rans_state_ok(std::uint32_t x) { return x >= kRansL && x < (kRansL << 8); }

// Decodes the stream s (size bytes) of n values and calls put(i, value) for every nonzero value at positions
// first <= i < last, in increasing i. Returns false when the stream is malformed (then some puts may have run).
template <class Put>
QGPU_HD bool decode_stream(const std::uint8_t* s, std::uint32_t size, std::uint32_t n, std::uint32_t first,
                           std::uint32_t last, Put&& put) {
  if (last > n) last = n;
  if (size == 0) return true;  // zero model
  ByteReader rd{s, s + size};
  const std::uint8_t model = rd.byte();
  if (!rd.ok) return false;
  switch (model) {
    case kConstant: {
      const std::uint32_t v = rd.varint();
      if (!rd.ok) return false;
      if (v)
        for (std::uint32_t i = first; i < last; ++i) put(i, v);
      return true;
    }
    case kSparse: {
      const std::uint32_t m = rd.varint();
      std::uint32_t pos = 0;  // position after the previous nonzero
      for (std::uint32_t j = 0; j < m && rd.ok; ++j) {
        const std::uint32_t code = rd.varint();
        const std::uint32_t v = (code & 1u) ? rd.varint() + 2 : 1u;
        const std::uint32_t i = pos + (code >> 1);
        if (!rd.ok || i >= n || i < pos) return false;
        if (i >= last) return true;
        if (i >= first) put(i, v);
        pos = i + 1;
      }
      return rd.ok;
    }
    case kRaw: {
      const std::uint32_t base = rd.varint();
      const std::uint32_t w = rd.byte();
      if (!rd.ok || w > 32) return false;
      const std::uint64_t packed = (static_cast<std::uint64_t>(n) * w + 7) / 8;
      if (static_cast<std::uint64_t>(rd.end - rd.p) < packed) return false;
      const std::uint64_t mask = (1ull << w) - 1;
      for (std::uint32_t i = first; i < last; ++i) {
        const std::uint64_t bit = static_cast<std::uint64_t>(i) * w;
        const std::uint32_t nb = static_cast<std::uint32_t>(((bit & 7u) + w + 7) / 8);
        std::uint64_t acc = 0;
        for (std::uint32_t k = 0; k < nb; ++k) acc |= static_cast<std::uint64_t>(rd.p[(bit >> 3) + k]) << (8 * k);
        const std::uint32_t v = base + static_cast<std::uint32_t>((acc >> (bit & 7u)) & mask);
        if (v) put(i, v);
      }
      return true;
    }
    case kRans: {
      const std::uint32_t base = rd.varint();
      const std::uint32_t K = rd.byte();
      if (!rd.ok || K < 1 || K > kMaxAlphabet) return false;
      std::uint16_t cum[kMaxAlphabet + 2];
      cum[0] = 0;
      for (std::uint32_t s = 0; s <= K; ++s) {
        const std::uint32_t f = rd.varint();
        if (!rd.ok || f > kRansScale - cum[s]) return false;
        cum[s + 1] = static_cast<std::uint16_t>(cum[s] + f);
      }
      if (cum[K + 1] != kRansScale) return false;
      const std::uint32_t esc_bytes = rd.varint();
      if (!rd.ok || static_cast<std::uint64_t>(rd.end - rd.p) < esc_bytes) return false;
      ByteReader esc{rd.p, rd.p + esc_bytes};
      rd.p += esc_bytes;
      std::uint32_t x = 0;
      for (std::uint32_t k = 0; k < 4; ++k) x |= static_cast<std::uint32_t>(rd.byte()) << (8 * k);
      if (!rd.ok || !rans_state_ok(x)) return false;
      std::uint8_t lut[detail::kRansLut];
      detail::build_rans_lut(cum, lut);
      for (std::uint32_t i = 0; i < last; ++i) {
        const std::uint32_t slot = x & (kRansScale - 1);
        std::uint32_t sym = lut[slot >> detail::kRansLutShift];
        while (cum[sym + 1] <= slot) ++sym;
        x = static_cast<std::uint32_t>(cum[sym + 1] - cum[sym]) * (x >> kRansScaleBits) + slot - cum[sym];
        while (x < kRansL) x = (x << 8) | rd.byte();
        const std::uint32_t v = sym < K ? base + sym : base + K + esc.varint();
        if (!rd.ok || !esc.ok) return false;
        if (i >= first && v) put(i, v);
      }
      return true;
    }
    default: return false;
  }
}


// Where a StreamCursor keeps its rANS tables (cumulative frequencies and the coarse slot -> symbol table).
// LocalTables: arrays in the cursor, any alphabet.
struct LocalTables {
  static constexpr std::uint32_t kMaxK = kMaxAlphabet;
  std::uint16_t c[kMaxAlphabet + 2];
  std::uint8_t l[detail::kRansLut];
  QGPU_HD std::uint32_t cum(std::uint32_t s) const { return c[s]; }
  QGPU_HD void set_cum(std::uint32_t s, std::uint32_t v) { c[s] = static_cast<std::uint16_t>(v); }
  QGPU_HD std::uint32_t lut(std::uint32_t j) const { return l[j]; }
  QGPU_HD void set_lut(std::uint32_t j, std::uint32_t v) { l[j] = static_cast<std::uint8_t>(v); }
};
// StridedTables: kWords 32-bit words at col[0], col[stride], col[2 * stride], ... (on the GPU one column of a
// per-warp shared-memory array, stride 32: every lane reads its own bank). Alphabets up to kMaxK symbols + escape.
struct StridedTables {
  static constexpr std::uint32_t kMaxK = 30;                    // cum[0..K+1]: 32 uint16 in 16 words
  static constexpr std::uint32_t kCumWords = (kMaxK + 2) / 2;
  static constexpr std::uint32_t kWords = kCumWords + detail::kRansLut / 4;  // + 32 lut bytes in 8 words
  std::uint32_t* col = nullptr;
  std::uint32_t stride = 32;
  QGPU_HD std::uint32_t cum(std::uint32_t s) const { return (col[(s >> 1) * stride] >> ((s & 1u) * 16)) & 0xffffu; }
  QGPU_HD void set_cum(std::uint32_t s, std::uint32_t v) {
    std::uint32_t& w = col[(s >> 1) * stride];
    const std::uint32_t sh = (s & 1u) * 16;
    w = (w & ~(0xffffu << sh)) | (v << sh);
  }
  QGPU_HD std::uint32_t lut(std::uint32_t j) const {
    return (col[(kCumWords + (j >> 2)) * stride] >> ((j & 3u) * 8)) & 0xffu;
  }
  QGPU_HD void set_lut(std::uint32_t j, std::uint32_t v) {
    std::uint32_t& w = col[(kCumWords + (j >> 2)) * stride];
    const std::uint32_t sh = (j & 3u) * 8;
    w = (w & ~(0xffu << sh)) | (v << sh);
  }
};

// The alphabet K of a rANS stream (its escape symbol), 0 when the stream is not rANS or its header is cut short.
QGPU_HD inline std::uint32_t rans_alphabet(const std::uint8_t* s, std::uint32_t size) {
  ByteReader rd{s, s + size};
  if (rd.byte() != kRans) return 0;
  rd.varint();
  const std::uint32_t K = rd.byte();
  return rd.ok ? K : 0;
}

// The same decoder as decode_stream, one value per call of next() (positions 0, 1, ... n - 1, zeros included), so
// that a GPU warp can decode 32 streams in lockstep and sum each scan position across them without atomics.
// open() parses the header; next() returns 0 once the stream is exhausted or malformed, and ok turns false on any
// malformation decode_stream would report (bad model byte, truncation, positions past n, bad frequency table), and
// on a rANS alphabet larger than the tables hold (Tables::kMaxK).
template <class Tables = LocalTables>
struct StreamCursor {
  std::uint8_t model = kZero;
  bool ok = true;
  std::uint32_t n = 0, i = 0;  // values in the stream, next position
  std::uint32_t base = 0;      // constant: the value; raw, rANS: the base
  std::uint32_t w = 0;         // raw: bit width
  std::uint32_t K = 0, x = 0;  // rANS: escape symbol, state
  std::uint32_t left = 0, next_i = 0, next_v = 0;  // sparse: nonzeros not yet read, the pending nonzero
  ByteReader rd{nullptr, nullptr};   // sparse entries, raw bits (rd.p), rANS renormalisation bytes
  ByteReader esc{nullptr, nullptr};  // rANS escapes
  Tables tab;

  QGPU_HD bool open(const std::uint8_t* s, std::uint32_t size, std::uint32_t count) {
    n = count;
    i = 0;
    ok = true;
    model = kZero;
    if (size == 0) return true;
    rd = ByteReader{s, s + size};
    model = rd.byte();
    switch (model) {
      case kConstant: base = rd.varint(); break;
      case kSparse:
        left = rd.varint();
        next_i = 0;
        read_sparse();
        break;
      case kRaw:
        base = rd.varint();
        w = rd.byte();
        if (rd.ok && (w > 32 || static_cast<std::uint64_t>(rd.end - rd.p) < (static_cast<std::uint64_t>(n) * w + 7) / 8))
          ok = false;
        break;
      case kRans: {
        base = rd.varint();
        K = rd.byte();
        if (!rd.ok || K < 1 || K > kMaxAlphabet || K > Tables::kMaxK) {
          ok = false;
          break;
        }
        std::uint32_t c = 0;
        tab.set_cum(0, 0);
        for (std::uint32_t s2 = 0; s2 <= K; ++s2) {
          const std::uint32_t f = rd.varint();
          if (!rd.ok || f > kRansScale - c) {
            ok = false;
            break;
          }
          c += f;
          tab.set_cum(s2 + 1, c);
        }
        if (!ok || c != kRansScale) {
          ok = false;
          break;
        }
        const std::uint32_t esc_bytes = rd.varint();
        if (!rd.ok || static_cast<std::uint64_t>(rd.end - rd.p) < esc_bytes) {
          ok = false;
          break;
        }
        esc = ByteReader{rd.p, rd.p + esc_bytes};
        rd.p += esc_bytes;
        x = 0;
        for (std::uint32_t k = 0; k < 4; ++k) x |= static_cast<std::uint32_t>(rd.byte()) << (8 * k);
        if (!rans_state_ok(x)) {
          ok = false;
          break;
        }
        std::uint32_t sym = 0;  // the coarse table, as detail::build_rans_lut
        for (std::uint32_t j = 0; j < detail::kRansLut; ++j) {
          while (tab.cum(sym + 1) <= (j << detail::kRansLutShift)) ++sym;
          tab.set_lut(j, sym);
        }
        break;
      }
      default: ok = false;
    }
    if (!rd.ok) ok = false;
    if (!ok) model = kZero;
    return ok;
  }

  QGPU_HD std::uint32_t next() {
    const std::uint32_t at = i++;
    if (at >= n) return 0;
    switch (model) {
      case kConstant: return base;
      case kSparse: {
        if (!left || at != next_i) return 0;
        const std::uint32_t v = next_v;
        --left;
        next_i = at + 1;
        read_sparse();
        return v;
      }
      case kRaw: {
        const std::uint64_t bit = static_cast<std::uint64_t>(at) * w;
        const std::uint32_t nb = static_cast<std::uint32_t>(((bit & 7u) + w + 7) / 8);
        std::uint64_t acc = 0;
        for (std::uint32_t k = 0; k < nb; ++k) acc |= static_cast<std::uint64_t>(rd.p[(bit >> 3) + k]) << (8 * k);
        const std::uint64_t mask = (1ull << w) - 1;
        return base + static_cast<std::uint32_t>((acc >> (bit & 7u)) & mask);
      }
      case kRans: {
        const std::uint32_t slot = x & (kRansScale - 1);
        std::uint32_t sym = tab.lut(slot >> detail::kRansLutShift);
        std::uint32_t hi = tab.cum(sym + 1);
        while (hi <= slot) hi = tab.cum(++sym + 1);
        const std::uint32_t lo = tab.cum(sym);
        x = (hi - lo) * (x >> kRansScaleBits) + slot - lo;
        while (x < kRansL) x = (x << 8) | rd.byte();
        const std::uint32_t v = sym < K ? base + sym : base + K + esc.varint();
        if (!rd.ok || !esc.ok) {
          ok = false;
          model = kZero;
          return 0;
        }
        return v;
      }
      default: return 0;
    }
  }

 private:
  // Reads the next sparse entry (when one is left) into next_i/next_v; next_i holds the position after the
  // previous nonzero on entry.
  QGPU_HD void read_sparse() {
    if (!left) return;
    const std::uint32_t code = rd.varint();
    const std::uint32_t v = (code & 1u) ? rd.varint() + 2 : 1u;
    const std::uint32_t at = next_i + (code >> 1);
    if (!rd.ok || at >= n || at < next_i) {
      ok = false;
      model = kZero;
      left = 0;
      return;
    }
    next_i = at;
    next_v = v;
  }
};

}  // namespace qgpu::encoded
