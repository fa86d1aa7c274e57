#pragma once
// A frozen copy of the encoded-v1 stream encoder as it was before the encoder was split into a statistics pass and
// an encode pass for the GPU (2026-12-03): the tests compare today's encoder with it byte for byte, so that any
// change to the shared encoder that would change the format fails a test.
#include <cstdint>

#include "resident/encoded/format.hpp"

namespace qgpu::test::v1_oracle {

using namespace qgpu::encoded;

namespace detail {

// Normalises symbol counts (total n > 0) to frequencies summing to kRansScale; every present symbol keeps >= 1.
inline void normalise_frequencies(const std::uint16_t* counts, std::uint32_t symbols, std::uint32_t n,
                                          std::uint16_t* freq) {
  std::uint32_t sum = 0, largest = 0;
  for (std::uint32_t s = 0; s < symbols; ++s) {
    freq[s] = static_cast<std::uint16_t>(
        counts[s] == 0 ? 0u : (static_cast<std::uint32_t>(counts[s]) * kRansScale) / n);
    if (counts[s] && freq[s] == 0) freq[s] = 1;
    sum += freq[s];
    if (counts[s] > counts[largest]) largest = s;
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

// Tries the rANS model; writes the stream to slot and returns its size when smaller than `best`, else 0.
template <class Get>
std::uint32_t try_rans(const Get& get, std::uint32_t n, std::uint32_t base, std::uint32_t range,
                               std::uint8_t* slot, std::uint32_t slot_bytes, std::uint32_t best) {
  std::uint16_t hist[kMaxAlphabet + 1];  // counts <= n <= kMaxTile fit 16 bits
  for (std::uint32_t s = 0; s <= kMaxAlphabet; ++s) hist[s] = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t d = get(i) - base;
    ++hist[d < kMaxAlphabet ? d : kMaxAlphabet];
  }
  // Alphabet: the smallest candidate K that covers the range, or leaves at most n/32 values escaped.
  const std::uint32_t candidates[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
  // Values escaped by alphabet c: n minus the values below c (a running prefix sum over the histogram, so each
  // bin is read once).
  std::uint32_t K = kMaxAlphabet, below = 0, counted = 0;  // below = hist[0] + ... + hist[counted - 1]
  for (std::uint32_t c : candidates) {
    if (c > range) {
      K = range + 1;
      break;
    }
    while (counted < c) below += hist[counted++];
    if ((n - below) * 32u <= n) {
      K = c;
      break;
    }
  }
  while (counted < K) below += hist[counted++];
  const std::uint32_t esc_count = n - below;
  hist[K] = static_cast<std::uint16_t>(esc_count);
  std::uint16_t freq[kMaxAlphabet + 1], cum[kMaxAlphabet + 2];
  normalise_frequencies(hist, K + 1, n, freq);
  cum[0] = 0;
  std::uint32_t table = 0;
  for (std::uint32_t s = 0; s <= K; ++s) {
    cum[s + 1] = static_cast<std::uint16_t>(cum[s] + freq[s]);
    table += varint_size(freq[s]);
  }
  std::uint32_t esc_bytes = 0;
  if (esc_count)
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t d = get(i) - base;
      if (d >= K) esc_bytes += varint_size(d - K);
    }
  const std::uint64_t header64 =
      1ull + varint_size(base) + 1 + table + varint_size(esc_bytes) + static_cast<std::uint64_t>(esc_bytes);
  if (header64 + 4 >= best) return 0;
  const std::uint32_t header = static_cast<std::uint32_t>(header64);
  const std::uint32_t limit = best - header;  // the rANS bytes must stay below this for rANS to win
  std::uint8_t* const end = slot + slot_bytes;
  std::uint8_t* ptr = end;
  std::uint32_t x = kRansL;
  for (std::uint32_t i = n; i-- > 0;) {
    const std::uint32_t d = get(i) - base;
    const std::uint32_t s = d < K ? d : K;
    const std::uint32_t f = freq[s];
    const std::uint32_t x_max = ((kRansL >> kRansScaleBits) << 8) * f;
    while (x >= x_max) {
      if (static_cast<std::uint32_t>(end - ptr) + 1 + 4 >= limit) return 0;
      *--ptr = static_cast<std::uint8_t>(x & 0xffu);
      x >>= 8;
    }
    x = ((x / f) << kRansScaleBits) + (x % f) + cum[s];
  }
  if (static_cast<std::uint32_t>(end - ptr) + 4 >= limit) return 0;
  ptr -= 4;
  ptr[0] = static_cast<std::uint8_t>(x);
  ptr[1] = static_cast<std::uint8_t>(x >> 8);
  ptr[2] = static_cast<std::uint8_t>(x >> 16);
  ptr[3] = static_cast<std::uint8_t>(x >> 24);
  const std::uint32_t rans_bytes = static_cast<std::uint32_t>(end - ptr);
  // Header, table and escapes at the front (they end before ptr, since header + rans_bytes < best <= slot_bytes).
  std::uint8_t* p = slot;
  *p++ = kRans;
  p = put_varint(p, base);
  *p++ = static_cast<std::uint8_t>(K);
  for (std::uint32_t s = 0; s <= K; ++s) p = put_varint(p, freq[s]);
  p = put_varint(p, esc_bytes);
  if (esc_count)
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t d = get(i) - base;
      if (d >= K) p = put_varint(p, d - K);
    }
  for (std::uint32_t j = 0; j < rans_bytes; ++j) p[j] = ptr[j];  // forward copy: p + j < ptr + j
  return header + rans_bytes;
}

}  // namespace detail

// Encodes the n values get(0..n-1) (n <= kMaxTile) into slot (stream_slot_bytes(n) bytes); returns the stream
// size (0 for an all-zero stream) and stores the values' sum in *sum.
template <class Get>
std::uint32_t encode_stream(const Get& get, std::uint32_t n, std::uint8_t* slot, std::uint64_t* sum) {
  std::uint32_t mn = 0xffffffffu, mx = 0, nnz = 0, sparse = 0;
  std::uint64_t total = 0;
  std::uint32_t next = 0;  // position after the previous nonzero
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t v = get(i);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    total += v;
    if (v) {
      const std::uint32_t big = v != 1u;
      sparse += varint_size(((i - next) << 1) | big) + (big ? varint_size(v - 2) : 0);
      ++nnz;
      next = i + 1;
    }
  }
  *sum = total;
  if (n == 0 || mx == 0) return 0;  // the zero model: an empty stream
  if (mn == mx) {
    slot[0] = kConstant;
    return static_cast<std::uint32_t>(put_varint(slot + 1, mx) - slot);
  }
  const std::uint32_t w = bit_width(mx - mn);
  const std::uint32_t packed = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * w + 7) / 8);
  const std::uint32_t raw = 1 + varint_size(mn) + 1 + packed;
  const std::uint32_t sparse_total = 1 + varint_size(nnz) + sparse;
  const std::uint32_t best = sparse_total < raw ? sparse_total : raw;
  if (const std::uint32_t r = detail::try_rans(get, n, mn, mx - mn, slot, stream_slot_bytes(n), best)) return r;
  std::uint8_t* p = slot;
  if (sparse_total < raw) {
    *p++ = kSparse;
    p = put_varint(p, nnz);
    std::uint32_t after = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t v = get(i);
      if (!v) continue;
      const std::uint32_t big = v != 1u;
      p = put_varint(p, ((i - after) << 1) | big);
      if (big) p = put_varint(p, v - 2);
      after = i + 1;
    }
    return static_cast<std::uint32_t>(p - slot);
  }
  *p++ = kRaw;
  p = put_varint(p, mn);
  *p++ = static_cast<std::uint8_t>(w);
  for (std::uint32_t j = 0; j < packed; ++j) p[j] = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t bit = static_cast<std::uint64_t>(i) * w;
    const std::uint64_t acc = static_cast<std::uint64_t>(get(i) - mn) << (bit & 7u);
    const std::uint32_t nb = static_cast<std::uint32_t>(((bit & 7u) + w + 7) / 8);
    for (std::uint32_t k = 0; k < nb; ++k) p[(bit >> 3) + k] |= static_cast<std::uint8_t>(acc >> (8 * k));
  }
  return raw;
}

}  // namespace qgpu::test::v1_oracle
