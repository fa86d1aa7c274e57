// Cache products equal the same products computed from the resident dataset (CPU backend): integers exactly,
// floats within 1e-6; independent references for frame totals and the sum pattern (raw counts).
#include <gtest/gtest.h>

#include <cmath>

#include "cache/cache.hpp"
#include "cache/products.hpp"
#include "cache_fixtures.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"

using namespace qgpu;

namespace {

class CacheProducts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    source_ = new std::string((test::temp_dir() / "cache_products_source.h5").string());
    cache_path_ = new std::string((test::temp_dir() / "cache_products.h5").string());
    sample::write_sample(*source_, test::small_cache_spec());
    ds_ = new Dataset(test::load_cpu(*source_));
    cache::BuildOptions o;
    o.bf_radii = {5};
    o.adf_ranges = {{10, 20}};
    names_ = new std::vector<std::string>(cache::build(*ds_, *cache_path_, o));
  }
  static void TearDownTestSuite() {
    delete ds_;
    delete names_;
  }
  static std::string* source_;
  static std::string* cache_path_;
  static Dataset* ds_;
  static std::vector<std::string>* names_;
};
std::string* CacheProducts::source_ = nullptr;
std::string* CacheProducts::cache_path_ = nullptr;
Dataset* CacheProducts::ds_ = nullptr;
std::vector<std::string>* CacheProducts::names_ = nullptr;

void expect_equal(const Image<std::uint64_t>& a, const Image<std::uint64_t>& b, const char* what) {
  ASSERT_EQ(a.rows, b.rows) << what;
  ASSERT_EQ(a.cols, b.cols) << what;
  EXPECT_EQ(a.data, b.data) << what;
}

void expect_near(const Image<float>& a, const Image<float>& b, const char* what) {
  ASSERT_EQ(a.rows, b.rows) << what;
  ASSERT_EQ(a.cols, b.cols) << what;
  double worst = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) worst = std::max(worst, std::abs(double(a.data[i]) - b.data[i]));
  EXPECT_LE(worst, 1e-6) << what;
}

}  // namespace

TEST_F(CacheProducts, ListsEveryProduct) {
  const cache::Cache c = cache::open(*cache_path_);
  EXPECT_EQ(c.format_version(), 1);
  for (const char* n : {"sum_pattern", "mean_pattern", "frame_totals", "bf", "abf", "adf", "bf_r5", "adf_10_20",
                        "com_row", "com_col", "dpc_row", "dpc_col", "rotation", "field_row", "field_col", "idpc"})
    EXPECT_TRUE(c.has(n)) << n;
  EXPECT_EQ(c.products().size(), 16u);
  EXPECT_EQ(names_->size(), 16u);
  EXPECT_EQ(c.dtype("bf"), "uint64");
  EXPECT_EQ(c.dtype("idpc"), "float32");
  EXPECT_EQ(c.dtype("rotation"), "float64");
}

TEST_F(CacheProducts, PatternsAndTotalsMatchRawCounts) {
  const cache::Cache c = cache::open(*cache_path_);
  const Shape4D& s = ds_->shape();
  const auto* counts = reinterpret_cast<const std::uint16_t*>(ds_->host_bytes().data());
  const std::size_t fp = s.det_rows * s.det_cols, frames = s.scan_rows * s.scan_cols;
  std::vector<std::uint64_t> sum(fp, 0), totals(frames, 0);
  for (std::size_t f = 0; f < frames; ++f)
    for (std::size_t k = 0; k < fp; ++k) {
      sum[k] += counts[f * fp + k];
      totals[f] += counts[f * fp + k];
    }
  const Image<std::uint64_t> cs = c.u64("sum_pattern"), ct = c.u64("frame_totals");
  EXPECT_EQ(cs.rows, s.det_rows);
  EXPECT_EQ(cs.data, sum);
  EXPECT_EQ(ct.rows, s.scan_rows);
  EXPECT_EQ(ct.cols, s.scan_cols);
  EXPECT_EQ(ct.data, totals);
  expect_near(c.f32("mean_pattern"), detector::mean_pattern(*ds_), "mean_pattern");
}

