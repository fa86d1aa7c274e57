#include "io/emd/write_emd.hpp"

#include <hdf5.h>

#include <cstdio>
#include <random>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

namespace {

using h5::Handle;

hid_t file_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_STD_U8LE;
    case DType::u16: return H5T_STD_U16LE;
    case DType::u32: return H5T_STD_U32LE;
    case DType::u64: return H5T_STD_U64LE;
    case DType::i8: return H5T_STD_I8LE;
    case DType::i16: return H5T_STD_I16LE;
    case DType::i32: return H5T_STD_I32LE;
    case DType::i64: return H5T_STD_I64LE;
    case DType::f32: return H5T_IEEE_F32LE;
    case DType::f64: return H5T_IEEE_F64LE;
  }
  return H5T_IEEE_F32LE;
}

hid_t mem_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    case DType::u32: return H5T_NATIVE_UINT32;
    case DType::u64: return H5T_NATIVE_UINT64;
    case DType::i8: return H5T_NATIVE_INT8;
    case DType::i16: return H5T_NATIVE_INT16;
    case DType::i32: return H5T_NATIVE_INT32;
    case DType::i64: return H5T_NATIVE_INT64;
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_FLOAT;
}

void fail(const std::string& what) { throw IoError("cannot write the EMD file: " + what); }

// A variable-length UTF-8 string attribute (h5py's str).
void str_attr(hid_t obj, const char* name, const std::string& v) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* p = v.c_str();
  if (!a.valid() || H5Awrite(a, t, &p) < 0) fail("attribute " + std::string(name));
}

// A fixed-length byte-string attribute (h5py's bytes, emdfile's metadata `type`).
void bytes_attr(hid_t obj, const char* name, const std::string& v) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, std::max<std::size_t>(v.size(), 1));
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid() || H5Awrite(a, t, v.c_str()) < 0) fail("attribute " + std::string(name));
}

void i64_attr(hid_t obj, const char* name, long long v) {
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid() || H5Awrite(a, H5T_NATIVE_LLONG, &v) < 0) fail("attribute " + std::string(name));
}

void f64_attr(hid_t obj, const char* name, double v) {
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid() || H5Awrite(a, H5T_NATIVE_DOUBLE, &v) < 0) fail("attribute " + std::string(name));
}

Handle group(hid_t loc, const std::string& name, const char* emd_type, const char* python_class) {
  Handle g(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail("group " + name);
  str_attr(g, "emd_group_type", emd_type);
  if (python_class) str_attr(g, "python_class", python_class);
  return g;
}

// emdfile Metadata items: scalar datasets with a `type` attribute.
void md_number(hid_t g, const std::string& k, double v) {
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle d(H5Dcreate2(g, k.c_str(), H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.valid() || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) fail(k);
  bytes_attr(d, "type", "number");
}

void md_string(hid_t g, const std::string& k, const std::string& v) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, std::max<std::size_t>(v.size(), 1));
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle d(H5Dcreate2(g, k.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.valid() || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.c_str()) < 0) fail(k);
  bytes_attr(d, "type", "string");
}

