#include <algorithm>
// The encoded representation wired into Dataset and load (cpu backend): the same sample loaded dense and encoded
// gives the same counts and every query the same integers (exact) and the same float bits (same arithmetic).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/admission.hpp"
#include "io/hdf5/load.hpp"
#include "remote/frame_window.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "ssb/ssb.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

// 24 x 40 scan = 960 positions: two tiles of 512, the second short; 20 x 24 detector (BF disk radius 20/6).
sample::SampleSpec spec(DType t = DType::u16) {
  sample::SampleSpec s;
  s.scan_rows = 24;
  s.scan_cols = 40;
  s.det_rows = 20;
  s.det_cols = 24;
  s.dtype = t;
  s.threads = 2;
  return s;
}

io::LoadOptions opts(const std::string& representation, const std::string& decoder = "auto") {
  io::LoadOptions o;
  o.backend = "cpu";
  o.representation = representation;
  o.decoder = decoder;
  return o;
}

std::vector<std::uint8_t> bytes(const HostArray4D& h) { return {h.bytes.begin(), h.bytes.end()}; }

// Loaded once per process: the u16 sample dense and encoded.
struct Pair {
  Dataset dense, enc;
};
const Pair& pair() {
  static const Pair p = [] {
    const std::string path = test::temp_path("u16.h5");  // per test: ctest runs tests in parallel processes
    sample::write_sample(path, spec());
    return Pair{io::load(path, opts("dense")), io::load(path, opts("encoded"))};
  }();
  return p;
}

void expect_same_image(const Image<std::uint64_t>& a, const Image<std::uint64_t>& b, const std::string& what) {
  EXPECT_EQ(a.rows, b.rows) << what;
  EXPECT_EQ(a.cols, b.cols) << what;
  EXPECT_EQ(a.data, b.data) << what;
  std::uint64_t total = 0;
  for (auto v : a.data) total += v;
  EXPECT_GT(total, 0u) << what << ": a query of nothing proves nothing";
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

}  // namespace

TEST(DatasetEncoded, LoadsEveryDtypeWithTheSameCounts) {
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    const std::string path = test::temp_path(dtype_name(t) + ".h5");
    sample::write_sample(path, spec(t));
    const Dataset d = io::load(path, opts("dense"));
    for (const char* decoder : {"quantem", "hdf5"}) {
      const Dataset e = io::load(path, opts("encoded", decoder));
      EXPECT_EQ(e.representation(), "encoded");
      EXPECT_EQ(e.dtype(), t);
      EXPECT_EQ(e.shape(), d.shape());
      EXPECT_EQ(bytes(e.read()), bytes(d.read())) << dtype_name(t) << " " << decoder;
      const Region sr{3, 5, 7, 11}, dr{2, 4, 9, 13};
      EXPECT_EQ(bytes(e.read(sr, dr)), bytes(d.read(sr, dr))) << dtype_name(t) << " " << decoder;
    }
  }
}

TEST(DatasetEncoded, CropAndBinningMatchDense) {
  const std::string path = test::temp_path("crop.h5");
  sample::write_sample(path, spec());
  for (std::size_t bin : {1, 2}) {
    io::LoadOptions d = opts("dense"), e = opts("encoded");
    for (io::LoadOptions* o : {&d, &e}) {
      o->scan_region = {2, 4, 20, 32};
      o->detector_region = {2, 2, 16, 20};
      o->bin_scan = bin;
      o->bin_detector = bin;
      o->staging_bytes = 1;  // one output row per batch: many appends of any size
    }
    const Dataset a = io::load(path, d), b = io::load(path, e);
    EXPECT_EQ(b.representation(), "encoded");
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(b.dtype(), a.dtype());
    EXPECT_EQ(bytes(b.read()), bytes(a.read())) << "bin " << bin;
  }
}

