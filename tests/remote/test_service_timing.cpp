// Server-Timing on the product routes (stages adding up to X-Compute-Ms), and the per-dataset caches of the DPC
// chain (centred DPC, calibrated field): kept answers equal the library's chain computed afresh (cpu backend).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

namespace {

using test::floats;

struct Entry {
  std::string name;
  double ms = 0;
  std::string dur;  // as written
};

// "name;dur=1.234, name2;dur=0.500" -> entries (ADD_FAILURE on a malformed entry).
std::vector<Entry> parse_server_timing(const std::string& header) {
  std::vector<Entry> out;
  std::stringstream ss(header);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::size_t b = item.find_first_not_of(' ');
    item = item.substr(b == std::string::npos ? item.size() : b);
    const std::size_t semi = item.find(";dur=");
    if (semi == std::string::npos || semi == 0) {
      ADD_FAILURE() << "malformed Server-Timing entry '" << item << "' in '" << header << "'";
      continue;
    }
    Entry e{item.substr(0, semi), 0, item.substr(semi + 5)};
    e.ms = std::stod(e.dur);
    out.push_back(e);
  }
  return out;
}

const std::set<std::string> kStages = {"compute", "transfer", "host", "prepare", "render", "encode", "other", "total"};

// The header's stages, checked: known names, each once, non-negative, "total" last and equal to X-Compute-Ms, the
// others adding up to it (each rounded to 0.001 ms).
std::set<std::string> checked_stages(const httplib::Result& res, const std::string& what) {
  std::set<std::string> names;
  const std::string header = res->get_header_value("Server-Timing");
  EXPECT_FALSE(header.empty()) << what;
  const std::vector<Entry> e = parse_server_timing(header);
  if (e.empty()) return names;
  EXPECT_EQ(e.back().name, "total") << what << ": " << header;
  EXPECT_EQ(e.back().dur, res->get_header_value("X-Compute-Ms")) << what << ": " << header;
  double sum = 0;
  for (std::size_t i = 0; i + 1 < e.size(); ++i) {
    EXPECT_TRUE(kStages.count(e[i].name)) << what << ": unknown stage " << e[i].name;
    EXPECT_TRUE(names.insert(e[i].name).second) << what << ": stage " << e[i].name << " twice";
    EXPECT_GE(e[i].ms, 0.0) << what;
    sum += e[i].ms;
  }
  EXPECT_NEAR(sum, e.back().ms, 0.0005 * double(e.size()) + 1e-9) << what << ": " << header;
  return names;
}

}  // namespace

TEST(RemoteTiming, ProductRoutesSplitTheirComputeTimeByStage) {
  test::RunningServer srv;
  auto cli = srv.client();
  struct Case {
    std::string query;
    std::set<std::string> required;
  };
  const std::vector<Case> cases = {
      {"/virtual?kind=bf&format=u64", {"compute", "encode"}},
      {"/virtual?kind=adf&inner=6&outer=15&format=png", {"compute", "render", "encode"}},
      {"/com?format=f32", {"encode"}},
      {"/dpc?format=f32", {"encode"}},
      {"/dpc?format=png&rotation=10", {"host", "render", "encode"}},
      {"/idpc?format=f32&rotation=10", {"host", "compute", "encode"}},
      {"/idpc?format=png", {"compute", "render", "encode"}},
      {"/ssb?format=f32&bin=2&defocus=50", {"prepare", "compute", "encode"}},  // the first of a bin builds G
  };
  for (const Case& c : cases) {
    auto res = cli.Get(srv.api(c.query));
    ASSERT_TRUE(res) << c.query;
    ASSERT_EQ(res->status, 200) << c.query << ": " << res->body;
    const std::set<std::string> names = checked_stages(res, c.query);
    for (const std::string& want : c.required) EXPECT_TRUE(names.count(want)) << c.query << " lacks stage " << want;
  }
  // The slider's next step reuses G: no prepare stage.
  auto res = cli.Get(srv.api("/ssb?format=f32&bin=2&defocus=80"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::set<std::string> names = checked_stages(res, "ssb second defocus");
  EXPECT_FALSE(names.count("prepare"));
  EXPECT_TRUE(names.count("compute"));
  // Routes that are not products carry no Server-Timing.
  res = cli.Get("/api/datasets");
  ASSERT_TRUE(res);
  EXPECT_TRUE(res->get_header_value("Server-Timing").empty());
}

// The calibrated DPC and iDPC are computed once per dataset; every answer (before and after a request with a given
// rotation, which must not replace the kept field) equals the library chain computed afresh.
TEST(RemoteTiming, KeptCalibratedFieldEqualsTheLibraryChain) {
  test::RunningServer srv;
  const Dataset& ds = srv.dataset();
  const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(ds));
  const dpc::RotationResult rot = dpc::calibrate_rotation(ds, d);
  const auto [fr, fc] = dpc::rotate_field(d, rot.angle_deg, rot.transpose);
  std::vector<float> want_field = fr.data;
  want_field.insert(want_field.end(), fc.data.begin(), fc.data.end());
  const std::vector<float> want_idpc = dpc::idpc(fr, fc).data;
  const auto [gr, gc] = dpc::rotate_field(d, 30, true);
  std::vector<float> want_given = gr.data;
  want_given.insert(want_given.end(), gc.data.begin(), gc.data.end());

  auto cli = srv.client();
  for (int round = 0; round < 2; ++round) {
    auto res = cli.Get(srv.api("/dpc?format=f32"));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(floats(res->body), want_field) << "round " << round;
    res = cli.Get(srv.api("/idpc?format=f32"));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(floats(res->body), want_idpc) << "round " << round;
    res = cli.Get(srv.api("/dpc?format=f32&rotation=30&transpose=1"));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(floats(res->body), want_given) << "round " << round;
  }
  // The JSON answer of the kept field still names the calibration.
  auto res = cli.Get(srv.api("/dpc?format=json"));
  ASSERT_TRUE(res);
  const auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["info"]["rotation"], "calibrated");
  EXPECT_DOUBLE_EQ(j["info"]["angle_deg"].get<double>(), rot.angle_deg);
}