void md_bool(hid_t g, const std::string& k, bool v) {  // h5py's bool: enum int8 {FALSE 0, TRUE 1}
  Handle t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  std::int8_t f = 0, tr = 1;
  H5Tenum_insert(t, "FALSE", &f);
  H5Tenum_insert(t, "TRUE", &tr);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle d(H5Dcreate2(g, k.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  std::int8_t b = v ? 1 : 0;
  if (!d.valid() || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &b) < 0) fail(k);
  bytes_attr(d, "type", "bool");
}

std::string uuid4() {
  std::random_device rd;
  std::uint8_t b[16];
  for (auto& x : b) x = std::uint8_t(rd());
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  char s[40];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

double positive(const nlohmann::json& cal, const char* key) {
  if (cal.is_object() && cal.contains(key) && cal.at(key).is_number()) {
    const double v = cal.at(key).get<double>();
    if (v > 0) return v;
  }
  return 0;
}

void write_array(hid_t root, const EmdArraySpec& a) {
  const std::size_t rank = a.dims.size();
  if (rank == 0) fail("array " + a.name + " has no dimensions");
  Handle g = group(root, a.name, "array", a.python_class.c_str());
  std::vector<hsize_t> dims(a.dims.begin(), a.dims.end());
  Handle sp(H5Screate_simple(int(rank), dims.data(), nullptr), H5Sclose);
  Handle d(H5Dcreate2(g, "data", file_type(a.dtype), sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(a.name + "/data");
  str_attr(d, "units", a.units);
  if (a.data) {
    if (H5Dwrite(d, mem_type(a.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data) < 0) fail(a.name + "/data");
  } else if (a.fill) {
    a.fill([&](std::size_t first, std::size_t count, const void* bytes) {
      if (count == 0) return;
      std::vector<hsize_t> start(rank, 0), cnt(dims);
      start[0] = first;
      cnt[0] = count;
      Handle fs(H5Dget_space(d), H5Sclose);
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr);
      Handle ms(H5Screate_simple(int(rank), cnt.data(), nullptr), H5Sclose);
      if (H5Dwrite(d, mem_type(a.dtype), ms, fs, H5P_DEFAULT, bytes) < 0) fail(a.name + "/data band");
    });
  }
  for (std::size_t n = 0; n < rank; ++n) {
    const std::string name = "dim" + std::to_string(n);
    const double v[2] = {0.0, n < a.dim_steps.size() ? a.dim_steps[n] : 1.0};
    const hsize_t two = 2;
    Handle dsp(H5Screate_simple(1, &two, nullptr), H5Sclose);
    Handle dd(H5Dcreate2(g, name.c_str(), H5T_IEEE_F64LE, dsp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!dd.valid() || H5Dwrite(dd, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) fail(a.name + "/" + name);
    str_attr(dd, "name", n < a.dim_names.size() ? a.dim_names[n] : name);
    str_attr(dd, "units", n < a.dim_units.size() ? a.dim_units[n] : "pixels");
  }
  for (const auto& [k, v] : a.attributes.items()) {
    if (v.is_string()) str_attr(g, k.c_str(), v.get<std::string>());
    else if (v.is_number_integer()) i64_attr(g, k.c_str(), v.get<long long>());
    else if (v.is_number()) f64_attr(g, k.c_str(), v.get<double>());
    else str_attr(g, k.c_str(), v.dump());
  }
}

}  // namespace

EmdPixel emd_r_pixel(const nlohmann::json& cal) {
  if (const double s = positive(cal, "scan_step_angstrom")) return {s, "A"};
  return {};
}

EmdPixel emd_q_pixel(const nlohmann::json& cal) {
  if (const double q = positive(cal, "detector_inv_angstrom_per_pixel")) return {q, "A^-1"};
  if (const double m = positive(cal, "detector_mrad_per_pixel")) return {m, "mrad"};
  return {};
}

void write_emd(const std::string& path, const EmdFileSpec& spec, const std::string& what) {
  AtomicOutput out(path, what);
  {
    h5::QuietErrors quiet;
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST);
    Handle f(H5Fcreate(out.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
    if (!f.valid()) throw IoError("cannot create the " + what + " '" + path + "'");
    str_attr(f, "emd_group_type", "file");
    i64_attr(f, "version_major", 1);
    i64_attr(f, "version_minor", 0);
    str_attr(f, "UUID", uuid4());
    str_attr(f, "authoring_program", std::string("quantem-gpu ") + kVersion);
    str_attr(f, "authoring_user", "");
    Handle root = group(f, spec.root, "root", "Root");
    {
      Handle bundle = group(root, "metadatabundle", "metadatabundle", nullptr);
      Handle c = group(bundle, "calibration", "metadata", "Calibration");
      const EmdPixel r = emd_r_pixel(spec.calibration), q = emd_q_pixel(spec.calibration);
      md_number(c, "Q_pixel_size", q.size);
      md_number(c, "R_pixel_size", r.size);
      md_string(c, "Q_pixel_units", q.units);
      md_string(c, "R_pixel_units", r.units);
      md_bool(c, "QR_flip", false);
      const nlohmann::json& cal = spec.calibration;
      if (cal.is_object() && cal.contains("beam_center_row_px") && cal.contains("beam_center_col_px") &&
          cal["beam_center_row_px"].is_number() && cal["beam_center_col_px"].is_number()) {
        md_number(c, "qx0_mean", cal["beam_center_row_px"].get<double>());
        md_number(c, "qy0_mean", cal["beam_center_col_px"].get<double>());
      }
      Handle qc = group(bundle, "quantem_calibration", "metadata", "Metadata");
      if (cal.is_object())
        for (const auto& [k, v] : cal.items())
          if (v.is_number()) md_number(qc, k, v.get<double>());
    }
    if (!spec.provenance.is_null()) str_attr(root, "quantem_provenance", spec.provenance.dump());
    for (const EmdArraySpec& a : spec.arrays) write_array(root, a);
    if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) throw IoError("cannot write the " + what + " '" + path + "'");
  }
  out.commit();
}

}  // namespace qgpu::io
