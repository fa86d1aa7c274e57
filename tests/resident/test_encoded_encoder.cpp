// The shared encoded-v1 stream encoder (stream_codec.hpp, run by the CPU reference and the CUDA encoders): the same
// bytes as the frozen first encoder (encoded_v1_oracle.hpp) for every kind of stream, and the facts the CUDA
// encoder's compact scratch relies on: a stream never exceeds its statistics' bound, nor the bound the scratch is
// sized by (also for a stream left where it was built, as the CUDA encoder has it), the rANS size floor that lets the
// encoder skip the rANS trial is a floor, and the rANS encoder's reciprocal division is the division.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "encoded_v1_oracle.hpp"
#include "resident/encoded/cuda/encode_kernels.hpp"
#include "resident/encoded/live_groups.hpp"
#include "resident/encoded/stream_codec.hpp"

using namespace qgpu;
using namespace qgpu::encoded;

namespace {

// A stream of n values no larger than mx, drawn from distribution `kind`.
std::vector<std::uint32_t> make_stream(int kind, std::uint32_t n, std::uint32_t mx, std::mt19937_64& rng) {
  std::vector<std::uint32_t> v(n, 0);
  std::uniform_int_distribution<std::uint32_t> any(0, mx);
  std::poisson_distribution<std::uint32_t> small(1.5), mid(12.0), large(800.0);
  std::bernoulli_distribution rare(0.01), some(0.1), half(0.5);
  const std::uint32_t c = std::max<std::uint32_t>(1, any(rng));
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t x = 0;
    switch (kind) {
      case 0: x = 0; break;                                          // all zero
      case 1: x = c; break;                                          // constant
      case 2: x = mx; break;                                         // saturated
      case 3: x = rare(rng) ? 1u : 0u; break;                        // sparse ones (long gaps)
      case 4: x = rare(rng) ? any(rng) : 0u; break;                  // sparse, any value
      case 5: x = some(rng) ? (half(rng) ? 1u : 2u + small(rng)) : 0u; break;  // sparse, short gaps
      case 6: x = small(rng); break;                                 // Poisson 1.5
      case 7: x = mid(rng); break;                                   // Poisson 12 (rANS, larger alphabets)
      case 8: x = large(rng); break;                                 // Poisson 800 (raw or rANS with a base)
      case 9: x = any(rng); break;                                   // full range (raw)
      case 10: x = half(rng) ? mx : 0u; break;                       // zero or saturated
      case 11: x = small(rng) + (rare(rng) ? mx / 2 : 0u); break;    // Poisson with outliers (escapes)
      case 12: x = mx - (rare(rng) ? 1u : 0u); break;                // saturated with rare dips (large base)
      case 13: x = 1000u + small(rng); break;                        // offset Poisson (base > 0)
      case 14: x = i % 200u; break;                                  // a ramp over 200 values (K = 128 escapes)
      case 15: x = (i == n - 1) ? mx : 0u; break;                    // one value at the end
    }
    v[i] = std::min(x, mx);
  }
  return v;
}

constexpr int kKinds = 16;
const std::uint32_t kLengths[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 511, 512, 1000, 4096};
const std::uint32_t kMax[] = {0xffu, 0xffffu, 0xffffffffu};
const std::size_t kElem[] = {1, 2, 4};

// Every stream of make_stream's kinds (4 of each dtype, length and kind, drawn from `seed`) that is neither zero nor
// constant, with its statistics and its rANS stream built without a size limit: f(what, n, values, stats, stream,
// size).
template <class F>
void for_each_rans_stream(std::uint64_t seed, F&& f) {
  std::mt19937_64 rng(seed);
  for (int d = 0; d < 3; ++d)
    for (std::uint32_t n : kLengths)
      for (int kind = 0; kind < kKinds; ++kind)
        for (int rep = 0; rep < 4; ++rep) {
          const std::vector<std::uint32_t> v = make_stream(kind, n, kMax[d], rng);
          const auto get = [&](std::uint32_t i) { return v[i]; };
          const StreamStats st = stream_stats(get, n);
          if (st.bound == 0 || st.mn == st.mx) continue;
          const std::uint32_t unlimited = 16 * n + 1024;
          std::vector<std::uint8_t> slot(unlimited);
          const std::uint32_t r = detail::try_rans(get, n, st.mn, st.mx - st.mn, slot.data(), unlimited);
          const std::string what =
              "dtype " + std::to_string(d) + " n " + std::to_string(n) + " kind " + std::to_string(kind);
          ASSERT_GT(r, 0u) << what;
          f(what, n, v, st, slot.data(), r);
        }
}

}  // namespace

