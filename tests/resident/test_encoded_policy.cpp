// The encoder's policies (format.hpp: Policy): both exact at every dose, fast never a rANS stream that the lockstep
// decoder does not take or that saves less than a quarter of raw, and otherwise the same bytes as compact; the GPU
// encoder writes the CPU bytes under either policy and its queries equal the dense reference at high dose.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "device/cuda/device_buffer.hpp"
#include "encoded_fixtures.hpp"
#include "io/sample/sample.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/encoded/lane_decoder.hpp"
#include "resident/encoded/layout.hpp"
#include "resident/encoded/stream_codec.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;
using test::Dense;

namespace {

constexpr encoded::Policy kPolicies[] = {encoded::Policy::compact, encoded::Policy::fast};
const double kDoses[] = {1e3, 4e3, 2e4, 1e5, 2e5};

// The raw model's size for these values (stream_codec.hpp: model byte, base varint, width byte, packed bits).
std::uint32_t raw_size(const std::vector<std::uint32_t>& v) {
  std::uint32_t mn = v[0], mx = v[0];
  for (std::uint32_t x : v) {
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  const std::uint32_t w = encoded::bit_width(mx - mn);
  return 2 + encoded::varint_size(mn) + static_cast<std::uint32_t>((std::uint64_t{v.size()} * w + 7) / 8);
}

std::vector<std::uint32_t> decoded(const std::uint8_t* s, std::uint32_t size, std::uint32_t n) {
  std::vector<std::uint32_t> out(n, 0);
  EXPECT_TRUE(encoded::decode_stream(s, size, n, 0, n, [&](std::uint32_t i, std::uint32_t x) { out[i] = x; }));
  return out;
}

// 1024 frames (32 x 32 scan: two tiles of the default 512) of the simulated sample at 192x192 (the benchmark's
// detector) at `dose` counts per frame.
Dense simulated(double dose) {
  sample::SampleSpec s;
  s.scan_rows = s.scan_cols = 32;
  s.det_rows = s.det_cols = 192;
  s.dose_per_frame = dose;
  Dense d{{32, 32, 192, 192}, DType::u16, std::vector<std::uint8_t>(std::size_t{1024} * 192 * 192 * 2)};
  sample::simulate_frames(s, 0, 1024, d.bytes.data());
  return d;
}

EncodedResident encode_cpu(const Dense& d, std::uint32_t tile, encoded::Policy policy) {
  EncodedResident r(d.shape, d.dtype, Backend::cpu, tile, policy);
  r.append(d.bytes.data(), d.shape.frames());
  return r;
}

// BF disk (radius det/6 around the centre) and CoM weights (det_row, det_col over every pixel).
void detector_lists(const Shape4D& s, std::vector<std::uint32_t>& disk, std::vector<std::uint32_t>& ones,
                    std::vector<std::uint32_t>& all, std::vector<std::uint32_t>& rows,
                    std::vector<std::uint32_t>& cols) {
  const double cr = (s.det_rows - 1) / 2.0, cc = (s.det_cols - 1) / 2.0, r = s.det_rows / 6.0;
  for (std::uint32_t p = 0; p < s.frame_pixels(); ++p) {
    const double dr = p / s.det_cols - cr, dc = p % s.det_cols - cc;
    if (dr * dr + dc * dc < r * r) {
      disk.push_back(p);
      ones.push_back(1);
    }
    all.push_back(p);
    rows.push_back(static_cast<std::uint32_t>(p / s.det_cols));
    cols.push_back(static_cast<std::uint32_t>(p % s.det_cols));
  }
}

struct ModelCounts {
  std::size_t models[5] = {0, 0, 0, 0, 0};
  std::size_t wide_rans = 0;  // rANS alphabets above kFastMaxAlphabet
};

ModelCounts count_models(const EncodedResident& r) {
  ModelCounts c;
  for (std::size_t t = 0; t < r.tiles().size(); ++t) {
    const encoded::cpu::HostTile h = r.tile_bytes(t);
    for (std::size_t p = 0; p + 1 < h.dir.size(); ++p) {
      const std::uint32_t size = h.dir[p + 1] - h.dir[p];
      const std::uint8_t* s = h.payload.data() + h.dir[p];
      ++c.models[size ? s[0] : 0];
      if (size && s[0] == encoded::kRans && encoded::rans_alphabet(s, size) > encoded::kFastMaxAlphabet) ++c.wide_rans;
    }
  }
  return c;
}

}  // namespace

TEST(EncodedPolicy, NamesParseAndTheEnvironmentChooses) {
  EXPECT_EQ(encoded::parse_policy("compact"), encoded::Policy::compact);
  EXPECT_EQ(encoded::parse_policy("fast"), encoded::Policy::fast);
  EXPECT_STREQ(encoded::policy_name(encoded::Policy::compact), "compact");
  EXPECT_STREQ(encoded::policy_name(encoded::Policy::fast), "fast");
  try {
    (void)encoded::parse_policy("smallest");
    ADD_FAILURE() << "an unknown policy was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'smallest'"), std::string::npos) << e.what();
  }
  const char* before = std::getenv("QGPU_ENCODED_POLICY");
  const std::string saved = before ? before : "";
  ::unsetenv("QGPU_ENCODED_POLICY");
  EXPECT_EQ(encoded::default_policy(), encoded::Policy::fast);
  ::setenv("QGPU_ENCODED_POLICY", "compact", 1);
  EXPECT_EQ(encoded::default_policy(), encoded::Policy::compact);
  const Dense d = test::mixed({2, 3, 4, 4}, DType::u16);
  EXPECT_EQ(EncodedResident(d.shape, d.dtype, Backend::cpu).layout().policy, encoded::Policy::compact);
  ::setenv("QGPU_ENCODED_POLICY", "bogus", 1);
  EXPECT_THROW((void)encoded::default_policy(), InvalidArgument);
  EXPECT_THROW(EncodedResident(d.shape, d.dtype, Backend::cpu), InvalidArgument);
  if (before)
    ::setenv("QGPU_ENCODED_POLICY", saved.c_str(), 1);
  else
    ::unsetenv("QGPU_ENCODED_POLICY");
}