TEST(DatasetEncoded, DescribesItsRepresentation) {
  const Dataset& e = pair().enc;
  const Dataset& d = pair().dense;
  EXPECT_EQ(d.representation(), "dense");
  EXPECT_EQ(e.storage_schema().rfind("encoded-v1", 0), 0u);
  EXPECT_EQ(d.storage_schema().rfind("dense-frames-v1", 0), 0u);
  ASSERT_NE(e.encoded(), nullptr);
  EXPECT_EQ(d.encoded(), nullptr);
  EXPECT_EQ(e.dense_bytes(), std::size_t(24) * 40 * 20 * 24 * 2);
  EXPECT_EQ(d.resident_bytes(), d.dense_bytes());
  EXPECT_EQ(e.resident_bytes(), e.encoded()->resident_bytes());
  EXPECT_LT(e.resident_bytes(), e.dense_bytes());  // sparse diffraction patterns compress
  const nlohmann::json j = describe(e);
  EXPECT_EQ(j["representation"], "encoded");
  EXPECT_EQ(j["resident_bytes"], e.resident_bytes());
  EXPECT_EQ(j["dense_bytes"], e.dense_bytes());
  const nlohmann::json p = e.provenance().to_json();
  EXPECT_EQ(p["representation"], "encoded");
  EXPECT_EQ(p["resident_bytes"], e.resident_bytes());
  EXPECT_EQ(p["dense_bytes"], e.dense_bytes());
  EXPECT_EQ(p["parameters"]["admission"]["representation"], "encoded");
  EXPECT_EQ(d.provenance().to_json()["representation"], "dense");
  EXPECT_EQ(d.provenance().to_json()["resident_bytes"], d.dense_bytes());
  try {
    (void)e.host_bytes();
    ADD_FAILURE() << "host_bytes of an encoded dataset";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("encoded"), std::string::npos) << err.what();
  }
  EXPECT_THROW((void)e.device_buffer(), Error);
  EXPECT_EQ(e.to_host().encoded(), e.encoded());  // already on the host: the same resident
  // Encoding a dense dataset in memory gives the same counts.
  const Dataset again = d.to_encoded(128);
  EXPECT_EQ(again.representation(), "encoded");
  EXPECT_EQ(bytes(again.read()), bytes(d.read()));
}