TEST(EncodedEncoder, SameBytesAsTheFrozenFirstEncoder) {
  std::mt19937_64 rng(42);
  std::size_t streams = 0, by_model[5] = {};
  for (int d = 0; d < 3; ++d)
    for (std::uint32_t n : kLengths)
      for (int kind = 0; kind < kKinds; ++kind)
        for (int rep = 0; rep < (n <= 512 ? 3 : 1); ++rep) {
          const std::vector<std::uint32_t> v = make_stream(kind, n, kMax[d], rng);
          const auto get = [&](std::uint32_t i) { return v[i]; };
          std::vector<std::uint8_t> a(stream_slot_bytes(n)), b(stream_slot_bytes(n));
          std::uint64_t sa = 1, sb = 2;
          const std::uint32_t na = encode_stream(get, n, a.data(), &sa);
          const std::uint32_t nb = test::v1_oracle::encode_stream(get, n, b.data(), &sb);
          ASSERT_EQ(na, nb) << "dtype " << d << " n " << n << " kind " << kind;
          ASSERT_TRUE(std::equal(a.begin(), a.begin() + na, b.begin())) << "dtype " << d << " n " << n << " kind " << kind;
          ASSERT_EQ(sa, sb);
          ++streams;
          ++by_model[na ? a[0] : 0];
        }
  // Every model was exercised.
  for (int m = 0; m < 5; ++m) EXPECT_GT(by_model[m], 0u) << "model " << m;
  EXPECT_GT(streams, 2000u);
}

namespace {

// Kinds beyond make_stream's, for the statistics pass's chunks of 16: dense bursts of 16..48 values after zero runs
// of 64..300 positions (a first gap of a two-byte code), dense values around 130 (two-byte sparse values), dense
// values near 2^28 and 2^32 (the chunk sum in 64 bits), and every 16-chunk either all zero or all nonzero.
std::vector<std::uint32_t> make_chunky_stream(int kind, std::uint32_t n, std::uint32_t mx, std::mt19937_64& rng) {
  std::vector<std::uint32_t> v(n, 0);
  std::poisson_distribution<std::uint32_t> small(2.0);
  std::uniform_int_distribution<std::uint32_t> gap(64, 300), burst(16, 48), near(120, 140), coin(0, 1);
  std::uint32_t i = gap(rng) % (n + 1);
  switch (kind) {
    case 0:
      while (i < n) {
        for (std::uint32_t e = std::min(n, i + burst(rng)); i < e; ++i) v[i] = small(rng);
        i += gap(rng);
      }
      break;
    case 1:
      for (auto& x : v) x = coin(rng) ? near(rng) : small(rng);
      break;
    case 2:
      for (auto& x : v) x = coin(rng) ? mx - small(rng) : (mx >> 4) + small(rng);
      break;
    case 3:
      for (std::uint32_t j = 0; j < n; ++j) v[j] = (j / 16) % 3 == 1 ? 1 + small(rng) : 0u;
      break;
  }
  for (auto& x : v) x = std::min(x, mx);
  return v;
}

// The statistics of a stream computed value by value, as their definition reads (StreamStats).
StreamStats naive_stats(const std::vector<std::uint32_t>& v) {
  StreamStats st;
  const auto n = static_cast<std::uint32_t>(v.size());
  std::uint32_t mn = 0xffffffffu, mx = 0, nnz = 0, sparse = 0, next = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t x = v[i];
    if (x < kCountedValues) st.counts[x >> 2] += std::uint64_t{1} << (16 * (x & 3));
    mn = std::min(mn, x);
    mx = std::max(mx, x);
    st.total += x;
    if (x) {
      sparse += varint_size(((i - next) << 1) | (x != 1u)) + (x != 1u ? varint_size(x - 2) : 0u);
      ++nnz;
      next = i + 1;
    }
  }
  st.mn = n ? mn : 0;
  st.mx = mx;
  st.nnz = nnz;
  if (n == 0 || mx == 0) return st;
  if (mn == mx) {
    st.bound = 1 + varint_size(mx);
    return st;
  }
  st.raw = 1 + varint_size(mn) + 1 + static_cast<std::uint32_t>((std::uint64_t{n} * bit_width(mx - mn) + 7) / 8);
  st.sparse_total = 1 + varint_size(nnz) + sparse;
  st.bound = std::min(st.sparse_total, st.raw);
  return st;
}