// Stream by stream, Poisson counts of means from 0.05 to 3000 (every model) and tiles 1..4096: both policies decode
// to the values; fast's stream equals compact's unless compact's is a rANS stream with an alphabet above
// kFastMaxAlphabet or larger than 3/4 of raw, and then fast's is no rANS stream and no larger than raw; every fast
// rANS stream has such an alphabet and size.
TEST(EncodedPolicy, FastKeepsRansOnlyWhereItDecodesInLockstepAndSavesAQuarter) {
  std::mt19937 rng(7);
  std::size_t same = 0, changed = 0, fast_rans = 0;
  for (std::uint32_t n : {1u, 7u, 64u, 512u, 4096u})
    for (double mean : {0.05, 0.5, 2.0, 6.0, 20.0, 70.0, 300.0, 3000.0})
      for (int rep = 0; rep < 4; ++rep) {
        std::poisson_distribution<std::uint32_t> pois(mean);
        std::vector<std::uint32_t> v(n);
        for (auto& x : v) x = pois(rng) + (rep == 3 ? 1000u : 0u);  // rep 3: a large base
        const auto get = [&](std::uint32_t i) { return v[i]; };
        std::vector<std::uint8_t> a(encoded::stream_slot_bytes(n)), b(a.size());
        std::uint64_t sa = 0, sb = 0;
        const std::uint32_t na = encoded::encode_stream(get, n, a.data(), &sa, encoded::Policy::compact);
        const std::uint32_t nb = encoded::encode_stream(get, n, b.data(), &sb, encoded::Policy::fast);
        const std::string what = "n " + std::to_string(n) + " mean " + std::to_string(mean) + " rep " +
                                 std::to_string(rep);
        ASSERT_EQ(sa, sb) << what;
        ASSERT_EQ(decoded(a.data(), na, n), v) << what;
        ASSERT_EQ(decoded(b.data(), nb, n), v) << what;
        ASSERT_LE(na, nb) << what;  // compact is the smallest
        const std::uint32_t raw = raw_size(v);
        if (nb && b[0] == encoded::kRans) {
          ++fast_rans;
          EXPECT_LE(encoded::rans_alphabet(b.data(), nb), encoded::kFastMaxAlphabet) << what;
          EXPECT_LE(std::uint64_t{nb} * encoded::kFastRansDen, std::uint64_t{raw} * encoded::kFastRansNum) << what;
        }
        const bool compact_kept = !(na && a[0] == encoded::kRans &&
                                    (encoded::rans_alphabet(a.data(), na) > encoded::kFastMaxAlphabet ||
                                     std::uint64_t{na} * encoded::kFastRansDen >
                                         std::uint64_t{raw} * encoded::kFastRansNum));
        if (compact_kept) {
          ++same;
          ASSERT_EQ(na, nb) << what;
          EXPECT_TRUE(std::equal(a.begin(), a.begin() + na, b.begin())) << what;
        } else {
          ++changed;
          EXPECT_NE(b[0], encoded::kRans) << what;
          EXPECT_LE(nb, raw) << what;
        }
      }
  EXPECT_GT(same, 0u);
  EXPECT_GT(changed, 0u);
  EXPECT_GT(fast_rans, 0u);
}

