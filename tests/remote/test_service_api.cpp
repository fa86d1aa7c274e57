// The service's answers equal the library's on the same dataset (cpu backend).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "detector/virtual_detector.hpp"
#include "display/defaults.hpp"
#include "display/display.hpp"
#include "display/pattern.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "remote/encode.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

namespace {

template <class T> std::vector<T> as_vector(const std::string& body) {
  std::vector<T> v(body.size() / sizeof(T));
  std::memcpy(v.data(), body.data(), v.size() * sizeof(T));
  return v;
}

const char kPngSignature[] = "\x89PNG\r\n\x1a\n";

}  // namespace

TEST(RemoteApi, ListsDatasetsWithTheirDescription) {
  test::RunningServer srv;
  auto res = srv.client().Get("/api/datasets");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  const auto j = nlohmann::json::parse(res->body);
  ASSERT_EQ(j["datasets"].size(), 1u);
  const auto& d = j["datasets"][0];
  EXPECT_EQ(d["id"], "sample");
  EXPECT_EQ(d["shape"], nlohmann::json({8, 8, 32, 32}));
  EXPECT_EQ(d["dtype"], "uint16");
  EXPECT_EQ(d["backend"], "cpu");
  EXPECT_EQ(d["residency"], "host");
  EXPECT_EQ(d["representation"], "dense");
  EXPECT_EQ(d["storage_schema"], Dataset::kStorageSchema);
  EXPECT_TRUE(d.contains("provenance"));
  EXPECT_EQ(d["device"], -1);
  // placement and memory of the dataset, as /api/datasets reports them for every served dataset
  EXPECT_EQ(d["placement"]["device"], -1);
  EXPECT_EQ(d["placement"]["memory"], "host");
  EXPECT_EQ(d["placement"]["resident_bytes"], 8u * 8 * 32 * 32 * 2);
  EXPECT_EQ(d["placement"]["dense_bytes"], 8u * 8 * 32 * 32 * 2);
}

TEST(RemoteApi, VirtualBrightFieldBytesEqualTheLibrary) {
  test::RunningServer srv;
  auto cli = srv.client();
  auto res = cli.Get(srv.api("/virtual?kind=bf&format=u64"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "8,8");
  EXPECT_EQ(res->get_header_value("X-DType"), "uint64");
  EXPECT_FALSE(res->get_header_value("X-Compute-Ms").empty());
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), detector::bf(srv.dataset()).counts("test").data);

  res = cli.Get(srv.api("/virtual?kind=disk&cr=15.5&cc=16&r=5&format=u64"));
  ASSERT_TRUE(res);
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), detector::df(srv.dataset(), {15.5, 16}, 5).counts("test").data);

  res = cli.Get(srv.api("/virtual?kind=annulus&cr=16&cc=16&inner=8&outer=14&format=json"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto j = nlohmann::json::parse(res->body);
  const auto want = detector::adf(srv.dataset(), 8, 14, detector::Center{16, 16}).counts("test").data;
  ASSERT_EQ(j["data"].size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(j["data"][i].get<std::uint64_t>(), want[i]);
}

// scan_bin=b: the sums of b x b blocks of scan positions (added up here from the full answer), GET and POST; a bin
// that does not divide the 8x8 scan, or 0, is 400 naming it.
TEST(RemoteApi, ScanBinnedVirtualImagesAreTheBlockSums) {
  test::RunningServer srv;
  auto cli = srv.client();
  const auto full = detector::bf(srv.dataset()).counts("test").data;
  for (std::size_t b : {2, 4, 8}) {
    std::vector<std::uint64_t> want((8 / b) * (8 / b), 0);
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t c = 0; c < 8; ++c) want[(r / b) * (8 / b) + c / b] += full[r * 8 + c];
    auto res = cli.Get(srv.api("/virtual?kind=bf&format=u64&scan_bin=" + std::to_string(b)));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("X-Shape"), std::to_string(8 / b) + "," + std::to_string(8 / b));
    EXPECT_EQ(as_vector<std::uint64_t>(res->body), want) << b;
  }
  std::vector<std::uint8_t> mask(32 * 32, 0);
  for (std::size_t i = 0; i < mask.size(); i += 7) mask[i] = 1;
  const auto masked = detector::virtual_image(srv.dataset(), detector::from_weights(32, 32, {mask.begin(), mask.end()}))
                          .counts("test").data;
  std::vector<std::uint64_t> want(16, 0);
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t c = 0; c < 8; ++c) want[(r / 2) * 4 + c / 2] += masked[r * 8 + c];
  auto res = cli.Post(srv.api("/virtual?format=u64&dtype=uint8&scan_bin=2"),
                      std::string(mask.begin(), mask.end()), "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), want);
  for (const char* bad : {"3", "0", "16", "x"}) {
    res = cli.Get(srv.api(std::string("/virtual?kind=bf&format=u64&scan_bin=") + bad));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << bad << " " << res->body;
    EXPECT_NE(res->body.find("scan"), std::string::npos) << res->body;
  }
}