void expect_same_stats(const StreamStats& a, const StreamStats& b, const std::string& what) {
  EXPECT_EQ(a.total, b.total) << what;
  if (b.mx < kCountedValues)  // (the counts are the rANS trial's histogram only then, and only then kept whole)
    for (int q = 0; q < 4; ++q) EXPECT_EQ(a.counts[q], b.counts[q]) << what << " counts " << q;
  EXPECT_EQ(a.mx, b.mx) << what;
  if (a.mx) EXPECT_EQ(a.mn, b.mn) << what;  // (the minimum of an all-zero stream is not used)
  EXPECT_EQ(a.nnz, b.nnz) << what;
  EXPECT_EQ(a.sparse_total, b.sparse_total) << what;
  EXPECT_EQ(a.raw, b.raw) << what;
  EXPECT_EQ(a.bound, b.bound) << what;
}

// Exact chunk marks of a stream (bit c: values 16 c .. 16 c + 15 hold a nonzero).
std::vector<std::uint32_t> chunk_marks(const std::vector<std::uint32_t>& v) {
  std::vector<std::uint32_t> w((v.size() + 16 * 32 - 1) / (16 * 32) + 1, 0);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i]) w[i / 16 / 32] |= 1u << (i / 16 % 32);
  return w;
}

}  // namespace

// The statistics pass (dense chunks summed as a whole, sparse chunks value by value) equals the value-by-value
// definition on every kind of stream, length and dtype range.
TEST(EncodedEncoder, StatisticsEqualTheValueByValueDefinition) {
  std::mt19937_64 rng(5);
  std::size_t checked = 0;
  for (int d = 0; d < 3; ++d)
    for (std::uint32_t n : kLengths)
      for (int kind = 0; kind < kKinds + 4; ++kind) {
        const std::vector<std::uint32_t> v =
            kind < kKinds ? make_stream(kind, n, kMax[d], rng) : make_chunky_stream(kind - kKinds, n, kMax[d], rng);
        const auto get = [&](std::uint32_t i) { return v[i]; };
        expect_same_stats(stream_stats(get, n), naive_stats(v),
                          "dtype " + std::to_string(d) + " n " + std::to_string(n) + " kind " + std::to_string(kind));
        ++checked;
      }
  EXPECT_EQ(checked, 3u * (kKinds + 4) * (sizeof kLengths / sizeof kLengths[0]));
}

// Chunk marks (encoded::ChunkMarks, from the GPU decoder): the statistics and the stream bytes with exact marks (the
// zero chunks not read: a value read from one fails the test) equal those without marks.
TEST(EncodedEncoder, ChunkMarksSkipOnlyZeroChunks) {
  std::mt19937_64 rng(9);
  std::size_t skipped = 0, sparse_streams = 0;
  for (int d = 0; d < 3; ++d)
    for (std::uint32_t n : kLengths)
      for (int kind = 0; kind < kKinds + 4; ++kind) {
        const std::vector<std::uint32_t> v =
            kind < kKinds ? make_stream(kind, n, kMax[d], rng) : make_chunky_stream(kind - kKinds, n, kMax[d], rng);
        const std::string what = "dtype " + std::to_string(d) + " n " + std::to_string(n) + " kind " + std::to_string(kind);
        const std::vector<std::uint32_t> marks = chunk_marks(v);
        const ChunkMarks may_hold{marks.data()};
        std::size_t reads_of_zero_chunks = 0;
        const auto get = [&](std::uint32_t i) { return v[i]; };
        const auto get_marked = [&](std::uint32_t i) {
          if (i / 16 < n / 16 && !may_hold(i / 16)) ++reads_of_zero_chunks;  // (the partial last chunk is read)
          return v[i];
        };
        const StreamStats st = stream_stats(get, n);
        expect_same_stats(stream_stats(get_marked, n, NoValueHook{}, may_hold), st, what);
        std::vector<std::uint8_t> a(stream_slot_bytes(n)), b(stream_slot_bytes(n));
        const std::uint32_t na = encode_stream_with(st, get, n, a.data());
        const std::size_t before = reads_of_zero_chunks;
        const std::uint32_t nb = encode_stream_with(st, get_marked, n, b.data(), nullptr, {}, may_hold);
        ASSERT_EQ(na, nb) << what;
        ASSERT_TRUE(std::equal(a.begin(), a.begin() + na, b.begin())) << what;
        EXPECT_EQ(before, 0u) << what << ": the statistics read a chunk marked empty";
        if (na && a[0] == kSparse && st.bound <= detail::rans_size_floor(st.mn)) {  // no rANS trial (which reads all)
          EXPECT_EQ(reads_of_zero_chunks, before) << what << ": the sparse encoder read a chunk marked empty";
          ++sparse_streams;
        }
        for (std::uint32_t c = 0; c < n / 16; ++c) skipped += !may_hold(c);
        const ChunkMarks all{};  // null: every chunk
        expect_same_stats(stream_stats(get, n, NoValueHook{}, all), st, what);
      }
  EXPECT_GT(skipped, 1000u);
  EXPECT_GT(sparse_streams, 50u);
}