// The lockstep decoder's raw reads (one or two aligned 32-bit words per value) give the reference decoder's values
// for every width 1..32, stream lengths that end anywhere in a word, and the packed bits at every address modulo 4
// (the stream at offsets 0..3 of an exact-size buffer: a read past its end is a heap overflow under the sanitizers).
TEST(EncodedPolicy, LaneDecoderRawReadsEveryWidthAndAlignment) {
  std::mt19937_64 rng(3);
  std::size_t checked = 0;
  for (std::uint32_t w = 1; w <= 32; ++w)
    for (std::uint32_t n : {1u, 2u, 3u, 31u, 33u, 512u})
      for (std::uint32_t base : {0u, 200u, 70000u}) {
        std::vector<std::uint32_t> v(n);
        for (auto& x : v) x = base + static_cast<std::uint32_t>(rng() & ((1ull << w) - 1));
        v[0] = base;  // the minimum is base
        if (n > 1) v[n - 1] = static_cast<std::uint32_t>(base + ((1ull << w) - 1));  // width w exactly
        if (std::uint64_t{base} + ((1ull << w) - 1) > 0xffffffffull) continue;
        // the raw stream itself (encode_stream may prefer another model): model, base, width, packed bits
        std::vector<std::uint8_t> st{encoded::kRaw};
        std::uint8_t vb[5];
        st.insert(st.end(), vb, encoded::put_varint(vb, base));
        st.push_back(static_cast<std::uint8_t>(w));
        const std::size_t at = st.size();
        st.resize(at + (std::uint64_t{n} * w + 7) / 8, 0);
        for (std::uint32_t i = 0; i < n; ++i)
          for (std::uint32_t b = 0; b < w; ++b)
            if (((v[i] - base) >> b) & 1u) st[at + (std::uint64_t{i} * w + b) / 8] |= std::uint8_t(1u << ((i * w + b) % 8));
        std::vector<std::uint32_t> ref(n, 0);
        ASSERT_TRUE(encoded::decode_stream(st.data(), static_cast<std::uint32_t>(st.size()), n, 0, n,
                                           [&](std::uint32_t i, std::uint32_t x) { ref[i] = x; }));
        ASSERT_EQ(ref, v) << "w " << w << " n " << n;
        for (std::size_t off = 0; off < 4; ++off) {
          const std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[off + st.size()]);
          std::memset(buf.get(), 0xa5, off);
          std::memcpy(buf.get() + off, st.data(), st.size());
          std::vector<std::uint32_t> tables(encoded::LaneDecoder::kWords * 32, 0);
          encoded::LaneDecoder dec;
          dec.place(tables.data(), 3);
          ASSERT_TRUE(dec.open(buf.get() + off, static_cast<std::uint32_t>(st.size()), n));
          ASSERT_EQ(dec.model, encoded::kRaw);
          for (std::uint32_t i = 0; i < n; ++i)
            ASSERT_EQ(dec.raw_at(i), v[i]) << "w " << w << " n " << n << " base " << base << " off " << off << " i " << i;
          ++checked;
        }
      }
  EXPECT_EQ(checked, 32u * 6 * 3 * 4 - 2u * 6 * 4);  // width 32 with a nonzero base exceeds 32 bits: skipped
}

