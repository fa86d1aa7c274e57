// The two provenance builders (resident/dataset_provenance.hpp, core/derived_provenance.hpp) give the exact keys and
// values the results have always carried, for dense and encoded inputs; library results are built with them.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "core/derived_provenance.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "resident/dataset_provenance.hpp"

using namespace qgpu;

namespace {

// 2 x 3 scan, 4 x 5 detector, uint16 counts (dense: 240 bytes).
Dataset tiny() {
  HostArray4D h;
  h.shape = {2, 3, 4, 5};
  h.dtype = DType::u16;
  h.bytes.resize(h.shape.elements() * 2);
  auto* v = h.as<std::uint16_t>();
  for (std::size_t i = 0; i < h.shape.elements(); ++i) v[i] = std::uint16_t(i % 7 == 0 ? 3 : 0);
  Provenance p;
  p.operation = "test.synthetic";
  p.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), p);
}

std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> k;
  for (const auto& [name, value] : j.items()) k.insert(name);
  return k;
}

const std::set<std::string> kDatasetKeys = {"operation",    "backend",        "input_dtype", "input_shape",
                                            "output_dtype", "output_shape",   "representation", "parameters",
                                            "version",      "resident_bytes", "dense_bytes"};

TEST(ProvenanceBuilders, DatasetProvenanceOfADenseDataset) {
  const Dataset ds = tiny();
  const Provenance p = dataset_provenance(ds, "test.op", "uint64", {2, 3}, {{"k", 1}});
  const nlohmann::json want = {{"operation", "test.op"},  {"backend", "cpu"},
                               {"input_dtype", "uint16"}, {"input_shape", {2, 3, 4, 5}},
                               {"output_dtype", "uint64"}, {"output_shape", {2, 3}},
                               {"representation", "dense"}, {"parameters", {{"k", 1}}},
                               {"version", kVersion},      {"resident_bytes", 240},
                               {"dense_bytes", 240}};
  EXPECT_EQ(p.to_json(), want);
}

TEST(ProvenanceBuilders, DatasetProvenanceOfAnEncodedDatasetAndWhatIsDerivedFromIt) {
  const Dataset enc = tiny().to_encoded(4);
  ASSERT_EQ(enc.representation(), "encoded");
  const Provenance p = dataset_provenance(enc, "test.op", "float32", {2, 3});
  EXPECT_EQ(p.representation, "encoded");
  EXPECT_EQ(p.resident_bytes, enc.resident_bytes());
  EXPECT_EQ(p.dense_bytes, 240u);
  EXPECT_EQ(p.parameters, nlohmann::json::object());

  const Provenance d = derived_provenance("test.derived", "cuda", p, {2, 2, 3}, {2, 3}, {{"computed_on", "host"}});
  const nlohmann::json want = {{"operation", "test.derived"}, {"backend", "cuda"},
                               {"input_dtype", "float32"},    {"input_shape", {2, 2, 3}},
                               {"output_dtype", "float32"},   {"output_shape", {2, 3}},
                               {"representation", "encoded"}, {"parameters", {{"computed_on", "host"}}},
                               {"version", kVersion},         {"resident_bytes", enc.resident_bytes()},
                               {"dense_bytes", 240}};
  EXPECT_EQ(d.to_json(), want);
}

// Maps that came from no dataset (plain arrays) are "dense" and carry no byte counts.
TEST(ProvenanceBuilders, DerivedFromAPlainArray) {
  const Provenance d = derived_provenance("test.derived", "cpu", Provenance{}, {4, 4}, {4, 4}, {}, "float64");
  const nlohmann::json j = d.to_json();
  EXPECT_EQ(j["representation"], "dense");
  EXPECT_EQ(j["input_dtype"], "float64");
  EXPECT_EQ(j["output_dtype"], "float64");
  EXPECT_FALSE(j.contains("resident_bytes"));
  EXPECT_FALSE(j.contains("dense_bytes"));
}

TEST(ProvenanceBuilders, LibraryResultsCarryTheBuildersKeys) {
  const Dataset enc = tiny().to_encoded(4);
  EXPECT_EQ(keys(detector::sum_pattern(enc).provenance().to_json()), kDatasetKeys);
  const dpc::ComResult com = dpc::center_of_mass(enc);
  EXPECT_EQ(keys(com.provenance.to_json()), kDatasetKeys);
  EXPECT_EQ(com.provenance.operation, "dpc.center_of_mass");
  const dpc::DpcResult d = dpc::centered_dpc(com);
  EXPECT_EQ(keys(d.provenance.to_json()), kDatasetKeys);
  EXPECT_EQ(d.provenance.representation, "encoded");
  EXPECT_EQ(d.provenance.resident_bytes, enc.resident_bytes());
  EXPECT_EQ(d.provenance.parameters.at("computed_on"), "host");
}

}  // namespace