// The CUDA encoder reserves StreamStats::bound bytes per stream (and sizes its scratch by stream_bound_bytes): the
// encoder writes nothing beyond the bound, and the bound is within stream_bound_bytes.
TEST(EncodedEncoder, StreamsStayWithinTheirBound) {
  std::mt19937_64 rng(7);
  std::size_t moved = 0, escaped = 0;
  for (int d = 0; d < 3; ++d)
    for (std::uint32_t n : kLengths)
      for (int kind = 0; kind < kKinds; ++kind) {
        const std::vector<std::uint32_t> v = make_stream(kind, n, kMax[d], rng);
        const auto get = [&](std::uint32_t i) { return v[i]; };
        const StreamStats st = stream_stats(get, n);
        ASSERT_LE(st.bound, cuda::stream_bound_bytes(n, kElem[d])) << "dtype " << d << " n " << n << " kind " << kind;
        constexpr std::uint32_t kGuard = 64;
        std::vector<std::uint8_t> slot(st.bound + kGuard, 0xa5);
        const std::uint32_t size = encode_stream_with(st, get, n, slot.data());
        ASSERT_LE(size, st.bound);
        for (std::uint32_t j = st.bound; j < slot.size(); ++j)
          ASSERT_EQ(slot[j], 0xa5) << "written past the bound: dtype " << d << " n " << n << " kind " << kind;
        // The same bytes as with the full slot.
        std::vector<std::uint8_t> full(stream_slot_bytes(n));
        std::uint64_t sum = 0;
        ASSERT_EQ(encode_stream(get, n, full.data(), &sum), size);
        ASSERT_TRUE(std::equal(slot.begin(), slot.begin() + size, full.begin()));
        std::uint64_t total = 0;
        for (std::uint32_t x : v) total += x;
        EXPECT_EQ(st.total, total);
        // As the CUDA encoder calls it: the stream left where it was built (slot + at), the same bytes, within the
        // bound.
        std::vector<std::uint8_t> kept(st.bound + kGuard, 0xa5);
        std::uint32_t at = 12345;
        ASSERT_EQ(encode_stream_with(st, get, n, kept.data(), &at), size);
        ASSERT_LE(std::uint64_t{at} + size, st.bound) << "dtype " << d << " n " << n << " kind " << kind;
        if (size == 0 || kept[at] != kRans) ASSERT_EQ(at, 0u);  // only rANS streams move
        ASSERT_TRUE(std::equal(kept.begin() + at, kept.begin() + at + size, full.begin()))
            << "dtype " << d << " n " << n << " kind " << kind;
        for (std::uint32_t j = st.bound; j < kept.size(); ++j) ASSERT_EQ(kept[j], 0xa5);
        moved += at > 0;
        if (size && kept[at] == kRans) {  // rANS with escapes (written by the backward pass when one byte each)
          ByteReader rd{kept.data() + at, kept.data() + at + size};
          rd.byte();
          rd.varint();
          const std::uint32_t K = rd.byte();
          for (std::uint32_t s = 0; s <= K; ++s) rd.varint();
          escaped += rd.ok && rd.varint() > 0;
        }
      }
  EXPECT_GT(moved, 20u);   // rANS streams were left in place
  EXPECT_GT(escaped, 5u);  // some with escapes
}