// The simulated sample at 192x192 from 1e3 to 2e5 counts per frame: under both policies the resident decodes to the
// dense counts and its BF and CoM sums equal the dense reference; compact is never larger than fast; fast holds no
// rANS stream beyond the lockstep decoder. Prints the resident sizes per dose (the table of the benchmark,
// bench_encoded_dose, at 128 frames).
TEST(EncodedPolicy, ExactAtEveryDoseAndSizesPerDose) {
  std::printf("| dose | dense bytes | compact bytes (dense/resident) | fast bytes (dense/resident) | compact "
              "raw/rANS/rANS>30/sparse streams | fast raw/rANS/sparse streams |\n");
  std::size_t wide_at_high_dose = 0;
  for (const double dose : kDoses) {
    SCOPED_TRACE("dose " + std::to_string(dose));
    const Dense d = simulated(dose);
    std::vector<std::uint32_t> disk, ones, all, rows, cols;
    detector_lists(d.shape, disk, ones, all, rows, cols);
    const auto bf = test::ref_masked_sum(d, disk, ones);
    const auto sr = test::ref_masked_sum(d, all, rows), sc = test::ref_masked_sum(d, all, cols);
    std::size_t bytes[2] = {0, 0};
    ModelCounts mc[2];
    for (int k = 0; k < 2; ++k) {
      const EncodedResident r = encode_cpu(d, encoded::kDefaultTile, kPolicies[k]);
      ASSERT_TRUE(r.read().bytes == d.bytes) << encoded::policy_name(kPolicies[k]);
      EXPECT_EQ(r.masked_sum(disk, ones), bf);
      const auto m = r.masked_sums(all, {rows, cols});
      EXPECT_EQ(m[0], sr);
      EXPECT_EQ(m[1], sc);
      EXPECT_EQ(r.frame_totals(), test::ref_totals(d));
      bytes[k] = r.resident_bytes();
      mc[k] = count_models(r);
    }
    EXPECT_LE(bytes[0], bytes[1]);
    EXPECT_EQ(mc[1].wide_rans, 0u);
    if (dose >= 1e5) wide_at_high_dose += mc[0].wide_rans;
    const double dense = double(d.bytes.size());
    std::printf("| %.0e | %zu | %zu (%.2fx) | %zu (%.2fx) | %zu/%zu/%zu/%zu | %zu/%zu/%zu |\n", dose, d.bytes.size(),
                bytes[0], dense / bytes[0], bytes[1], dense / bytes[1], mc[0].models[encoded::kRaw],
                mc[0].models[encoded::kRans], mc[0].wide_rans, mc[0].models[encoded::kSparse],
                mc[1].models[encoded::kRaw], mc[1].models[encoded::kRans], mc[1].models[encoded::kSparse]);
  }
  // What the fast policy is for: compact's wide rANS streams (lane-by-lane decode) at high dose.
  EXPECT_GT(wide_at_high_dose, 0u);
}

// The GPU encoder writes the CPU encoder's bytes under either policy, and the GPU masked sums (BF disk, CoM
// weights) equal the dense reference at every dose. (Needs a GPU; skips here without one.)
TEST(EncodedPolicyCuda, SameBytesAsCpuAndExactSumsAtEveryDose) {
  QGPU_REQUIRE_CUDA();
  for (const double dose : kDoses) {
    SCOPED_TRACE("dose " + std::to_string(dose));
    const Dense d = simulated(dose);
    std::vector<std::uint32_t> disk, ones, all, rows, cols;
    detector_lists(d.shape, disk, ones, all, rows, cols);
    DeviceBuffer dev(d.bytes.size());
    dev.upload(d.bytes.data(), d.bytes.size());
    for (const encoded::Policy policy : kPolicies) {
      SCOPED_TRACE(encoded::policy_name(policy));
      const EncodedResident cpu = encode_cpu(d, encoded::kDefaultTile, policy);
      EncodedResident gpu(d.shape, d.dtype, Backend::cuda, encoded::kDefaultTile, policy);
      const std::size_t fb = d.frame_pixels() * 2, n = d.shape.frames();
      for (std::size_t f = 0; f < n; f += 48) gpu.append(dev.as<std::uint8_t>() + f * fb, std::min<std::size_t>(48, n - f));
      ASSERT_TRUE(gpu.complete());
      ASSERT_EQ(gpu.tiles().size(), cpu.tiles().size());
      for (std::size_t t = 0; t < gpu.tiles().size(); ++t) {
        const auto g = gpu.tile_bytes(t), c = cpu.tile_bytes(t);
        EXPECT_EQ(g.dir, c.dir) << "tile " << t;
        EXPECT_TRUE(g.payload == c.payload) << "tile " << t << ": stream bytes differ";
      }
      EXPECT_EQ(gpu.masked_sum(disk, ones), test::ref_masked_sum(d, disk, ones));
      const auto m = gpu.masked_sums(all, {rows, cols});
      EXPECT_EQ(m[0], test::ref_masked_sum(d, all, rows));
      EXPECT_EQ(m[1], test::ref_masked_sum(d, all, cols));
      EXPECT_TRUE(gpu.read().bytes == d.bytes);
    }
  }
}