TEST_F(CacheProducts, VirtualDetectorsMatchTheResident) {
  const cache::Cache c = cache::open(*cache_path_);
  const detector::DiskFit fit = detector::fit_bf_disk(*ds_);
  const cache::Geometry& g = c.geometry();
  EXPECT_EQ(g.disk_center_row, fit.center_row);
  EXPECT_EQ(g.disk_center_col, fit.center_col);
  EXPECT_EQ(g.disk_radius, fit.radius);
  EXPECT_EQ(g.scan_rows, 12u);
  EXPECT_EQ(g.det_cols, 48u);
  EXPECT_DOUBLE_EQ(g.calibration.at("energy_kev").get<double>(), 300.0);
  const detector::Center ctr{fit.center_row, fit.center_col};
  const double R = fit.radius;
  ASSERT_GT(R, 4);
  expect_equal(c.u64("bf"), detector::bf(*ds_, R, ctr), "bf");
  expect_equal(c.u64("abf"), detector::adf(*ds_, 0.5 * R, R, ctr), "abf");
  const double edge = std::min({fit.center_row, fit.center_col, 47 - fit.center_row, 47 - fit.center_col});
  expect_equal(c.u64("adf"), detector::adf(*ds_, 1.2 * R, std::min(3 * R, edge), ctr), "adf");
  expect_equal(c.u64("bf_r5"), detector::bf(*ds_, 5.0, ctr), "bf_r5");
  expect_equal(c.u64("adf_10_20"), detector::adf(*ds_, 10, 20, ctr), "adf_10_20");
  EXPECT_EQ(c.detector("abf").at("inner").get<double>(), 0.5 * R);
  EXPECT_EQ(c.find_disk(5.0), "bf_r5");
  EXPECT_EQ(c.find_disk(R), "bf");
  EXPECT_EQ(c.find_annulus(10, 20), "adf_10_20");
  EXPECT_EQ(c.find_annulus(10, 21), "");
  const double elsewhere[2] = {1.0, 1.0};
  EXPECT_EQ(c.find_disk(5.0, elsewhere), "");
}

TEST_F(CacheProducts, DpcChainMatchesTheResident) {
  const cache::Cache c = cache::open(*cache_path_);
  const dpc::ComResult com = dpc::center_of_mass(*ds_);
  expect_near(c.f32("com_row"), com.com_row, "com_row");
  expect_near(c.f32("com_col"), com.com_col, "com_col");
  const dpc::DpcResult d = dpc::centered_dpc(com);
  expect_near(c.f32("dpc_row"), d.dpc_row, "dpc_row");
  expect_near(c.f32("dpc_col"), d.dpc_col, "dpc_col");
  const dpc::RotationResult rot = dpc::calibrate_rotation(d);
  const nlohmann::json r = c.rotation();
  EXPECT_NEAR(r.at("angle_deg").get<double>(), rot.angle_deg, 1e-9);
  EXPECT_EQ(r.at("transpose").get<bool>(), rot.transpose);
  const Image<double> scan = c.f64("rotation");
  EXPECT_EQ(scan.rows, 2u);
  EXPECT_EQ(scan.data, rot.curl_by_angle);
  EXPECT_NEAR(r.at("curl_rms").get<double>(), rot.curl_rms, 1e-9);
  auto [fr, fc] = dpc::rotate_field(d, rot.angle_deg, rot.transpose);
  expect_near(c.f32("field_row"), fr, "field_row");
  expect_near(c.f32("field_col"), fc, "field_col");
  expect_near(c.f32("idpc"), dpc::idpc(fr, fc), "idpc");
}

TEST_F(CacheProducts, EveryProductCarriesProvenance) {
  const cache::Cache c = cache::open(*cache_path_);
  for (const std::string& n : c.products()) {
    const nlohmann::json p = c.provenance(n);
    ASSERT_TRUE(p.is_object()) << n;
    EXPECT_FALSE(p.value("operation", "").empty()) << n;
    EXPECT_EQ(p.value("backend", ""), "cpu") << n;
  }
  EXPECT_EQ(c.provenance("frame_totals").at("operation"), "detector.frame_totals");
  EXPECT_EQ(c.provenance("idpc").at("operation"), c.f32("idpc").provenance.operation);
  EXPECT_EQ(c.u64("bf").provenance.parameters.at("cache").at("product"), "/virtual/bf");
  EXPECT_EQ(c.geometry().provenance.at("operation"), "detector.fit_bf_disk");
  EXPECT_EQ(c.root_attributes().at("cache_format_version").get<int>(), 1);
  EXPECT_EQ(c.root_attributes().at("dataset").at("shape")[0].get<int>(), 12);
}

TEST(CacheRadii, DerivedFromTheDiskAndTheEdge) {
  const cache::DerivedRadii r = cache::derive_radii(8, 23.5, 23.5, 48, 48);
  EXPECT_EQ(r.bf, 8);
  EXPECT_EQ(r.abf_inner, 4);
  EXPECT_EQ(r.abf_outer, 8);
  EXPECT_DOUBLE_EQ(r.adf_inner, 9.6);
  EXPECT_EQ(r.adf_outer, 23.5);  // edge before 3R = 24
  EXPECT_TRUE(r.adf_possible);
  EXPECT_EQ(cache::derive_radii(6, 23.5, 23.5, 48, 48).adf_outer, 18);
  EXPECT_FALSE(cache::derive_radii(14, 15.5, 15.5, 32, 32).adf_possible);  // 1.2R = 16.8 beyond the edge 15.5
  EXPECT_EQ(cache::bf_name(12.5), "bf_r12.5");
  EXPECT_EQ(cache::adf_name(24, 46), "adf_24_46");
}
