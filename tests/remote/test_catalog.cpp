#include <filesystem>
// Loading the served datasets: ids from file stems, made unique; backend auto never falls back to cpu.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "remote/catalog.hpp"
#include "remote/http_error.hpp"
#include "remote/server.hpp"
#include "service_fixture.hpp"

using namespace qgpu;

TEST(RemoteCatalog, IdsComeFromFileStemsAndAreUnique) {
  remote::CatalogOptions o;
  o.backend = "cpu";
  o.devices = {0, 1};  // ignored with the cpu backend
  const remote::Catalog c = remote::load_catalog({test::remote_sample_path(), test::remote_sample_path()}, o);
  ASSERT_EQ(c.all().size(), 2u);
  const std::string stem = std::filesystem::path(test::remote_sample_path()).stem().string();
  EXPECT_EQ(c.all()[0]->id, stem);
  EXPECT_EQ(c.all()[1]->id, stem + "-2");
  EXPECT_EQ(c.all()[1]->device, -1);
  EXPECT_EQ(&c.get(stem + "-2"), c.all()[1].get());
  try {
    c.get("other");
    FAIL() << "expected HttpError";
  } catch (const remote::HttpError& e) {
    EXPECT_EQ(e.status, 404);
    EXPECT_NE(std::string(e.what()).find("known: " + stem + ", " + stem + "-2"), std::string::npos);
  }
  EXPECT_EQ(remote::describe_served(*c.all()[0])["file"], test::remote_sample_path());
}

TEST(RemoteCatalog, AutoBackendNeedsAGpu) {
  if (detect().cuda_available) GTEST_SKIP() << "this machine has a GPU: auto resolves to cuda";
  EXPECT_THROW(remote::load_catalog({test::remote_sample_path()}, {}), BackendUnavailable);
}

TEST(RemoteCatalog, MissingFileIsAnIoError) {
  remote::CatalogOptions o;
  o.backend = "cpu";
  EXPECT_THROW(remote::load_catalog({"/nonexistent/file.h5"}, o), IoError);
}

// A file that segfaults HDF5 1.10.8 while its metadata is parsed (tests/fuzz/known_hdf5_crashes/): the service is
// refused it with a FormatError naming the file and the signal, and keeps running.
TEST(RemoteCatalog, FileThatCrashesHdf5IsAFormatError) {
  remote::CatalogOptions o;
  o.backend = "cpu";
  const std::string crash = std::string(QGPU_SOURCE_DIR) + "/tests/fuzz/known_hdf5_crashes/local_heap_segv_h5lexists.h5";
  try {
    remote::load_catalog({test::remote_sample_path(), crash}, o);
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("HDF5 library crashed parsing '" + crash + "' (signal 11"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(remote::load_catalog({test::remote_sample_path()}, o).all().size(), 1u);  // still serving
}

TEST(RemoteCatalog, ServesEncodedDatasetsWithTheSameFrames) {
  remote::CatalogOptions o;
  o.backend = "cpu";
  o.load.representation = "encoded";
  const remote::Catalog enc = remote::load_catalog({test::remote_sample_path()}, o);
  o.load.representation = "dense";
  const remote::Catalog dense = remote::load_catalog({test::remote_sample_path()}, o);
  const nlohmann::json j = remote::describe_served(*enc.all()[0]);
  EXPECT_EQ(j["representation"], "encoded");
  EXPECT_LT(j["resident_bytes"].get<std::size_t>(), j["dense_bytes"].get<std::size_t>());
  EXPECT_EQ(remote::describe_served(*dense.all()[0])["representation"], "dense");
  EXPECT_EQ(enc.all()[0]->ds.read({1, 2, 3, 4}).bytes, dense.all()[0]->ds.read({1, 2, 3, 4}).bytes);
}

TEST(RemoteCatalog, RawFilesTakeTheDevicesRoundRobinAndCachesTakeNoTurn) {
  // files: raw, cache, raw, raw, cache, raw over devices 2,5
  const std::vector<bool> is_cache = {false, true, false, false, true, false};
  EXPECT_EQ(remote::place_files(is_cache, {2, 5}, true, 0), (std::vector<int>{2, -1, 5, 2, -1, 5}));
  EXPECT_EQ(remote::place_files(is_cache, {}, true, 3), (std::vector<int>{3, -1, 3, 3, -1, 3}));  // the current one
  EXPECT_EQ(remote::place_files(is_cache, {2, 5}, false, -1), std::vector<int>(6, -1));          // cpu: no device
}

TEST(RemoteCatalog, DatasetsReportTheirPlacementAndMemory) {
  remote::CatalogOptions o;
  o.backend = "cpu";
  const remote::Catalog c = remote::load_catalog({test::remote_sample_path()}, o);
  const nlohmann::json p = remote::describe_served(*c.all()[0])["placement"];
  EXPECT_EQ(p["device"], -1);
  EXPECT_EQ(p["memory"], "host");
  EXPECT_EQ(p["backend"], "cpu");
  EXPECT_EQ(p["resident_bytes"].get<std::size_t>(), c.all()[0]->ds.resident_bytes());
  EXPECT_EQ(p["dense_bytes"].get<std::size_t>(), c.all()[0]->ds.dense_bytes());
  EXPECT_GE(p["admission_limit_bytes"].get<std::size_t>(), c.all()[0]->ds.resident_bytes());
  EXPECT_GT(p["admission_free_bytes"].get<std::size_t>(), 0u);
}

TEST(RemoteCatalog, AdmissionRefusesWhatDoesNotFit) {
  remote::CatalogOptions o;
  o.backend = "cpu";
  o.load.admission_limit_bytes = 1024;  // far below the sample
  try {
    remote::load_catalog({test::remote_sample_path()}, o);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("under the limit"), std::string::npos) << e.what();
  }
}

TEST(RemoteCatalogCuda, AdmissionNamesTheDeviceThatIsFull) {
  if (!detect().cuda_available) GTEST_SKIP() << "no usable CUDA device: " << detect().reason;
  remote::CatalogOptions o;
  o.backend = "cuda";
  o.devices = {detect().device_count - 1};
  o.load.admission_limit_bytes = 1024;
  try {
    remote::load_catalog({test::remote_sample_path()}, o);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("placed on CUDA device " + std::to_string(o.devices[0]) + ": cannot load"), std::string::npos)
        << e.what();
  }
}

TEST(RemoteCatalogCuda, TwoDatasetsOnTwoDevicesLiveWhereTheyWerePlaced) {
  if (!detect().cuda_available || detect().device_count < 2)
    GTEST_SKIP() << "needs 2 CUDA devices (has " << detect().device_count << ")";
  remote::CatalogOptions o;
  o.backend = "cuda";
  o.devices = {0, 1};
  const remote::Catalog c = remote::load_catalog({test::remote_sample_path(), test::remote_sample_path()}, o);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json p = remote::describe_served(*c.all()[std::size_t(i)])["placement"];
    EXPECT_EQ(p["device"], i);
    EXPECT_EQ(p["memory"], "gpu");
    EXPECT_GT(p["resident_bytes"].get<std::size_t>(), 0u);
  }
}

TEST(RemoteCatalog, HeavySlotsGrowWithTheDevices) {
  EXPECT_EQ(remote::heavy_slots_for(0), 4u);
  EXPECT_EQ(remote::heavy_slots_for(1), 4u);
  EXPECT_EQ(remote::heavy_slots_for(8), 32u);
  EXPECT_EQ(remote::heavy_slots_for(3, 2), 6u);
}