TEST(DatasetEncoded, VirtualDetectorsAreIdentical) {
  const Dataset& d = pair().dense;
  const Dataset& e = pair().enc;
  expect_same_image(detector::bf(e), detector::bf(d), "bf (fitted disk)");
  const detector::Center c{9.5, 11.5};
  expect_same_image(detector::bf(e, 3.5, c), detector::bf(d, 3.5, c), "bf");
  expect_same_image(detector::adf(e, 4, 9), detector::adf(d, 4, 9), "adf");
  expect_same_image(detector::df(e, {4, 5}, 3), detector::df(d, {4, 5}, 3), "df");
  expect_same_image(detector::sum_pattern(e), detector::sum_pattern(d), "sum pattern");
  expect_same_image(detector::max_pattern(e), detector::max_pattern(d), "max pattern");
  const detector::DiskFit fd = detector::fit_bf_disk(d), fe = detector::fit_bf_disk(e);
  EXPECT_EQ(fe.center_row, fd.center_row);
  EXPECT_EQ(fe.radius, fd.radius);
  expect_same_bits(detector::mean_pattern(e).data, detector::mean_pattern(d).data, "mean pattern");

  // Every strategy with integer weights: sparse, total-minus-complement (uniform weight 7 over > half), dense.
  const std::size_t P = 20 * 24;
  std::vector<std::uint32_t> sparse(P, 0), uniform(P, 7), weighted(P, 0);
  for (std::size_t i = 0; i < P; i += 5) sparse[i] = std::uint32_t(1 + i % 13);
  for (std::size_t i = 0; i < P; i += 9) uniform[i] = 0;
  for (std::size_t i = 0; i < P; ++i) weighted[i] = i % 4 == 0 ? 0 : std::uint32_t(1000 + i);
  // A uniform mask is summed over the cheaper side's streams (cost per pixel min(sum over frames, frames)):
  // its own pixels', or the others' as total minus complement. Expected from the dense sum pattern here.
  // bright_out leaves out the brightest 10% of the pixels (expensive complement); bright_in holds just those
  // (a bright-field disk: its complement is cheaper although it covers less than half the detector).
  const std::vector<std::uint64_t> pattern = detector::sum_pattern(d).counts("test").data;
  const std::uint64_t frames = d.shape().scan_rows * d.shape().scan_cols;
  const auto uniform_strategy = [&](const std::vector<std::uint32_t>& w) {
    std::uint64_t own = 0, rest = 0, n = 0;
    for (std::size_t i = 0; i < P; ++i) {
      (w[i] ? own : rest) += std::min<std::uint64_t>(pattern[i], frames);
      n += w[i] != 0;
    }
    const bool planned_own = 2 * n <= P;
    if (own < rest || (own == rest && planned_own))
      return std::string(planned_own ? "encoded sparse" : "encoded sparse (mask streams cheaper than the complement's)");
    return std::string(planned_own ? "encoded total-minus-complement (complement streams cheaper than the mask's)"
                                   : "encoded total-minus-complement");
  };
  std::vector<std::uint32_t> order(P), bright_out(P, 3), bright_in(P, 0);
  for (std::size_t i = 0; i < P; ++i) order[i] = std::uint32_t(i);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return pattern[a] > pattern[b]; });
  for (std::size_t k = 0; k < P / 10; ++k) {
    bright_out[order[k]] = 0;
    bright_in[order[k]] = 5;
  }
  const std::vector<std::pair<std::vector<std::uint32_t>, std::string>> masks = {
      {sparse, "encoded sparse"},
      {uniform, uniform_strategy(uniform)},
      {bright_out, uniform_strategy(bright_out)},
      {bright_in, uniform_strategy(bright_in)},
      {weighted, "encoded dense"}};
  // Each side taken for each plan at least once:
  EXPECT_EQ(masks[2].second, "encoded sparse (mask streams cheaper than the complement's)");
  EXPECT_EQ(masks[3].second, "encoded total-minus-complement (complement streams cheaper than the mask's)");
  EXPECT_EQ(uniform_strategy(uniform), "encoded total-minus-complement");
  for (const auto& [w, strategy] : masks) {
    const detector::Mask m = detector::from_weights(20, 24, w);
    const Image<std::uint64_t> a = detector::virtual_image(e, m), b = detector::virtual_image(d, m);
    expect_same_image(a, b, strategy);
    EXPECT_EQ(a.provenance.parameters["strategy"], strategy);
    EXPECT_EQ(a.provenance.representation, "encoded");
    EXPECT_EQ(a.provenance.to_json()["resident_bytes"], e.resident_bytes());
    EXPECT_EQ(b.provenance.representation, "dense");
  }
}

TEST(DatasetEncoded, CenterOfMassAndDpcAreBitIdentical) {
  const Dataset& d = pair().dense;
  const Dataset& e = pair().enc;
  const dpc::ComResult a = dpc::center_of_mass(e), b = dpc::center_of_mass(d);
  expect_same_bits(a.com_row.data, b.com_row.data, "com row");
  expect_same_bits(a.com_col.data, b.com_col.data, "com col");
  EXPECT_EQ(a.empty_frames, b.empty_frames);
  EXPECT_EQ(a.provenance.representation, "encoded");
  dpc::ComOptions masked;
  masked.mask.assign(20 * 24, 0);
  for (std::size_t i = 0; i < masked.mask.size(); i += 2) masked.mask[i] = 1;
  const dpc::ComResult am = dpc::center_of_mass(e, masked), bm = dpc::center_of_mass(d, masked);
  expect_same_bits(am.com_row.data, bm.com_row.data, "masked com row");
  expect_same_bits(am.com_col.data, bm.com_col.data, "masked com col");
  EXPECT_NE(am.com_col.data, a.com_col.data);  // the mask matters
  const dpc::DpcResult da = dpc::centered_dpc(a), db = dpc::centered_dpc(b);
  expect_same_bits(da.dpc_row.data, db.dpc_row.data, "dpc row");
  EXPECT_EQ(da.provenance.representation, "encoded");
}