namespace {

// encode_stream_with as the policies define it, step by step: the rANS trial first (its own counting and histogram
// passes), kept when it returns a stream; else the smaller of sparse and raw (the raw bits one byte at a time).
std::uint32_t encode_by_definition(const std::vector<std::uint32_t>& v, const StreamStats& st, std::uint8_t* slot,
                                   std::uint32_t* at, Policy policy) {
  const auto get = [&](std::uint32_t i) { return v[i]; };
  const std::uint32_t n = static_cast<std::uint32_t>(v.size());
  *at = 0;
  if (st.bound == 0) return 0;
  if (st.mn == st.mx) {
    slot[0] = kConstant;
    return static_cast<std::uint32_t>(put_varint(slot + 1, st.mx) - slot);
  }
  std::uint32_t best = st.bound, max_k = kMaxAlphabet;
  if (policy == Policy::fast) {
    best = std::min<std::uint32_t>(best, static_cast<std::uint32_t>(std::uint64_t{st.raw} * kFastRansNum / kFastRansDen) + 1);
    max_k = kFastMaxAlphabet;
  }
  if (best > detail::rans_size_floor(st.mn))
    if (const std::uint32_t r = detail::try_rans(get, n, st.mn, st.mx - st.mn, slot, best, nullptr, at, {}, max_k))
      return r;
  if (st.sparse_total < st.raw) {
    std::uint8_t* p = slot;
    *p++ = kSparse;
    p = put_varint(p, st.nnz);
    std::uint32_t after = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      if (v[i]) {
        p = put_varint(p, ((i - after) << 1) | (v[i] != 1u ? 1u : 0u));
        if (v[i] != 1u) p = put_varint(p, v[i] - 2);
        after = i + 1;
      }
    return static_cast<std::uint32_t>(p - slot);
  }
  const std::uint32_t w = bit_width(st.mx - st.mn);
  std::uint8_t* p = slot;
  *p++ = kRaw;
  p = put_varint(p, st.mn);
  *p++ = static_cast<std::uint8_t>(w);
  std::vector<std::uint8_t> bits((std::uint64_t{n} * w + 7) / 8, 0);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t b = 0; b < w; ++b)
      if (((v[i] - st.mn) >> b) & 1u) {
        const std::uint64_t at_bit = std::uint64_t{i} * w + b;
        bits[at_bit / 8] = static_cast<std::uint8_t>(bits[at_bit / 8] | (1u << (at_bit % 8)));
      }
  std::copy(bits.begin(), bits.end(), p);
  return static_cast<std::uint32_t>(p - slot) + static_cast<std::uint32_t>(bits.size());
}

}  // namespace