// Data whose every stream is raw, constant or empty (no rANS, no sparse): 512 frames of 64 pixels (two warps of
// lanes). Raw: full-range uniform counts, or uniform values of width 1..7 (u8: 1..5) above a base of one or two
// varint bytes, so that the packed bits start at every address modulo 4.
static Dense raw_constant_empty(DType t) {
  const Shape4D shape{4, 128, 8, 8};
  Dense d{shape, t, std::vector<std::uint8_t>(shape.elements() * dtype_size(t))};
  std::mt19937_64 rng(21);
  const std::uint32_t mx = test::max_count(t);
  for (std::size_t f = 0; f < shape.frames(); ++f)
    for (std::uint32_t p = 0; p < 64; ++p) {
      std::uint32_t v = 0;
      if (p % 4 == 0) {
        v = static_cast<std::uint32_t>(rng() % (std::uint64_t{mx} + 1));
      } else if (p % 4 == 1) {
        const std::uint32_t w = 1 + p % (t == DType::u8 ? 5u : 7u), base = p * 37 % (t == DType::u8 ? 200u : 1000u);
        v = base + static_cast<std::uint32_t>(rng() & ((1u << w) - 1));
      } else if (p % 4 == 2) {
        v = 7;  // constant; p % 4 == 3: an empty stream
      }
      d.set(f, p, v);
    }
  return d;
}

// raw_constant_empty with half of the empty streams (pixels p % 8 == 3) holding small skewed counts (geometric,
// mostly 0..3): rANS streams with a small alphabet, in the same warps as the raw ones.
static Dense raw_beside_rans(DType t) {
  Dense d = raw_constant_empty(t);
  std::mt19937_64 rng(5);
  for (std::size_t f = 0; f < d.shape.frames(); ++f)
    for (std::uint32_t p = 3; p < 64; p += 8) {
      std::uint32_t v = 0;
      while (v < 12 && rng() % 10 < 4) ++v;
      d.set(f, p, v);
    }
  return d;
}

