// DECTRIS metadata: the NeXus /entry/instrument of a master and the ARINA sidecar <stem>.h5 become calibration
// values with units and sources and the scan shape; bad values are named and never used; a user's value wins;
// inspect reports what it needs when nothing gives the scan shape.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "acquisition_files.hpp"
#include "core/electron.hpp"
#include "core/error.hpp"
#include "io/hdf5/instrument_metadata.hpp"
#include "io/hdf5/load.hpp"
#include "ssb/params.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
namespace fs = std::filesystem;

namespace {

const std::string kDet = "/entry/instrument/detector";

// A 6 x 8 scan of 16 x 16 frames in 2 data files, its master <dir>/<name>_master.h5 written as ARINA does: no
// /entry/calibration, ntrigger = 48 and nimages = 1 (so the metadata alone does not give the scan shape).
std::string arina_master(const std::string& name) {
  const fs::path dir = test::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string master = (dir / (name + "_master.h5")).string();
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = s.det_cols = 16;
  s.seed = 5;
  sample::write_sample_acquisition(master, s, 2);
  h5::Handle f(H5Fopen(master.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  EXPECT_GE(H5Ldelete(f, "/entry/calibration", H5P_DEFAULT), 0);
  for (const char* n : {"ntrigger", "nimages"}) {
    const std::string path = kDet + "/detectorSpecific/" + n;
    h5::Handle d(H5Dopen2(f, path.c_str(), H5P_DEFAULT), H5Dclose);
    const long long v = std::string(n) == "ntrigger" ? 48 : 1;
    EXPECT_GE(H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v), 0);
  }
  return master;
}

h5::Handle open_rw(const std::string& path) {
  h5::Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  EXPECT_TRUE(f.valid()) << path;
  return f;
}

void string_attribute(hid_t obj, const char* name, const std::string& value) {
  h5::Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, value.size() + 1);
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle a(H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  ASSERT_GE(H5Awrite(a, t, value.c_str()), 0);
}

// A NeXus field: a float64 dataset of `values` (scalar when one) with a units attribute unless units is null.
void nexus(hid_t f, const std::string& path, std::vector<double> values, const char* units) {
  h5::Handle sp(values.size() == 1 ? H5Screate(H5S_SCALAR) : [&] {
    const hsize_t n = values.size();
    return H5Screate_simple(1, &n, nullptr);
  }(), H5Sclose);
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  h5::Handle d(H5Dcreate2(f, path.c_str(), H5T_IEEE_F64LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  ASSERT_TRUE(d.valid()) << path;
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  if (units) string_attribute(d, "units", units);
}

void nexus_string(hid_t f, const std::string& path, const std::string& value) {
  h5::Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, value.size() + 1);
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  h5::Handle d(H5Dcreate2(f, path.c_str(), t, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  ASSERT_GE(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.c_str()), 0);
}

// Attributes of the sidecar's "STEM Metadata" group as ARINA writes them: one-element float64 arrays, the scan
// counts int64 scalars.
struct SidecarValue {
  std::string name;
  double value;
  bool integer_scalar = false;
};

void write_sidecar(const std::string& master, const std::vector<SidecarValue>& values,
                   const std::vector<std::pair<std::string, std::string>>& strings = {}) {
  const std::string path = io::arina_sidecar_path(master);
  ASSERT_FALSE(path.empty());
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  h5::Handle g(H5Gcreate2(f, io::kStemMetadataGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  for (const SidecarValue& v : values) {
    if (v.integer_scalar) {
      h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
      h5::Handle a(H5Acreate2(g, v.name.c_str(), H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      const long long x = static_cast<long long>(v.value);
      ASSERT_GE(H5Awrite(a, H5T_NATIVE_LLONG, &x), 0);
    } else {
      const hsize_t one = 1;
      h5::Handle sp(H5Screate_simple(1, &one, nullptr), H5Sclose);
      h5::Handle a(H5Acreate2(g, v.name.c_str(), H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      ASSERT_GE(H5Awrite(a, H5T_NATIVE_DOUBLE, &v.value), 0);
    }
  }
  for (const auto& [name, text] : strings) string_attribute(g, name.c_str(), text);
}

// The values of the real ARINA sidecar of rosettasciio's test data (h5dump -A), with a 6 x 8 scan.
std::vector<SidecarValue> arina_values(long long rows = 6, long long cols = 8) {
  return {{"Camera Length", 0.115},    {"High Tension", 300000},     {"IsPixelSizeCalibrated", 0},
          {"NumPixelsPrescan", 0},     {"NumPixelsX", double(cols), true}, {"NumPixelsY", double(rows), true},
          {"Pixel Size", 0.139152},    {"Rotation", 12.5}};
}

const nlohmann::json& value_of(const io::FileInfo& fi, const std::string& key) {
  static const nlohmann::json none;
  return fi.calibration_detail.contains(key) ? fi.calibration_detail.at(key) : none;
}

std::string source_of(const io::FileInfo& fi, const std::string& key) {
  const nlohmann::json& v = value_of(fi, key);
  return v.is_object() ? v.at("source").get<std::string>() : "(absent)";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string all_warnings(const io::FileInfo& fi) {
  std::string s;
  for (const std::string& w : fi.metadata_warnings) s += w + "\n";
  return s;
}

// How many warnings name `part`.
std::size_t warnings_naming(const io::FileInfo& fi, const std::string& part) {
  std::size_t n = 0;
  for (const std::string& w : fi.metadata_warnings) n += has(w, part);
  return n;
}

}  // namespace

TEST(InstrumentMetadata, ElectronWavelengthAndEnergyAgreeWithHandComputation) {
  // lambda = h / sqrt(2 m0 e V (1 + e V / (2 m0 c^2))), by hand (CODATA 2018): 300 kV -> 0.019687489 A,
  // 200 kV -> 0.025079340 A, 80 kV -> 0.041757161 A; the photon relation h c / E: 300 keV -> 0.041328066 A.
  EXPECT_NEAR(electron_wavelength_angstrom(300), 0.019687489, 1e-9);
  EXPECT_NEAR(electron_wavelength_angstrom(200), 0.025079340, 1e-9);
  EXPECT_NEAR(electron_wavelength_angstrom(80), 0.041757161, 1e-9);
  EXPECT_NEAR(electron_energy_kev(0.019687489), 300.0, 1e-4);
  EXPECT_NEAR(electron_energy_kev(0.019687), 300.012, 1e-3);  // the 5-digit wavelength is 12 eV off
  EXPECT_NEAR(electron_energy_kev(0.025079340), 200.0, 1e-4);
  for (double kv : {20.0, 80.0, 120.0, 300.0, 1000.0})
    EXPECT_NEAR(electron_energy_kev(electron_wavelength_angstrom(kv)), kv, 1e-9 * kv);
  EXPECT_NEAR(photon_energy_kev(0.041328066), 300.0, 1e-5);
}

// A fuzzed master whose NeXus count_time is a contiguous dataset storing 1 byte for an 8-byte value (HDF5 1.10 read
// past its buffer there, found by fuzz_inspect): the value is named and ignored, never read.
TEST(InstrumentMetadata, AValueStoredShorterThanItsTypeIsNamedNotRead) {
  const std::string f = std::string(QGPU_SOURCE_DIR) +
                        "/tests/fuzz/regressions/fuzz_inspect/contiguous_value_shorter_than_its_type.h5";
  const io::FileInfo fi = io::inspect(f, "", 2, 3);
  EXPECT_EQ(warnings_naming(fi, "count_time stores 1 bytes for a value of 8"), 1u) << all_warnings(fi);
}

TEST(InstrumentMetadata, SidecarPathOnlyBesideAMasterName) {
  EXPECT_EQ(io::arina_sidecar_path("/d/scan_7_master.h5"), "/d/scan_7.h5");
  EXPECT_EQ(io::arina_sidecar_path("rel_master.h5"), "rel.h5");
  EXPECT_EQ(io::arina_sidecar_path("/d/scan.h5"), "");
  EXPECT_EQ(io::arina_sidecar_path("/d/_master.h5"), "");
  EXPECT_EQ(io::arina_sidecar_path("/d/scan_master.hdf5"), "");
}

TEST(InstrumentMetadata, NexusInstrumentValuesWithUnitsAndSources) {
  const std::string master = arina_master("nexus");
  {
    h5::Handle f = open_rw(master);
    nexus(f, "/entry/instrument/beam/incident_wavelength", {0.025079340}, "angstrom");
    nexus(f, kDet + "/x_pixel_size", {75}, "um");  // units honoured: 75 um
    nexus(f, kDet + "/y_pixel_size", {75e-6}, "m");
    nexus(f, kDet + "/detector_distance", {150}, "mm");
    nexus(f, kDet + "/beam_center_x", {8.5}, "pixel");
    nexus(f, kDet + "/beam_center_y", {7.25}, "pixel");
    nexus(f, kDet + "/count_time", {0.001}, "s");
    nexus(f, kDet + "/frame_time", {1.1}, "ms");
  }
  const io::FileInfo fi = io::inspect(master, "", 6, 8);
  EXPECT_TRUE(fi.metadata_warnings.empty()) << all_warnings(fi);
  EXPECT_EQ(fi.sidecar, "");
  EXPECT_NEAR(fi.calibration.at("energy_kev").get<double>(), 200.0, 1e-4);
  EXPECT_EQ(value_of(fi, "energy_kev").at("unit"), "keV");
  EXPECT_EQ(source_of(fi, "energy_kev"), "NeXus /entry/instrument/beam/incident_wavelength (0.0250793 angstrom) by "
                                          "the relativistic electron wavelength");
  EXPECT_NEAR(fi.calibration.at("wavelength_angstrom").get<double>(), 0.025079340, 1e-15);
  EXPECT_NEAR(fi.calibration.at("detector_pixel_size_m").get<double>(), 75e-6, 1e-18);
  EXPECT_EQ(source_of(fi, "detector_pixel_size_m"), "NeXus " + kDet + "/x_pixel_size (75 um)");
  EXPECT_NEAR(fi.calibration.at("camera_length_m").get<double>(), 0.15, 1e-15);
  // 1000 x 75 um / 150 mm = 0.5 mrad per pixel
  EXPECT_NEAR(fi.calibration.at("detector_mrad_per_pixel").get<double>(), 0.5, 1e-12);
  EXPECT_EQ(value_of(fi, "detector_mrad_per_pixel").at("unit"), "mrad/px");
  EXPECT_EQ(source_of(fi, "detector_mrad_per_pixel"), "detector pixel size / camera length (7.5e-05 m / 0.15 m)");
  EXPECT_EQ(fi.calibration.at("beam_center_row_px").get<double>(), 7.25);
  EXPECT_EQ(fi.calibration.at("beam_center_col_px").get<double>(), 8.5);
  EXPECT_EQ(fi.calibration.at("count_time_s").get<double>(), 0.001);
  EXPECT_NEAR(fi.calibration.at("frame_time_s").get<double>(), 0.0011, 1e-15);
  EXPECT_EQ(fi.calibration.size(), 9u) << fi.calibration.dump();
  EXPECT_FALSE(fi.calibration.contains("scan_step_angstrom"));  // nothing states it
}

// A cropped and binned load's calibration is that of its pixels (what SSB, parallax and every product read from
// ds.metadata()["calibration"]); the file's own values stay in "file_calibration".
TEST(InstrumentMetadata, ABinnedCroppedLoadCalibratesItsOwnPixels) {
  const std::string master = arina_master("binned");
  {
    h5::Handle f = open_rw(master);
    nexus(f, kDet + "/x_pixel_size", {75}, "um");
    nexus(f, kDet + "/y_pixel_size", {75e-6}, "m");
    nexus(f, kDet + "/detector_distance", {150}, "mm");
    nexus(f, kDet + "/beam_center_x", {8.5}, "pixel");
    nexus(f, kDet + "/beam_center_y", {7.25}, "pixel");
  }
  io::LoadOptions o;
  o.backend = "cpu";
  o.scan_rows = 6;
  o.scan_cols = 8;
  o.detector_region = {2, 4, 12, 12};
  o.bin_detector = 2;
  o.bin_scan = 2;
  const Dataset ds = io::load(master, o);
  EXPECT_EQ(ds.shape(), (Shape4D{3, 4, 6, 6}));
  const nlohmann::json& cal = ds.metadata().at("calibration");
  const nlohmann::json& file = ds.metadata().at("file_calibration");
  EXPECT_NEAR(file.at("detector_mrad_per_pixel").get<double>(), 0.5, 1e-12);
  EXPECT_NEAR(cal.at("detector_mrad_per_pixel").get<double>(), 1.0, 1e-12);   // two file pixels per loaded pixel
  EXPECT_NEAR(cal.at("detector_pixel_size_m").get<double>(), 150e-6, 1e-18);
  EXPECT_EQ(cal.at("beam_center_row_px").get<double>(), (7.25 - 2 - 0.5) / 2);  // into the crop, binned
  EXPECT_EQ(cal.at("beam_center_col_px").get<double>(), (8.5 - 4 - 0.5) / 2);
  EXPECT_EQ(cal.at("camera_length_m"), file.at("camera_length_m"));              // not a pixel size: unchanged
  if (file.contains("scan_step_angstrom"))
    EXPECT_EQ(cal.at("scan_step_angstrom").get<double>(), 2 * file.at("scan_step_angstrom").get<double>());
  // An unbinned, uncropped load keeps the file's values.
  io::LoadOptions plain;
  plain.backend = "cpu";
  plain.scan_rows = 6;
  plain.scan_cols = 8;
  const Dataset whole = io::load(master, plain);
  EXPECT_EQ(whole.metadata().at("calibration"), whole.metadata().at("file_calibration"));
}

TEST(InstrumentMetadata, RealArinaSidecarGivesScanShapeStepEnergyAndSampling) {
  // As the real ARINA master of rosettasciio's tests: photon_energy 300000 eV, x_pixel_size 1e-4 m,
  // detector_distance and beam centre 0 (not set), count_time; the sidecar gives the rest.
  const std::string master = arina_master("arina");
  {
    h5::Handle f = open_rw(master);
    nexus(f, kDet + "/detectorSpecific/photon_energy", {300000}, "eV");
    nexus(f, kDet + "/x_pixel_size", {1e-4}, "m");
    nexus(f, kDet + "/y_pixel_size", {1e-4}, "m");
    nexus(f, kDet + "/detector_distance", {0}, "m");
    nexus(f, kDet + "/beam_center_x", {0}, "pixel");
    nexus(f, kDet + "/beam_center_y", {0}, "pixel");
    nexus(f, kDet + "/count_time", {9.95e-05}, "s");
  }
  write_sidecar(master, arina_values());
  const io::FileInfo fi = io::inspect(master);
  EXPECT_EQ(fi.shape, (Shape4D{6, 8, 16, 16}));
  EXPECT_EQ(fi.scan_shape_source, "ARINA sidecar 'arina.h5' STEM Metadata NumPixelsY x NumPixelsX");
  EXPECT_EQ(fi.sidecar, io::arina_sidecar_path(master));
  EXPECT_EQ(fi.calibration.at("energy_kev").get<double>(), 300.0);
  EXPECT_EQ(source_of(fi, "energy_kev"), "ARINA sidecar 'arina.h5' STEM Metadata/High Tension (300000 V)");
  EXPECT_NEAR(fi.calibration.at("scan_step_angstrom").get<double>(), 1.39152, 1e-12);  // 0.139152 nm
  EXPECT_EQ(source_of(fi, "scan_step_angstrom"),
            "ARINA sidecar 'arina.h5' STEM Metadata/Pixel Size (0.139152 nm), IsPixelSizeCalibrated 0: nominal");
  EXPECT_EQ(fi.calibration.at("camera_length_m").get<double>(), 0.115);
  // 1000 x 100 um / 115 mm = 0.869565 mrad per pixel
  EXPECT_NEAR(fi.calibration.at("detector_mrad_per_pixel").get<double>(), 0.8695652173913044, 1e-12);
  EXPECT_EQ(fi.calibration.at("scan_rotation_deg").get<double>(), 12.5);
  EXPECT_EQ(value_of(fi, "scan_rotation_deg").at("unit"), "deg");
  EXPECT_FALSE(fi.calibration.contains("rotation_deg"));  // the scan rotation is not the scan-detector rotation
  EXPECT_EQ(fi.calibration.at("count_time_s").get<double>(), 9.95e-05);
  EXPECT_FALSE(fi.calibration.contains("beam_center_row_px"));
  // Exactly the two placeholders, named; photon_energy agrees with High Tension (no warning).
  EXPECT_EQ(fi.metadata_warnings.size(), 2u) << all_warnings(fi);
  EXPECT_EQ(warnings_naming(fi, kDet + "/detector_distance is 0 m, not > 0: ignored"), 1u) << all_warnings(fi);
  EXPECT_EQ(warnings_naming(fi, "are (0, 0): not set by the detector, ignored"), 1u) << all_warnings(fi);

  // The load carries them: metadata for SSB/parallax, provenance with the sources and the scan shape's origin.
  io::LoadOptions o;
  o.backend = "cpu";
  const Dataset ds = io::load(master, o);
  EXPECT_EQ(ds.shape(), (Shape4D{6, 8, 16, 16}));
  EXPECT_EQ(ds.metadata().at("calibration").at("energy_kev").get<double>(), 300.0);
  const nlohmann::json& p = ds.provenance().parameters;
  EXPECT_EQ(p.at("scan_shape").at("value"), nlohmann::json({6, 8}));
  EXPECT_EQ(p.at("scan_shape").at("source"), fi.scan_shape_source);
  EXPECT_EQ(p.at("calibration").at("scan_step_angstrom").at("unit"), "angstrom");
  EXPECT_EQ(p.at("calibration").at("energy_kev").at("source"), source_of(fi, "energy_kev"));
  EXPECT_NO_THROW(ds.provenance().to_json().dump());
}

TEST(InstrumentMetadata, UserValuesWin) {
  const std::string master = arina_master("override");
  write_sidecar(master, arina_values());
  // A given scan shape beats the sidecar's.
  const io::FileInfo given = io::inspect(master, "", 8, 6);
  EXPECT_EQ(given.shape, (Shape4D{8, 6, 16, 16}));
  EXPECT_EQ(given.scan_shape_source, "given");

  io::LoadOptions o;
  o.backend = "cpu";
  const Dataset ds = io::load(master, o);
  // SSB: the file's energy and step, the user's semi-angle; then the user's energy replacing the file's.
  ssb::ParamOverrides over;
  over.semiangle_mrad = 20;
  const ssb::SsbParams p = ssb::resolve_params(ds.metadata(), over);
  EXPECT_EQ(p.energy_kev, 300.0);
  EXPECT_NEAR(p.scan_step_angstrom, 1.39152, 1e-12);
  EXPECT_EQ(p.detector_mrad_per_pixel, 0.0);  // the sidecar has a camera length but the master no pixel size
  EXPECT_EQ(p.sources.at("energy_kev"), "ARINA sidecar 'override.h5' STEM Metadata/High Tension (300000 V)");
  EXPECT_EQ(p.sources.at("semiangle_mrad"), "given (ssb: semiangle_mrad)");
  over.energy_kev = 200;
  over.scan_step_angstrom = 2.5;
  const ssb::SsbParams q = ssb::resolve_params(ds.metadata(), over, [](const std::string& k) { return "--" + k; });
  EXPECT_EQ(q.energy_kev, 200.0);
  EXPECT_EQ(q.scan_step_angstrom, 2.5);
  EXPECT_EQ(q.sources.at("energy_kev"), "given (--energy_kev)");
  EXPECT_EQ(q.sources.at("scan_step_angstrom"), "given (--scan_step_angstrom)");
  // Without a semi-angle the file has none to offer: named as missing.
  test::expect_error<InvalidArgument>([&] { ssb::resolve_params(ds.metadata(), {}); },
                                      {"semiangle_mrad is missing: not in the file's calibration and not given"});
}

TEST(InstrumentMetadata, OwnCalibrationFirstAndDisagreementsNamed) {
  const std::string master = arina_master("own");
  {
    h5::Handle f = open_rw(master);
    h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    h5::Handle g(H5Gcreate2(f, "/entry/calibration", lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    const double e = 200, two[2] = {20, 21};
    h5::Handle sp1(H5Screate(H5S_SCALAR), H5Sclose);
    h5::Handle a(H5Acreate2(g, "energy_kev", H5T_IEEE_F64LE, sp1, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_DOUBLE, &e), 0);
    const hsize_t n2 = 2;
    h5::Handle sp2(H5Screate_simple(1, &n2, nullptr), H5Sclose);  // read into one double before: past its end
    h5::Handle b(H5Acreate2(g, "semiangle_mrad", H5T_IEEE_F64LE, sp2, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    ASSERT_GE(H5Awrite(b, H5T_NATIVE_DOUBLE, two), 0);
    string_attribute(g, "scan_step_angstrom", "1.5");
    nexus(f, kDet + "/detectorSpecific/photon_energy", {300}, "keV");
  }
  const io::FileInfo fi = io::inspect(master, "", 6, 8);
  EXPECT_EQ(fi.calibration.at("energy_kev").get<double>(), 200.0);
  EXPECT_EQ(source_of(fi, "energy_kev"), "/entry/calibration attribute energy_kev");
  EXPECT_FALSE(fi.calibration.contains("semiangle_mrad"));
  EXPECT_FALSE(fi.calibration.contains("scan_step_angstrom"));
  EXPECT_EQ(fi.metadata_warnings.size(), 3u) << all_warnings(fi);
  EXPECT_EQ(warnings_naming(fi, "/entry/calibration attribute semiangle_mrad holds 2 values, not one: ignored"), 1u);
  EXPECT_EQ(warnings_naming(fi, "/entry/calibration attribute scan_step_angstrom is a string, not a number: ignored"),
            1u);
  EXPECT_EQ(warnings_naming(fi, "energy_kev: NeXus " + kDet + "/detectorSpecific/photon_energy (300 keV) gives 300 "
                                "keV but /entry/calibration attribute energy_kev gives 200 keV: the latter is used"),
            1u)
      << all_warnings(fi);
}

TEST(InstrumentMetadata, PhotonRelationWavelengthIsNotTakenForAnElectronOne) {
  // An X-ray style header: incident_wavelength = h c / photon_energy. Read as an electron wavelength it would
  // say 81.6 kV; it is named and left out.
  const std::string master = arina_master("photon");
  {
    h5::Handle f = open_rw(master);
    nexus(f, kDet + "/detectorSpecific/photon_energy", {300000}, "eV");
    nexus(f, "/entry/instrument/beam/incident_wavelength", {0.041328066}, "angstrom");
  }
  const io::FileInfo fi = io::inspect(master, "", 6, 8);
  EXPECT_EQ(fi.calibration.at("energy_kev").get<double>(), 300.0);
  EXPECT_FALSE(fi.calibration.contains("wavelength_angstrom"));
  EXPECT_EQ(fi.metadata_warnings.size(), 1u) << all_warnings(fi);
  EXPECT_EQ(warnings_naming(fi, "is h c / E of the 300 keV energy (the photon relation), not the electron wavelength"),
            1u)
      << all_warnings(fi);
}

TEST(InstrumentMetadata, GarbageValuesAreNamedAndNeverUsed) {
  const std::string master = arina_master("garbage");
  {
    h5::Handle f = open_rw(master);
    nexus_string(f, kDet + "/x_pixel_size", "0.0001");                 // a string where a number is expected
    nexus(f, kDet + "/detector_distance", {-0.1}, "m");                // negative
    nexus(f, "/entry/instrument/beam/incident_wavelength", {0}, "angstrom");  // zero
    nexus(f, kDet + "/detectorSpecific/photon_energy", {std::nan("")}, "eV");  // not finite
    nexus(f, kDet + "/count_time", {0.001, 0.002}, "s");               // two values
    nexus(f, kDet + "/frame_time", {1}, "fortnight");                  // unknown unit
    nexus(f, kDet + "/beam_center_x", {99}, "pixel");                  // outside the 16 x 16 detector
    nexus(f, kDet + "/beam_center_y", {3}, "pixel");
  }
  write_sidecar(master,
                {{"Pixel Size", -1}, {"Camera Length", 0}, {"NumPixelsX", 8.5}, {"NumPixelsY", 6, true},
                 {"Rotation", std::nan("")}},
                {{"High Tension", "300 kV"}});
  const io::FileInfo fi = io::inspect(master, "", 0, 0, io::ScanShapeNeed::optional);
  for (const char* k : {"detector_pixel_size_m", "camera_length_m", "energy_kev", "wavelength_angstrom",
                        "count_time_s", "frame_time_s", "beam_center_row_px", "scan_step_angstrom",
                        "detector_mrad_per_pixel", "scan_rotation_deg"})
    EXPECT_FALSE(fi.calibration.contains(k)) << k << ": " << fi.calibration.dump();
  EXPECT_TRUE(fi.calibration.empty()) << fi.calibration.dump();
  const std::string side = "ARINA sidecar 'garbage.h5' STEM Metadata/";
  for (const std::string& w : std::vector<std::string>{
        "NeXus " + kDet + "/x_pixel_size is a string, not a number: ignored",
        "NeXus " + kDet + "/detector_distance is -0.1 m, not > 0: ignored",
        "NeXus /entry/instrument/beam/incident_wavelength is 0 angstrom, not > 0: ignored",
        "NeXus " + kDet + "/detectorSpecific/photon_energy is nan, not a finite number: ignored",
        "NeXus " + kDet + "/count_time holds 2 values, not one: ignored",
        "NeXus " + kDet + "/frame_time has units 'fortnight', not a time unit known here: ignored",
        "NeXus beam centre (x 99, y 3) px lies outside the 16 x 16 detector: ignored",
        side + "Pixel Size is -1, not > 0: ignored", side + "Camera Length is 0, not > 0: ignored",
        side + "NumPixelsX is 8.5, not a whole number of scan pixels: ignored",
        "gives only one of NumPixelsX / NumPixelsY: no scan shape from it", side + "Rotation is nan, not a finite",
        side + "High Tension is a string, not a number: ignored"})
    EXPECT_EQ(warnings_naming(fi, w), 1u) << w << "\n" << all_warnings(fi);
  EXPECT_EQ(fi.metadata_warnings.size(), 13u) << all_warnings(fi);
  // No scan shape from the broken sidecar, none from ntrigger 48 x nimages 1 and 48 is no square: inspect says so,
  // a load refuses.
  EXPECT_FALSE(fi.scan_shape_known);
  EXPECT_TRUE(has(fi.scan_shape_needed, "has 48 frames, no scan_shape attribute and no square scan: give scan_shape"))
      << fi.scan_shape_needed;
  EXPECT_NO_THROW(fi.to_json().dump());
  test::expect_error<FormatError>([&] { io::inspect(master); }, {"48 frames", "give scan_shape"});
}

TEST(InstrumentMetadata, SidecarScanShapeNotMatchingTheFramesIsAnError) {
  const std::string master = arina_master("mismatch");
  write_sidecar(master, arina_values(7, 8));  // 56 positions for 48 frames
  const std::string expected =
      "ARINA sidecar 'mismatch.h5' STEM Metadata NumPixelsY x NumPixelsX = 7 x 8 = 56 scan positions, but dataset "
      "'/entry/data/data_000001' in '" + master + "' holds 48 frames: give scan_shape";
  test::expect_error<FormatError>([&] { io::inspect(master); }, {expected});
  io::LoadOptions o;
  o.backend = "cpu";
  test::expect_error<FormatError>([&] { io::load(master, o); }, {expected});
  const io::FileInfo fi = io::inspect(master, "", 0, 0, io::ScanShapeNeed::optional);
  EXPECT_FALSE(fi.scan_shape_known);
  EXPECT_TRUE(has(fi.scan_shape_needed, expected)) << fi.scan_shape_needed;
  // The user's scan shape settles it.
  EXPECT_EQ(io::inspect(master, "", 4, 12).shape, (Shape4D{4, 12, 16, 16}));
}

TEST(InstrumentMetadata, InspectWithoutScanShapeReportsFramesDetectorAndWhatItNeeds) {
  const std::string master = arina_master("noscan");
  test::expect_error<FormatError>([&] { io::inspect(master); },
                                  {"has 48 frames, no scan_shape attribute and no square scan: give scan_shape "
                                   "(--scan-shape ROWS COLS; Python scan_shape=(rows, cols))"});
  const io::FileInfo fi = io::inspect(master, "", 0, 0, io::ScanShapeNeed::optional);
  EXPECT_FALSE(fi.scan_shape_known);
  EXPECT_EQ(fi.frames, 48u);
  EXPECT_EQ(fi.shape, (Shape4D{0, 0, 16, 16}));
  EXPECT_EQ(fi.scan_shape_source, "");
  EXPECT_EQ(fi.parts.size(), 2u);
  EXPECT_EQ(fi.ntrigger, 48);
  const nlohmann::json j = fi.to_json();
  EXPECT_TRUE(j.at("shape").is_null());
  EXPECT_EQ(j.at("frames"), 48);
  EXPECT_EQ(j.at("detector_shape"), nlohmann::json({16, 16}));
  EXPECT_EQ(j.at("scan_shape_known"), false);
  EXPECT_TRUE(has(j.at("scan_shape_needed").get<std::string>(), "give scan_shape"));
  // A given scan shape that does not fit is still an error, even when only inspecting.
  test::expect_error<FormatError>([&] { io::inspect(master, "", 5, 10, io::ScanShapeNeed::optional); },
                                  {"given scan shape 5x10 does not match the 48 frames"});
  EXPECT_EQ(io::inspect(master, "", 6, 8, io::ScanShapeNeed::optional).shape, (Shape4D{6, 8, 16, 16}));
}