// The encoded CoM's sums take the cheaper side (EncodedResident::moment_sums): the mask's own streams, or the stored
// totals and moment totals (S, Sr, Sc over every pixel, computed once) minus the complement's; without a mask the
// totals alone. Each way bit for bit the dense reference's maps, whichever is asked first (the moment totals are
// computed by the first query that needs them).
TEST(DatasetEncoded, CenterOfMassTakesTheCheaperSideOfTheMask) {
  const Dataset& d = pair().dense;
  const Dataset e = pair().dense.to_encoded(128);  // a fresh resident: its moment totals not yet computed
  const std::size_t P = 20 * 24;
  const std::vector<std::uint64_t> pattern = detector::sum_pattern(d).counts("test").data;
  std::vector<std::uint32_t> order(P);
  for (std::size_t i = 0; i < P; ++i) order[i] = std::uint32_t(i);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return pattern[a] > pattern[b]; });
  dpc::ComOptions bright, dim, none;  // the brightest quarter (a bright-field disk: its complement is cheaper), the rest
  bright.mask.assign(P, 0);
  dim.mask.assign(P, 1);
  for (std::size_t k = 0; k < P / 4; ++k) {
    bright.mask[order[k]] = 1;
    dim.mask[order[k]] = 0;
  }
  const std::uint64_t frames = d.shape().frames();
  const auto side = [&](const dpc::ComOptions& o) {  // cost of a pixel's streams ~ min(its total, frames); ties: own
    std::uint64_t own = 0, rest = 0;
    for (std::size_t i = 0; i < P; ++i) (o.mask[i] ? own : rest) += std::min<std::uint64_t>(pattern[i], frames);
    return std::string(rest < own ? "encoded totals minus complement" : "encoded masked sums");
  };
  // A single dim pixel: its own stream is cheaper.
  dpc::ComOptions one;
  one.mask.assign(P, 0);
  one.mask[order[P - 1]] = 1;
  EXPECT_EQ(side(bright), "encoded totals minus complement");
  EXPECT_EQ(side(one), "encoded masked sums");
  const std::size_t before = e.resident_bytes();
  const std::vector<std::pair<const dpc::ComOptions*, std::string>> cases = {
      {&bright, side(bright)}, {&dim, side(dim)}, {&one, side(one)}, {&none, "encoded totals"}, {&bright, side(bright)}};
  for (const auto& [o, strategy] : cases) {
    SCOPED_TRACE(strategy);
    const dpc::ComResult a = dpc::center_of_mass(e, *o), b = dpc::center_of_mass(d, *o);
    expect_same_bits(a.com_row.data, b.com_row.data, "com row");
    expect_same_bits(a.com_col.data, b.com_col.data, "com col");
    EXPECT_EQ(a.empty_frames, b.empty_frames);
    EXPECT_EQ(a.provenance.parameters.value("strategy", ""), strategy);
  }
  // The moment totals are part of the resident's bytes once computed (3 uint64 per frame).
  EXPECT_EQ(e.resident_bytes(), before + 3 * 8 * d.shape().frames());
}

TEST(DatasetEncoded, FramesAndWindowsAreIdentical) {
  const Dataset& d = pair().dense;
  const Dataset& e = pair().enc;
  EXPECT_EQ(remote::read_frame_values(e, 13, 37).counts("test").data, remote::read_frame_values(d, 13, 37).counts("test").data);
  const remote::FrameWindow a = remote::read_window(e, {4, 8, 8, 16}, 2, std::size_t(1) << 30);
  const remote::FrameWindow b = remote::read_window(d, {4, 8, 8, 16}, 2, std::size_t(1) << 30);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.counts, b.counts);
}

TEST(DatasetEncoded, SsbGathersTheSameDisk) {
  const Dataset& d = pair().dense;
  const Dataset& e = pair().enc;
  const ssb::SsbParams p = ssb::params_from_metadata(d);
  const ssb::SsbResult a = ssb::reconstruct(e, p), b = ssb::reconstruct(d, p);
  expect_same_bits(a.phase.data, b.phase.data, "ssb phase");
  EXPECT_EQ(a.provenance.representation, "encoded");
  const ssb::SsbResult pa = ssb::preview(e, p, 2), pb = ssb::preview(d, p, 2);
  expect_same_bits(pa.phase.data, pb.phase.data, "ssb preview");
}

