#include "io/convert.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "device/device.hpp"
#include "io/emd/write_emd.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "io/npy/npy.hpp"

namespace qgpu::io {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The pixel mask of the output frame: the applied (given) mask or the file's, cut to the detector region and binned.
std::vector<std::uint32_t> output_bad_pixels(const LoadPlan& p, bool& present) {
  const std::vector<std::uint32_t>& src =
      !p.pixel_mask_source.empty() && !p.bad_pixels.empty() ? p.bad_pixels : p.info.bad_pixels;
  present = p.info.has_pixel_mask || !p.bad_pixels.empty();
  const std::size_t det_cols = p.info.shape.det_cols, b = p.bin_detector;
  const std::size_t out_cols = p.out_shape.det_cols, out_rows = p.out_shape.det_rows;
  std::vector<std::uint32_t> out;
  for (std::uint32_t i : src) {
    const std::size_t r = i / det_cols, c = i % det_cols;
    if (r < p.detector.row0 || c < p.detector.col0) continue;
    const std::size_t orow = (r - p.detector.row0) / b, ocol = (c - p.detector.col0) / b;
    if (orow >= out_rows || ocol >= out_cols) continue;
    out.push_back(std::uint32_t(orow * out_cols + ocol));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

}  // namespace

ConvertResult convert(const std::string& in, const std::string& out, const LoadOptions& load, const ConvertOptions& o) {
  if (o.to != "h5" && o.to != "npy" && o.to != "emd")
    throw InvalidArgument("convert writes h5, npy or emd, not '" + o.to + "'");
  check_output_path(out, "convert output");  // before the load: a bad output fails first
  std::string sidecar;
  if (o.to == "npy") {
    sidecar = (fs::path(out).parent_path() / (fs::path(out).stem().string() + ".json")).string();
    check_output_path(sidecar, "convert sidecar");
  }
  if (same_file(in, out)) throw InvalidArgument("convert would write over its input '" + in + "'");

  const LoadPlan plan = plan_load(in, load);
  const auto t0 = Clock::now();
  const Dataset ds = io::load(in, load);
  ConvertResult r;
  r.load_seconds = seconds_since(t0);
  r.path = out;
  r.sidecar = sidecar;
  r.shape = ds.shape();
  r.dtype = ds.dtype();
  r.dense_bytes = ds.nbytes();
  const Shape4D& s = r.shape;
  const std::size_t frame_bytes = s.frame_pixels() * dtype_size(r.dtype);
  const std::uint64_t frames = std::uint64_t(s.scan_rows) * s.scan_cols;

  r.calibration = ds.metadata().value("calibration", nlohmann::json::object());  // the load's (io::calibration_of_load)
  nlohmann::json rules = {{"scan_step_angstrom", "x bin_scan"},
                          {"detector_mrad_per_pixel", "x bin_detector"},
                          {"detector_pixel_size_m", "x bin_detector"},
                          {"detector_inv_angstrom_per_pixel", "x bin_detector"},
                          {"disk_radius_px", "/ bin_detector"},
                          {"beam_center_row_px", "(value - detector row0 - (bin - 1) / 2) / bin_detector"},
                          {"beam_center_col_px", "(value - detector col0 - (bin - 1) / 2) / bin_detector"}};
  r.provenance = {{"operation", "io.convert"},
                  {"version", kVersion},
                  {"to", o.to},
                  {"output_shape", s.dims()},
                  {"output_dtype", dtype_name(r.dtype)},
                  {"calibration_rules", rules},
                  {"source_calibration", ds.metadata().value("calibration_detail", nlohmann::json::object())},
                  {"load", ds.provenance().to_json()}};

  const std::size_t budget = o.batch_bytes ? o.batch_bytes : std::size_t(256) << 20;
  const std::size_t row_bytes = checked_mul<InvalidArgument>(frame_bytes, s.scan_cols, "scan row bytes");
  const std::size_t rows_per_batch = std::max<std::size_t>(1, budget / std::max<std::size_t>(1, row_bytes));
  const auto t1 = Clock::now();
  // Bands of scan rows: pointers into a dense host dataset (no copy), else copied out by Dataset::read (GPU, encoded).
  const bool host_dense = ds.backend() == Backend::cpu && ds.representation() == "dense";
  auto for_each_band =
      [&](const std::function<void(std::size_t r0, std::size_t rows, const std::uint8_t*, std::size_t bytes)>& f) {
        for (std::size_t r0 = 0; r0 < s.scan_rows; r0 += rows_per_batch) {
          const std::size_t rows = std::min(rows_per_batch, s.scan_rows - r0);
          if (host_dense) {
            f(r0, rows, ds.host_bytes().data() + r0 * row_bytes, rows * row_bytes);
          } else {
            const HostArray4D band = ds.read(Region{r0, 0, rows, s.scan_cols}, Region{});
            f(r0, rows, band.bytes.data(), band.bytes.size());
          }
          if (o.progress) o.progress(double(r0 + rows) / double(s.scan_rows));
        }
      };

  if (o.to == "h5") {
    DectrisLayout l;
    l.det_rows = s.det_rows;
    l.det_cols = s.det_cols;
    l.dtype = r.dtype;
    l.frames = frames;
    l.scan_rows = s.scan_rows;
    l.scan_cols = s.scan_cols;
    l.threads = o.threads;
    l.fixed_array_index = true;  // one chunk per frame: hundreds of thousands of O(1) index inserts
    l.bitshuffle.block_elems = o.block_elems;
    l.calibration = r.calibration;
    l.provenance = r.provenance;
    l.bad_pixels = output_bad_pixels(plan, l.has_pixel_mask);
    DectrisWriter w;
    w.open(out, l, "convert output");
    for_each_band([&](std::size_t r0, std::size_t rows, const std::uint8_t* band, std::size_t) {
      w.write_frames(std::uint64_t(r0) * s.scan_cols, rows * s.scan_cols, band);
    });
    if (w.frames_written() != frames)
      throw Error("convert wrote " + std::to_string(w.frames_written()) + " of " + std::to_string(frames) + " frames");
    w.close();
  } else if (o.to == "emd") {
    // py4DSTEM EMD 1.0: the datacube (Rx, Ry, Qx, Qy) = (scan row, scan col, det row, det col) with its Calibration.
    EmdFileSpec spec;
    spec.calibration = r.calibration;
    spec.provenance = r.provenance;
    EmdArraySpec a;
    a.name = "datacube";
    a.python_class = "DataCube";
    a.dims = s.dims();
    a.dtype = r.dtype;
    a.dim_names = {"Rx", "Ry", "Qx", "Qy"};
    const EmdPixel rp = emd_r_pixel(r.calibration), qp = emd_q_pixel(r.calibration);
    a.dim_units = {rp.units, rp.units, qp.units, qp.units};
    a.dim_steps = {rp.size, rp.size, qp.size, qp.size};
    a.fill = [&](const std::function<void(std::size_t, std::size_t, const void*)>& put) {
      for_each_band([&](std::size_t r0, std::size_t rows, const std::uint8_t* band, std::size_t) { put(r0, rows, band); });
    };
    spec.arrays.push_back(std::move(a));
    write_emd(out, spec, "convert output");
  } else {
    static const char* descr[] = {"|u1", "<u2", "<u4", "<u8", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8"};
    const std::string header = npy_header(descr[int(r.dtype)], s.dims());
    write_file_atomically(
        out,
        [&](std::FILE* f) {
          if (std::fwrite(header.data(), 1, header.size(), f) != header.size())
            throw IoError("cannot write '" + out + "'");
          for_each_band([&](std::size_t, std::size_t, const std::uint8_t* band, std::size_t bytes) {
            if (std::fwrite(band, 1, bytes, f) != bytes) throw IoError("cannot write '" + out + "'");
          });
        },
        "convert output");
    bool present = false;
    const std::vector<std::uint32_t> bad = output_bad_pixels(plan, present);
    nlohmann::json side = {{"array", fs::path(out).filename().string()},
                           {"shape", s.dims()},
                           {"dtype", dtype_name(r.dtype)},
                           {"axes", {"scan_row", "scan_col", "det_row", "det_col"}},
                           {"calibration", r.calibration},
                           {"pixel_mask", present ? nlohmann::json(bad) : nlohmann::json(nullptr)},
                           {"provenance", r.provenance}};
    write_file_atomically(sidecar, side.dump(2) + "\n", "convert sidecar");
  }
  r.write_seconds = seconds_since(t1);
  struct stat st {};
  if (::stat(out.c_str(), &st) == 0) r.file_bytes = std::uint64_t(st.st_size);
  return r;
}

}  // namespace qgpu::io