// encode_stream_with's raw pass also gathers what the rANS trial reads first (its window count, its histogram) and
// the trial follows it, writing raw again where the trial wrote over it and lost; raw bits are stored in aligned
// words. The bytes are those of the definition (trial first) for both policies, at every slot alignment, including
// streams of Poisson means across the doses (the bright-field disk at 1e3..2e5 counts per frame), where each of the
// reordered paths is taken; and with the histograms kept in a table column (RansHistogram), as on the GPU.
TEST(EncodedEncoder, RawPassWithTheTrialsCountsGivesTheDefinitionsBytes) {
  std::mt19937_64 rng(11);
  std::size_t streams = 0, by_model[5] = {}, rewritten = 0, window_lost = 0;
  const double means[] = {0.3, 1.2, 6.0, 12.0, 20.0, 31.0, 62.0};
  std::vector<std::uint32_t> table_words(2 * 17 * 3);
  for (const Policy policy : {Policy::compact, Policy::fast})
    for (int d = 0; d < 3; ++d)
      for (std::uint32_t n : kLengths)
        for (int kind = 0; kind < kKinds + 7; ++kind)
          for (int rep = 0; rep < (n == 512 && kind >= kKinds ? 40 : 1); ++rep) {
            std::vector<std::uint32_t> v;
            if (kind < kKinds) {
              v = make_stream(kind, n, kMax[d], rng);
            } else {
              std::poisson_distribution<std::uint32_t> p(means[kind - kKinds]);
              v.resize(n);
              for (auto& x : v) x = std::min(p(rng), kMax[d]);
            }
            const auto get = [&](std::uint32_t i) { return v[i]; };
            const StreamStats st = stream_stats(get, n);
            const std::uint32_t skew = static_cast<std::uint32_t>(streams % 4);
            std::vector<std::uint8_t> a(stream_slot_bytes(n) + 4), b(stream_slot_bytes(n) + 4);
            std::uint32_t at_a = 0, at_b = 0;
            const std::uint32_t na = encode_stream_with(st, get, n, a.data() + skew, &at_a, {}, AllChunks{}, policy);
            const std::uint32_t nb = encode_by_definition(v, st, b.data(), &at_b, policy);
            const std::string what = std::string(policy == Policy::fast ? "fast" : "compact") + " dtype " +
                                     std::to_string(d) + " n " + std::to_string(n) + " kind " + std::to_string(kind);
            ASSERT_EQ(na, nb) << what;
            ASSERT_EQ(at_a, at_b) << what;
            ASSERT_TRUE(std::equal(a.begin() + skew + at_a, a.begin() + skew + at_a + na, b.begin() + at_b)) << what;
            // With a table column as the CUDA encoder passes (17 symbols, every third word, left dirty by the
            // stream before): the histogram of the raw pass or of the trial kept in its words, the same bytes.
            std::fill(a.begin(), a.end(), std::uint8_t{0});
            for (std::size_t j = 0; j < table_words.size(); ++j)
              if (j % 3) table_words[j] = 0xdeadbeefu;
            const detail::RansTableSlot table{table_words.data(), 3, 17};
            std::uint32_t at_t = 0;
            const std::uint32_t nt = encode_stream_with(st, get, n, a.data() + skew, &at_t, table, AllChunks{}, policy);
            ASSERT_EQ(nt, nb) << what << " (table column)";
            ASSERT_EQ(at_t, at_b) << what << " (table column)";
            ASSERT_TRUE(std::equal(a.begin() + skew + at_t, a.begin() + skew + at_t + nt, b.begin() + at_b)) << what;
            for (std::size_t j = 0; j < table_words.size(); ++j)
              if (j % 3) ASSERT_EQ(table_words[j], 0xdeadbeefu) << what << ": a word beside the column was written";
            ++streams;
            ++by_model[na ? b[at_b] : 0];
            // Which reordered path the stream took: the trial lost at the window count (no histogram), or it wrote
            // its encoding pass over the raw stream and lost.
            if (na && b[at_b] == kRaw && st.sparse_total >= st.raw && !(st.mn == 0 && st.mx < kCountedValues)) {
              const std::uint32_t range = st.mx - st.mn, max_k = policy == Policy::fast ? kFastMaxAlphabet : kMaxAlphabet;
              if (detail::rans_window_test(range, max_k)) {
                std::uint32_t inside = 0;
                for (std::uint32_t x : v) inside += x - st.mn < detail::widest_alphabet(max_k) ? 1u : 0u;
                window_lost += (n - inside) * 32u > n;
              }
              std::uint32_t best = st.bound;
              if (policy == Policy::fast)
                best = std::min<std::uint32_t>(best, static_cast<std::uint32_t>(std::uint64_t{st.raw} * 3 / 4) + 1);
              bool wrote = false;
              std::vector<std::uint8_t> c(stream_slot_bytes(n));
              if (best > detail::rans_size_floor(st.mn) &&
                  detail::try_rans(get, n, st.mn, range, c.data(), best, nullptr, nullptr, {}, max_k, nullptr, &wrote) == 0)
                rewritten += wrote;
            }
          }
  for (int m = 1; m < 5; ++m) EXPECT_GT(by_model[m], 0u) << "model " << m;
  EXPECT_GT(window_lost, 50u);
  EXPECT_GT(rewritten, 10u);
}

