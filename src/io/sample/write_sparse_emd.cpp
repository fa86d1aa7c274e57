// The simulated sample as a py4DSTEM EMD 1.0 file, a stempy electron-event HDF5 file (version 3: a pixel counting c
// electrons at a position is in the first c frames of that position) and a LiberTEM raw CSR acquisition (TOML +
// indptr / indices / values): fixtures for the readers' tests, the same counts as write_sample.
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/emd/write_emd.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

namespace {

// The sample's frames as uint32 counts, a batch at a time: f(first frame, count, counts).
void for_each_batch(const SampleSpec& s, const std::function<void(double)>& progress,
                    const std::function<void(std::size_t, std::size_t, const std::vector<std::uint64_t>&)>& f) {
  const std::size_t frames = checked_mul<InvalidArgument>(s.scan_rows, s.scan_cols, "sample frames");
  const std::size_t px = s.det_rows * s.det_cols, es = dtype_size(s.dtype);
  const std::size_t batch = std::max<std::size_t>(1, (std::size_t(32) << 20) / std::max<std::size_t>(px * es, 1));
  std::vector<std::uint8_t> buf;
  std::vector<std::uint64_t> counts;
  for (std::size_t first = 0; first < frames; first += batch) {
    const std::size_t n = std::min(batch, frames - first);
    buf.resize(n * px * es);
    simulate_frames(s, first, n, buf.data());
    counts.resize(n * px);
    for (std::size_t i = 0; i < n * px; ++i) {
      switch (s.dtype) {
        case DType::u8: counts[i] = buf[i]; break;
        case DType::u16: counts[i] = reinterpret_cast<const std::uint16_t*>(buf.data())[i]; break;
        case DType::u32: counts[i] = reinterpret_cast<const std::uint32_t*>(buf.data())[i]; break;
        default: throw InvalidArgument("sparse sample formats hold counts: --dtype uint8, uint16 or uint32");
      }
    }
    f(first, n, counts);
    if (progress) progress(double(first + n) / double(frames));
  }
}

void check_counts(const SampleSpec& s) {
  if (s.dtype != DType::u8 && s.dtype != DType::u16 && s.dtype != DType::u32)
    throw InvalidArgument("sparse sample formats hold counts: --dtype uint8, uint16 or uint32, not " +
                          dtype_name(s.dtype));
}

}  // namespace

void write_sample_emd(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress) {
  io::EmdFileSpec spec;
  spec.calibration = sample_calibration(s);
  io::EmdArraySpec a;
  a.name = "datacube";
  a.python_class = "DataCube";
  a.dims = {s.scan_rows, s.scan_cols, s.det_rows, s.det_cols};
  a.dtype = s.dtype;
  a.dim_names = {"Rx", "Ry", "Qx", "Qy"};
  const io::EmdPixel r = io::emd_r_pixel(spec.calibration), q = io::emd_q_pixel(spec.calibration);
  a.dim_units = {r.units, r.units, q.units, q.units};
  a.dim_steps = {r.size, r.size, q.size, q.size};
  const std::size_t frame_bytes = s.det_rows * s.det_cols * dtype_size(s.dtype);
  a.fill = [&](const std::function<void(std::size_t, std::size_t, const void*)>& put) {
    std::vector<std::uint8_t> row(s.scan_cols * frame_bytes);
    for (std::size_t r0 = 0; r0 < s.scan_rows; ++r0) {
      simulate_frames(s, r0 * s.scan_cols, s.scan_cols, row.data());
      put(r0, 1, row.data());
      if (progress) progress(double(r0 + 1) / double(s.scan_rows));
    }
  };
  spec.arrays.push_back(std::move(a));
  io::write_emd(path, spec, "sample output");
}

