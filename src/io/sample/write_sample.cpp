#include <hdf5.h>

#include <algorithm>
#include <future>

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

namespace {

void write_double_attr(hid_t obj, const char* name, double v) {
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle a(H5Acreate2(obj, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
}

h5::Handle make_group(hid_t parent, const char* name) {
  return h5::Handle(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
}

void write_truth(hid_t entry, const SampleSpec& s) {
  h5::Handle truth = make_group(entry, "truth");
  // The aberrations and the scan-detector rotation of the simulation (not calibration: no reader takes them).
  write_double_attr(truth, "C1_angstrom", s.defocus_angstrom);
  write_double_attr(truth, "A1_angstrom", s.astigmatism_angstrom);
  write_double_attr(truth, "A1_angle_deg", s.astigmatism_angle_deg);
  write_double_attr(truth, "rotation_deg", s.rotation_deg);
  write_double_attr(truth, "transpose", s.transpose ? 1.0 : 0.0);
  const std::vector<float> phase = object_phase_at_scan(s);
  hsize_t pd[2] = {s.scan_rows, s.scan_cols};
  h5::Handle psp(H5Screate_simple(2, pd, nullptr), H5Sclose);
  h5::Handle pds(H5Dcreate2(truth, "phase", H5T_IEEE_F32LE, psp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  H5Dwrite(pds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, phase.data());
}

}  // namespace

nlohmann::json sample_calibration(const SampleSpec& s) {
  const Sampling sm = sampling(s);
  nlohmann::json cal = {{"energy_kev", s.energy_kev},
                        {"semiangle_mrad", s.semiangle_mrad},
                        {"scan_step_angstrom", sm.scan_step_angstrom},
                        {"detector_mrad_per_pixel", sm.mrad_per_pixel},
                        {"disk_radius_px", sm.disk_radius_px},
                        {"defocus_angstrom", s.defocus_angstrom},
                        {"wavelength_angstrom", sm.wavelength_angstrom},
                        {"dose_per_frame", sm.dose_per_frame}};
  if (!s.defocus_in_calibration) cal.erase("defocus_angstrom");  // no sign hint (the truth keeps it)
  return cal;
}

void write_calibration_and_truth(hid_t entry, const SampleSpec& s) {
  h5::Handle cal = make_group(entry, "calibration");
  const nlohmann::json values = sample_calibration(s);
  for (const auto& [key, v] : values.items()) write_double_attr(cal, key.c_str(), v.get<double>());
  write_truth(entry, s);
}

void write_sample(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress) {
  sampling(s);  // validates the spec (sizes checked) before any file is created
  io::DectrisLayout l;
  l.det_rows = s.det_rows;
  l.det_cols = s.det_cols;
  l.dtype = s.dtype;
  l.frames = s.scan_rows * s.scan_cols;
  l.scan_rows = s.scan_rows;
  l.scan_cols = s.scan_cols;
  l.four_d = s.four_d;
  l.big_endian = s.big_endian;
  l.compress = s.compress;
  l.threads = s.threads;
  l.calibration = sample_calibration(s);
  io::DectrisWriter w;  // absent or a regular file: never a device node or FIFO
  w.open(path, l, "sample output");

  // Simulate the next batch of scan rows while the current one is compressed (the writer stores the previous batch
  // meanwhile). 1 GiB batches: each simulate_frames call first builds the object, probe and transmission on one
  // thread (~50 ms for a 512 x 512 scan), so fewer, larger batches keep the cores busy. Values do not depend on
  // batching.
  const std::size_t frame_bytes = s.det_rows * s.det_cols * dtype_size(s.dtype);
  const std::size_t rows_per_batch = std::max<std::size_t>(1, (std::size_t(1) << 30) / (frame_bytes * s.scan_cols));
  auto simulate_rows = [&](std::size_t r0) {
    const std::size_t rows = std::min(rows_per_batch, s.scan_rows - r0);
    std::vector<std::uint8_t> buf(rows * s.scan_cols * frame_bytes);
    simulate_frames(s, r0 * s.scan_cols, rows * s.scan_cols, buf.data());
    return buf;
  };
  std::future<std::vector<std::uint8_t>> next = std::async(std::launch::async, simulate_rows, 0);
  for (std::size_t r0 = 0; r0 < s.scan_rows; r0 += rows_per_batch) {
    std::vector<std::uint8_t> buf = next.get();
    if (r0 + rows_per_batch < s.scan_rows) next = std::async(std::launch::async, simulate_rows, r0 + rows_per_batch);
    const std::size_t rows = std::min(rows_per_batch, s.scan_rows - r0);
    w.write_frames(r0 * s.scan_cols, rows * s.scan_cols, buf.data());
    if (progress) progress(double(r0 + rows) / double(s.scan_rows));
  }
  write_truth(w.entry(), s);
  w.close();
}

}  // namespace qgpu::sample