// The rANS encoder's division by a frequency as a multiplication (RansReciprocal): x / f for every frequency
// 1..4096 at the states around every multiple of f near 0, 2^31 and x_max = 2^19 f (the largest state divided),
// and at random states below 2^31.
TEST(EncodedEncoder, RansReciprocalEqualsTheDivision) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<std::uint32_t> any(0, 0x7fffffffu);
  std::size_t checked = 0;
  for (std::uint32_t f = 1; f <= kRansScale; ++f) {
    const detail::RansReciprocal r = detail::RansReciprocal::of(f);
    const auto check = [&](std::uint64_t x) {
      if (x >= (std::uint64_t{1} << 31)) return;
      const auto x32 = static_cast<std::uint32_t>(x);
      ASSERT_EQ(r.quotient(x32), x32 / f) << "f " << f << " x " << x;
      ++checked;
    };
    const std::uint64_t x_max = std::uint64_t{(kRansL >> kRansScaleBits) << 8} * f;
    for (const std::uint64_t top : {std::uint64_t{0}, x_max, std::uint64_t{1} << 31})
      for (std::int64_t k = -3; k <= 3; ++k) {
        const std::int64_t m = static_cast<std::int64_t>(top / f) + k;
        if (m < 0) continue;
        for (std::int64_t e = -1; e <= 1; ++e)
          if (m * static_cast<std::int64_t>(f) + e >= 0) check(static_cast<std::uint64_t>(m * f + e));
      }
    for (int i = 0; i < 64; ++i) check(any(rng));
  }
  EXPECT_EQ(detail::RansReciprocal::of(1).quotient(0x7fffffffu), 0x7fffffffu);
  EXPECT_EQ(detail::RansReciprocal::of(4096).quotient(0x7fffffffu), 0x7fffffffu >> 12);
  EXPECT_GT(checked, std::size_t{4096} * 100);
}

// The encoder skips the rANS trial when the best of sparse and raw is at most rans_size_floor(base) (rANS is kept
// only when strictly smaller than the best): every rANS stream (computed without a size limit) is at least that
// floor, and some reach it.
TEST(EncodedEncoder, RansSizeFloorIsAFloor) {
  std::size_t tried = 0, at_floor = 0;
  for_each_rans_stream(3, [&](const std::string& what, std::uint32_t, const std::vector<std::uint32_t>&,
                              const StreamStats& st, const std::uint8_t*, std::uint32_t r) {
    EXPECT_GE(r, detail::rans_size_floor(st.mn)) << what;
    if (r == detail::rans_size_floor(st.mn)) ++at_floor;
    ++tried;
  });
  EXPECT_GT(tried, 1000u);
  EXPECT_GT(at_floor, 0u);  // the floor is tight
}

// try_rans gives up without its encoding pass when rans_renorm_floor (from the symbols' information) reaches the
// size limit: every rANS stream's renormalisation bytes (read back from the stream: model byte, base, K, the K + 1
// frequencies, the escape byte count and escapes, then 4 state bytes and the rest) are at least that floor, and the
// floor is close (within 2% + 3 bytes) for the long streams, so that it does skip the trials that cannot win.
TEST(EncodedEncoder, RansRenormFloorIsAFloorOfTheRenormalisationBytes) {
  std::size_t tried = 0, close = 0, long_streams = 0;
  const auto varint = [](const std::uint8_t*& p) {
    std::uint32_t v = 0;
    for (std::uint32_t sh = 0;; sh += 7) {
      const std::uint8_t b = *p++;
      v |= static_cast<std::uint32_t>(b & 0x7fu) << sh;
      if (!(b & 0x80u)) return v;
    }
  };
  for_each_rans_stream(11, [&](const std::string& what, std::uint32_t n, const std::vector<std::uint32_t>& v,
                               const StreamStats& st, const std::uint8_t* stream, std::uint32_t r) {
    const std::uint8_t* p = stream;
    ASSERT_EQ(*p++, kRans) << what;
    ASSERT_EQ(varint(p), st.mn) << what;
    const std::uint32_t K = *p++;
    for (std::uint32_t s = 0; s <= K; ++s) (void)varint(p);
    p += varint(p);  // the escape bytes
    const std::uint32_t rans_bytes = r - static_cast<std::uint32_t>(p - stream);
    ASSERT_GE(rans_bytes, 4u) << what;
    std::vector<std::uint16_t> counts(K + 1, 0);
    for (std::uint32_t x : v) ++counts[std::min(x - st.mn, K)];
    const std::uint32_t floor = detail::rans_renorm_floor(detail::information_bits(counts.data(), K + 1, n), n);
    ASSERT_LE(floor, rans_bytes - 4) << what;
    ++tried;
    if (n >= 1000 && rans_bytes - 4 >= 100) {
      ++long_streams;
      if ((rans_bytes - 4) <= floor + 3 + (rans_bytes - 4) / 50) ++close;
    }
  });
  EXPECT_GT(tried, 1000u);
  EXPECT_GT(long_streams, 50u);
  EXPECT_GT(close, long_streams / 2) << close << " of " << long_streams;
}