void write_sample_stempy(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress) {
  check_counts(s);
  const std::size_t px = s.det_rows * s.det_cols;
  // Pass 1: the most electrons on one pixel of one frame = frames per position.
  std::uint64_t fpp = 1;
  for_each_batch(s, {}, [&](std::size_t, std::size_t, const std::vector<std::uint64_t>& c) {
    for (std::uint64_t v : c) fpp = std::max(fpp, v);
  });
  const std::uint64_t positions = std::uint64_t(s.scan_rows) * s.scan_cols;
  const hsize_t stored = checked_mul<InvalidArgument>(positions, fpp, "stempy sample frames");
  AtomicOutput out(path, "sample output");
  {
    using h5::Handle;
    Handle f(H5Fcreate(out.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!f.valid()) throw IoError("cannot create '" + path + "'");
    const auto int_attr = [&](hid_t o, const char* name, long long v) {
      Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
      Handle a(H5Acreate2(o, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      if (!a.valid() || H5Awrite(a, H5T_NATIVE_LLONG, &v) < 0) throw IoError("cannot write '" + path + "'");
    };
    int_attr(f, "version", 3);
    Handle g(H5Gcreate2(f, "electron_events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    Handle vt(H5Tvlen_create(H5T_STD_U32LE), H5Tclose);
    Handle mt(H5Tvlen_create(H5T_NATIVE_UINT32), H5Tclose);
    Handle sp(H5Screate_simple(1, &stored, nullptr), H5Sclose);
    Handle fr(H5Dcreate2(g, "frames", vt, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!fr.valid()) throw IoError("cannot write '" + path + "'");
    int_attr(fr, "Nx", (long long)s.det_rows);  // stempy: frames Nx = frame_shape[0]
    int_attr(fr, "Ny", (long long)s.det_cols);
    for_each_batch(s, progress, [&](std::size_t first, std::size_t n, const std::vector<std::uint64_t>& c) {
      std::vector<std::vector<std::uint32_t>> events(n * fpp);
      for (std::size_t k = 0; k < n; ++k)
        for (std::size_t p = 0; p < px; ++p)
          for (std::uint64_t e = 0; e < c[k * px + p]; ++e) events[k * fpp + e].push_back(std::uint32_t(p));
      std::vector<hvl_t> v(n * fpp);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = {events[i].size(), events[i].data()};
      const hsize_t start = first * fpp, count = n * fpp;
      Handle fs(H5Dget_space(fr), H5Sclose);
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
      Handle ms(H5Screate_simple(1, &count, nullptr), H5Sclose);
      if (H5Dwrite(fr, mt, ms, fs, H5P_DEFAULT, v.data()) < 0) throw IoError("cannot write '" + path + "'");
    });
    const hsize_t np = positions;
    Handle psp(H5Screate_simple(1, &np, nullptr), H5Sclose);
    Handle pd(H5Dcreate2(g, "scan_positions", H5T_STD_U32LE, psp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    std::vector<std::uint32_t> pos(positions);
    for (std::uint64_t i = 0; i < positions; ++i) pos[i] = std::uint32_t(i);
    if (!pd.valid() || H5Dwrite(pd, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, pos.data()) < 0)
      throw IoError("cannot write '" + path + "'");
    int_attr(pd, "Nx", (long long)s.scan_cols);  // stempy: scan_positions Nx = scan_shape[1]
    int_attr(pd, "Ny", (long long)s.scan_rows);
    if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) throw IoError("cannot write '" + path + "'");
  }
  out.commit();
}

std::vector<std::string> write_sample_csr(const std::string& path, const SampleSpec& s,
                                          const std::function<void(double)>& progress) {
  check_counts(s);
  namespace fs = std::filesystem;
  const fs::path base = fs::path(path).parent_path();
  const std::string stem = fs::path(path).stem().string();
  const std::string ip = stem + "_indptr.raw", ix = stem + "_indices.raw", dv = stem + "_data.raw";
  const std::size_t px = s.det_rows * s.det_cols;
  std::vector<std::int64_t> indptr{0};
  std::vector<std::uint32_t> indices;
  std::vector<std::uint32_t> values;
  for_each_batch(s, progress, [&](std::size_t, std::size_t n, const std::vector<std::uint64_t>& c) {
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t p = 0; p < px; ++p)
        if (c[k * px + p]) {
          indices.push_back(std::uint32_t(p));
          values.push_back(std::uint32_t(c[k * px + p]));
        }
      indptr.push_back(std::int64_t(indices.size()));
    }
  });
  const auto put = [](const fs::path& p, const void* d, std::size_t bytes) {
    write_file_atomically(p.string(), std::string_view(static_cast<const char*>(d), bytes), "sample output");
  };
  put(base / ip, indptr.data(), indptr.size() * 8);
  put(base / ix, indices.data(), indices.size() * 4);
  put(base / dv, values.data(), values.size() * 4);
  char toml[1024];
  std::snprintf(toml, sizeof toml,
                "[params]\nfiletype = \"raw_csr\"\nnav_shape = [%zu, %zu]\nsig_shape = [%zu, %zu]\n\n[raw_csr]\n"
                "indptr_file = \"%s\"\nindptr_dtype = \"<i8\"\nindices_file = \"%s\"\nindices_dtype = \"<u4\"\n"
                "data_file = \"%s\"\ndata_dtype = \"<u4\"\n",
                s.scan_rows, s.scan_cols, s.det_rows, s.det_cols, ip.c_str(), ix.c_str(), dv.c_str());
  write_file_atomically(path, std::string_view(toml), "sample output");
  return {path, (base / ip).string(), (base / ix).string(), (base / dv).string()};
}

}  // namespace qgpu::sample