// The 64-pixel data (raw_constant_empty and its variants) encoded on the GPU with the fast policy in tiles of 70 and
// 512 positions (the streams staged in shared memory or read where they are): the sums of every pixel with narrow
// weights (ones, rows, cols: the 32-bit paths) and full-range ones (the exact 64-bit path), and of `subset` with its
// weights, all equal the dense reference.
static void gpu_sums_equal_dense(const Dense& d, const std::vector<std::uint32_t>& subset,
                                 const std::vector<std::uint32_t>& subset_weights) {
  std::vector<std::uint32_t> all, ones, rows, cols, big;
  for (std::uint32_t p = 0; p < 64; ++p) {
    all.push_back(p);
    ones.push_back(1);
    rows.push_back(p / 8);
    cols.push_back(p % 8);
    big.push_back(p % 3 ? 0xffffffffu : 0u);
  }
  DeviceBuffer dev(d.bytes.size());
  dev.upload(d.bytes.data(), d.bytes.size());
  for (const std::uint32_t tile : {70u, 512u}) {
    SCOPED_TRACE(dtype_name(d.dtype) + ", tile " + std::to_string(tile));
    EncodedResident gpu(d.shape, d.dtype, Backend::cuda, tile, encoded::Policy::fast);
    const std::size_t fb = d.frame_pixels() * dtype_size(d.dtype), n = d.shape.frames();
    for (std::size_t f = 0; f < n; f += 100) gpu.append(dev.as<std::uint8_t>() + f * fb, std::min<std::size_t>(100, n - f));
    ASSERT_TRUE(gpu.complete());
    const auto narrow = gpu.masked_sums(all, {ones, rows, cols});
    ASSERT_EQ(narrow.size(), 3u);
    EXPECT_EQ(narrow[0], test::ref_masked_sum(d, all, ones));
    EXPECT_EQ(narrow[1], test::ref_masked_sum(d, all, rows));
    EXPECT_EQ(narrow[2], test::ref_masked_sum(d, all, cols));
    EXPECT_EQ(gpu.masked_sum(subset, subset_weights), test::ref_masked_sum(d, subset, subset_weights));
    EXPECT_EQ(gpu.masked_sum(all, big), test::ref_masked_sum(d, all, big));
  }
}

// The masked-sum kernel's raw path (warps with raw lanes and no rANS lane: the fast policy's bright-field disk at
// high dose) on raw_constant_empty data: every warp sums its raw lanes by positions (transposed_raw), a tile's last
// partial group of positions included (gpu_sums_equal_dense). The data's models are checked on the CPU (here too);
// the sums need a GPU.
TEST(EncodedPolicyCuda, RawLockstepPathEqualsTheDenseReference) {
  const std::vector<std::uint32_t> tiles = {70, 512};
  for (DType t : {DType::u8, DType::u16})
    for (const std::uint32_t tile : tiles) {
      SCOPED_TRACE(dtype_name(t) + ", tile " + std::to_string(tile));
      const Dense d = raw_constant_empty(t);
      const ModelCounts mc = count_models(encode_cpu(d, tile, encoded::Policy::fast));
      ASSERT_EQ(mc.models[encoded::kRans], 0u) << "a rANS stream: its warp would not take the raw lockstep path";
      ASSERT_EQ(mc.models[encoded::kSparse], 0u);
      ASSERT_GT(mc.models[encoded::kRaw], 0u);
      ASSERT_GT(mc.models[encoded::kConstant], 0u);
    }
  QGPU_REQUIRE_CUDA();
  std::vector<std::uint32_t> raw_only, raw_ones;
  for (std::uint32_t p = 0; p < 64; ++p)
    if (p % 4 < 2) {
      raw_only.push_back(63 - p);  // reversed: the raw streams only, in other lanes
      raw_ones.push_back(1);
    }
  for (DType t : {DType::u8, DType::u16}) gpu_sums_equal_dense(raw_constant_empty(t), raw_only, raw_ones);
}

// Warps holding raw and rANS lanes together (the fast policy at medium dose: the disk's raw streams beside a few
// rANS ones): the raw lanes are summed by positions, then the rANS ones in lockstep with the raw ones empty. Tile
// lengths 70 and 512; narrow weights and full-range ones (the exact 64-bit path), against the dense reference.
TEST(EncodedPolicyCuda, RawAndRansLanesInOneWarpEqualTheDenseReference) {
  for (DType t : {DType::u8, DType::u16}) {
    const ModelCounts mc = count_models(encode_cpu(raw_beside_rans(t), 512, encoded::Policy::fast));
    ASSERT_GT(mc.models[encoded::kRans], 0u) << dtype_name(t);
    ASSERT_GT(mc.models[encoded::kRaw], 0u) << dtype_name(t);
  }
  QGPU_REQUIRE_CUDA();
  std::vector<std::uint32_t> mixed, mixed_ones;
  for (std::uint32_t p = 0; p < 64; ++p)
    if (p % 4 < 2 || p % 8 == 3) {
      mixed.push_back(p);
      mixed_ones.push_back(p % 5 + 1);
    }
  for (DType t : {DType::u8, DType::u16}) gpu_sums_equal_dense(raw_beside_rans(t), mixed, mixed_ones);
}