// /com?scan_bin=b: the CoM of b x b blocks of positions, the library's ComOptions::scan_bin answer, as f32 [2][r][c].
TEST(RemoteApi, ScanBinnedComIsTheLibrarysBinnedCom) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/com?format=f32&scan_bin=2"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "2,4,4");
  dpc::ComOptions o;
  o.scan_bin = 2;
  const dpc::ComResult c = dpc::center_of_mass(srv.dataset(), o);
  std::vector<float> want = c.com_row.data;
  want.insert(want.end(), c.com_col.data.begin(), c.com_col.data.end());
  EXPECT_EQ(as_vector<float>(res->body), want);
  res = srv.client().Get(srv.api("/com?format=f32&scan_bin=3"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
}

// /dpc and /idpc with scan_bin=b: the binned scan's CoM, centred, rotated (given here) and integrated: the library's
// chain on ComOptions::scan_bin; calibrated, the answer has the binned shape and says where its rotation came from.
TEST(RemoteApi, ScanBinnedDpcAndIdpcAreTheBinnedChain) {
  test::RunningServer srv;
  dpc::ComOptions o;
  o.scan_bin = 2;
  const auto [fr, fc] = dpc::rotate_field(dpc::centered_dpc(dpc::center_of_mass(srv.dataset(), o)), 30.0, true);
  auto res = srv.client().Get(srv.api("/dpc?format=f32&scan_bin=2&rotation=30&transpose=1"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "2,4,4");
  std::vector<float> want = fr.data;
  want.insert(want.end(), fc.data.begin(), fc.data.end());
  EXPECT_EQ(as_vector<float>(res->body), want);
  res = srv.client().Get(srv.api("/idpc?format=f32&scan_bin=2&rotation=30&transpose=1"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(as_vector<float>(res->body), dpc::idpc(fr, fc).data);
  res = srv.client().Get(srv.api("/dpc?format=json&scan_bin=2"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["row"]["rows"], 4);
  EXPECT_EQ(j["info"]["scan_bin"], 2);
  EXPECT_EQ(j["info"]["rotation"], "calibrated");
  EXPECT_EQ(srv.client().Get(srv.api("/idpc?format=f32&scan_bin=3"))->status, 400);
}

// The viewer's first look comes from here: the default ADF ring of the fit (the CLI's) and the default colormap,
// which is also that of a PNG asked without one.
TEST(RemoteApi, AnswersTheDefaultAdfRingAndColormap) {
  test::RunningServer srv;
  auto cli = srv.client();
  auto res = cli.Get(srv.api("/disk_fit"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const nlohmann::json disk = nlohmann::json::parse(res->body);
  const detector::AnnulusRadii ring = detector::default_adf_radii(srv.dataset());
  EXPECT_EQ(disk["adf_inner"].get<double>(), ring.inner);
  EXPECT_EQ(disk["adf_outer"].get<double>(), ring.outer);
  res = cli.Get("/api/datasets");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(nlohmann::json::parse(res->body)["defaults"]["colormap"], display::kImageColormap);
  auto plain = cli.Get(srv.api("/virtual?kind=bf&format=png"));
  auto named = cli.Get(srv.api(std::string("/virtual?kind=bf&format=png&colormap=") + display::kImageColormap));
  auto other = cli.Get(srv.api("/virtual?kind=bf&format=png&colormap=gray"));
  ASSERT_TRUE(plain && named && other);
  ASSERT_EQ(plain->status, 200) << plain->body;
  EXPECT_EQ(plain->body, named->body);
  EXPECT_NE(plain->body, other->body);
}

TEST(RemoteApi, PostedMaskEqualsVirtualImage) {
  test::RunningServer srv;
  std::vector<std::uint32_t> w(32 * 32, 0);
  for (std::size_t i = 0; i < w.size(); i += 3) w[i] = std::uint32_t(i % 5);
  nlohmann::json body = {{"weights", w}};
  auto res = srv.client().Post(srv.api("/virtual?format=u64"), body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto want = detector::virtual_image(srv.dataset(), detector::from_weights(32, 32, w)).counts("test").data;
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), want);
  // Same mask as raw little-endian uint32.
  std::string raw(w.size() * 4, '\0');
  std::memcpy(raw.data(), w.data(), raw.size());
  res = srv.client().Post(srv.api("/virtual?format=u64"), raw, "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(as_vector<std::uint64_t>(res->body), want);
}

TEST(RemoteApi, PngAnswersCarryThePngSignature) {
  test::RunningServer srv;
  auto cli = srv.client();
  for (const std::string q : {"/virtual?kind=bf&format=png&colormap=inferno", "/mean_pattern?format=png",
                              "/frame?row=1&col=2&format=png", "/com?format=png&component=col"}) {
    auto res = cli.Get(srv.api(q));
    ASSERT_TRUE(res) << q;
    ASSERT_EQ(res->status, 200) << q << ": " << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "image/png") << q;
    EXPECT_EQ(res->body.compare(0, 8, kPngSignature, 8), 0) << q;
  }
}

TEST(RemoteApi, MeanPatternPngShowsTheHaloByDefault) {
  test::RunningServer srv;
  auto cli = srv.client();
  auto res = cli.Get(srv.api("/mean_pattern?format=png"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const Image<float> mean = detector::mean_pattern(srv.dataset());
  // (the service writes colormap indices as a palette PNG of the map: display::render_indexed)
  EXPECT_EQ(res->body, remote::png_bytes(display::render_indexed(display::pattern_log(mean),
                                                                  display::pattern_display_options("inferno")),
                                         display::colormap("inferno")));
  auto plain = cli.Get(srv.api("/mean_pattern?format=png&scale=log&colormap=inferno"));
  ASSERT_TRUE(plain);
  display::DisplayOptions log_look;
  log_look.colormap = "inferno";
  log_look.scale = display::Scale::log;
  EXPECT_EQ(plain->body, remote::png_bytes(display::render_indexed(mean, log_look), display::colormap("inferno")));
}

TEST(RemoteApi, FrameEqualsDatasetRead) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/frame?row=3&col=5"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "32,32");
  EXPECT_EQ(res->get_header_value("X-DType"), "uint32");
  const HostArray4D h = srv.dataset().read({3, 5, 1, 1});
  const auto got = as_vector<std::uint32_t>(res->body);
  ASSERT_EQ(got.size(), 32u * 32u);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], h.as<std::uint16_t>()[i]) << i;
}

TEST(RemoteApi, MeanPatternAndComEqualTheLibrary) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/mean_pattern?format=f32"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Shape"), "32,32");
  EXPECT_EQ(as_vector<float>(res->body), detector::mean_pattern(srv.dataset()).data);
  res = srv.client().Get(srv.api("/com?format=f32"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Shape"), "2,8,8");
  const dpc::ComResult c = dpc::center_of_mass(srv.dataset());
  auto want = c.com_row.data;
  want.insert(want.end(), c.com_col.data.begin(), c.com_col.data.end());
  EXPECT_EQ(as_vector<float>(res->body), want);
  for (const std::string q : {"/dpc?format=json", "/idpc?format=f32", "/dpc?rotation=30&transpose=1&format=f32"}) {
    res = srv.client().Get(srv.api(q));
    ASSERT_TRUE(res) << q;
    EXPECT_EQ(res->status, 200) << q << ": " << res->body;
  }
  // A given rotation: the centred DPC rotated (and transposed) exactly as the library does it.
  const auto [fr, fc] = dpc::rotate_field(dpc::centered_dpc(c), 30.0, true);
  auto rotated = fr.data;
  rotated.insert(rotated.end(), fc.data.begin(), fc.data.end());
  for (int again = 0; again < 2; ++again) {  // twice: nothing kept from the first answer changes the second
    res = srv.client().Get(srv.api("/dpc?rotation=30&transpose=1&format=f32"));
    ASSERT_TRUE(res);
    EXPECT_EQ(as_vector<float>(res->body), rotated);
  }
  res = srv.client().Get(srv.api("/dpc?rotation=30&transpose=1&format=json"));
  ASSERT_TRUE(res);
  const auto info = nlohmann::json::parse(res->body).at("info");
  EXPECT_EQ(info.at("rotation"), "given");
  EXPECT_EQ(info.at("angle_deg"), 30.0);
  EXPECT_EQ(info.at("transpose"), true);
}

TEST(RemoteApi, WindowHoldsTheFramesExactlyBinned) {
  test::RunningServer srv;
  auto res = srv.client().Get(srv.api("/window?row0=2&col0=1&rows=3&cols=4&bin=2"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Shape"), "3,4,16,16");
  const auto got = as_vector<std::uint32_t>(res->body);
  const HostArray4D h = srv.dataset().read({2, 1, 3, 4});
  const std::uint16_t* d = h.as<std::uint16_t>();
  for (std::size_t f = 0; f < 12; ++f)
    for (std::size_t i = 0; i < 16; ++i)
      for (std::size_t j = 0; j < 16; ++j) {
        std::uint32_t want = 0;
        for (std::size_t a = 0; a < 2; ++a)
          for (std::size_t b = 0; b < 2; ++b) want += d[(f * 32 + 2 * i + a) * 32 + 2 * j + b];
        ASSERT_EQ(got[(f * 16 + i) * 16 + j], want);
      }
  res = srv.client().Get(srv.api("/browse_plan"));
  ASSERT_TRUE(res);
  const auto plan = nlohmann::json::parse(res->body);
  EXPECT_EQ(plan["detector_bins"], nlohmann::json({1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(plan["scan_bins"], nlohmann::json({1, 2, 4, 8}));
  EXPECT_EQ(plan["frame_bytes_by_detector_bin"]["2"], 16 * 16 * 4);
}

TEST(RemoteApi, ServesTheViewerFiles) {
  const auto dir = test::temp_dir() / "remote_web";
  std::filesystem::create_directories(dir);
  std::ofstream((dir / "index.html").string()) << "<!doctype html><title>qgpu</title>";
  remote::ServeOptions o;
  o.web_dir = dir.string();
  test::RunningServer srv(o);
  auto res = srv.client().Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("<title>qgpu</title>"), std::string::npos);
  res = srv.client().Get("/api/datasets");  // the API still answers under the mount point
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}