TEST(DatasetEncoded, AutoPicksEncodedWhenDenseDoesNotFit) {
  // 64 x 64 scan of 16 x 16 frames (4096 positions = 8 tiles): encoded needs less than dense with small staging.
  sample::SampleSpec s = spec();
  s.scan_rows = s.scan_cols = 64;
  s.det_rows = s.det_cols = 16;
  const std::string path = test::temp_path("admit.h5");
  sample::write_sample(path, s);
  io::LoadOptions o = opts("auto");
  o.staging_bytes = 1;  // one scan row per batch
  const io::LoadPlan plan = io::plan_load(path, o);
  const std::size_t file = io::source_file_bytes(plan);
  const io::Admission big = io::admit(plan, Backend::cpu, "auto", 0.8, 0, std::size_t(1) << 40, file);
  EXPECT_EQ(big.representation, "dense");
  EXPECT_EQ(big.limit_bytes, std::size_t(0.8 * double(std::size_t(1) << 40)));
  const std::size_t dense_need = big.dense_bytes + big.dense_scratch;
  const std::size_t enc_need = big.encoded_estimate + big.encoded_scratch;
  ASSERT_LT(enc_need, dense_need) << "the sample should compress";
  const std::size_t between = (enc_need + dense_need) / 2;
  EXPECT_EQ(io::admit(plan, Backend::cpu, "auto", 0.8, between, 0, file).representation, "encoded");
  EXPECT_THROW(io::admit(plan, Backend::cpu, "dense", 0.8, between, 0, file), InvalidArgument);
  EXPECT_EQ(io::admit(plan, Backend::cpu, "encoded", 0.8, between, 0, file).representation, "encoded");
  // A tiny fraction of the free memory: same decision.
  EXPECT_EQ(io::admit(plan, Backend::cpu, "auto", 1e-3, 0, between * 1000, file).representation, "encoded");

  o.admission_limit_bytes = between;
  const Dataset e = io::load(path, o);
  EXPECT_EQ(e.representation(), "encoded");
  EXPECT_EQ(e.provenance().parameters["admission"]["limit_bytes"], between);
  o.representation = "dense";
  o.admission_limit_bytes = 0;
  EXPECT_EQ(bytes(e.read()), bytes(io::load(path, o).read()));
  EXPECT_EQ(detector::bf(e).counts("test").data, detector::bf(io::load(path, o)).counts("test").data);
}

TEST(DatasetEncoded, RefusesBeforeAnyWorkWhenNothingFits) {
  const std::string path = test::temp_path("refuse.h5");
  sample::write_sample(path, spec());
  for (const char* rep : {"auto", "dense", "encoded"}) {
    io::LoadOptions o = opts(rep);
    o.admission_fraction = 1e-12;  // of the available host memory: a few bytes
    bool progressed = false;
    o.progress = [&](double) { progressed = true; };
    try {
      (void)io::load(path, o);
      ADD_FAILURE() << rep << ": loaded under a limit of a few bytes";
    } catch (const InvalidArgument& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find("cannot load"), std::string::npos) << m;
      EXPECT_NE(m.find("GiB"), std::string::npos) << m;  // estimated sizes and the limit
      EXPECT_NE(m.find("free host memory"), std::string::npos) << m;
      if (std::string(rep) == "auto") EXPECT_NE(m.find("fits neither"), std::string::npos) << m;
    }
    EXPECT_FALSE(progressed) << rep << ": work started before the refusal";
  }
  io::LoadOptions bad = opts("sparse");
  EXPECT_THROW(io::load(path, bad), InvalidArgument);
  io::LoadOptions frac = opts("auto");
  frac.admission_fraction = 1.5;
  EXPECT_THROW(io::load(path, frac), InvalidArgument);
}