// Stated cases: the smallest rANS streams sit just above the floor.
TEST(EncodedEncoder, RansSizeFloorValues) {
  EXPECT_EQ(detail::rans_size_floor(0), 12u);
  EXPECT_EQ(detail::rans_size_floor(127), 12u);
  EXPECT_EQ(detail::rans_size_floor(128), 13u);
  EXPECT_EQ(detail::rans_size_floor(0xffffffffu), 16u);
  // 0/1 values, half each, n = 64: K = 2 (covers the range), table 2048, 2048, 0 (2 + 2 + 1 bytes), no escapes:
  // 1 + 1 + 1 + 5 + 1 + 0 + 4 state + 64 bits of renormalisation (8 bytes) = 21 bytes.
  std::vector<std::uint32_t> v(64);
  for (std::uint32_t i = 0; i < 64; ++i) v[i] = i & 1u;
  std::vector<std::uint8_t> slot(4096);
  const auto get = [&](std::uint32_t i) { return v[i]; };
  EXPECT_EQ(detail::try_rans(get, 64, 0, 1, slot.data(), 4096), 21u);
}

TEST(EncodedEncoder, CompactScratchBoundsOneTileAndTheWholeDataset) {
  encoded::Layout l{1000, 36864, DType::u16, 512};  // 2 tiles
  const std::size_t one = 36864 * cuda::stream_bound_bytes(512, 2);
  // per tile: stream offsets, its base, and the live list's 1152 entries (groups of 32 pixels)
  const std::size_t offsets = 2 * 36864 * 4 + 2 * 8 + 8 + 2 * 1152 * 4 + 4;
  EXPECT_EQ(cuda::compact_scratch_bytes(l), 2 * one + offsets);  // both tiles' worst case < 256 MiB
  l.frames = 262144;                                             // 512 tiles, 113 per group
  EXPECT_EQ(cuda::compact_scratch_bytes(l), cuda::kCompactScratch + 113 * 36864 * 4 + 113 * 8 + 8 + 113 * 1152 * 4 + 4);
  l.frame_pixels = 36863;  // no groups of 32 pixels: no live list
  l.frames = 1000;
  EXPECT_EQ(cuda::compact_scratch_bytes(l), 2 * 36863 * cuda::stream_bound_bytes(512, 2) + 2 * 36863 * 4 + 2 * 8 + 8);
}

// Streams of values 0..15 (with a zero): the rANS trial from the statistics' counts (no histogram pass) writes the
// same stream as the trial that counts the values itself.
TEST(EncodedEncoder, RansFromTheStatisticsCountsEqualsTheCountingPass) {
  std::mt19937_64 rng(11);
  std::size_t rans = 0;
  for (std::uint32_t n : kLengths)
    for (std::uint32_t top = 1; top < kCountedValues; ++top)
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<std::uint32_t> v(n);
        std::uniform_int_distribution<std::uint32_t> any(0, top);
        std::bernoulli_distribution zero(rep % 4 * 0.3);
        for (auto& x : v) x = zero(rng) ? 0u : any(rng);
        v[0] = 0;
        v[n - 1] = n > 1 ? top : 0u;
        const auto get = [&](std::uint32_t i) { return v[i]; };
        const StreamStats st = stream_stats(get, n);
        if (st.mx == 0) continue;
        for (std::uint32_t s = 0; s < kCountedValues; ++s)
          ASSERT_EQ((st.counts[s >> 2] >> (16 * (s & 3))) & 0xffffu, std::uint64_t(std::count(v.begin(), v.end(), s)))
              << "n " << n << " value " << s;
        const std::uint32_t big = 16 * n + 1024;
        std::vector<std::uint8_t> a(big), b(big);
        const std::uint32_t ra = detail::try_rans(get, n, 0, st.mx, a.data(), big, st.counts);
        const std::uint32_t rb = detail::try_rans(get, n, 0, st.mx, b.data(), big);
        ASSERT_EQ(ra, rb) << "n " << n << " top " << top;
        ASSERT_TRUE(std::equal(a.begin(), a.begin() + ra, b.begin()));
        rans += ra > 0;
      }
  EXPECT_GT(rans, 100u);
}
