#include "movie/movie.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "display/colormap.hpp"
#include "display/display.hpp"
#include "movie/encoder.hpp"
#include "movie/frame_ops.hpp"
#include "resident/dataset_provenance.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::movie {

namespace {

constexpr std::size_t kMaxFrames = 100000;
constexpr std::size_t kDefaultSweepFrames = 30;

bool is_sweep(Sequence s) { return s == Sequence::bf_sweep || s == Sequence::adf_sweep || s == Sequence::ssb_defocus; }

std::string fmt(const char* f, double a, double b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// Value of frame i of n evenly spaced from a to b (both included).
double sweep_value(double a, double b, std::size_t i, std::size_t n) {
  return n == 1 ? a : a + (b - a) * static_cast<double>(i) / static_cast<double>(n - 1);
}

std::size_t round_half_up(double v) { return static_cast<std::size_t>(std::floor(v + 0.5)); }

template <class T> void widen(const HostArray4D& a, std::vector<float>& out) {
  const T* p = a.as<T>();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(p[i]);
}

Image<float> diffraction_frame(const Dataset& ds, std::size_t r, std::size_t c) {
  const HostArray4D a = ds.read(Region{r, c, 1, 1});
  Image<float> f;
  f.rows = a.shape.det_rows;
  f.cols = a.shape.det_cols;
  f.data.resize(f.rows * f.cols);
  dispatch_stored_dtype(a.dtype, [&](auto t) { widen<decltype(t)>(a, f.data); });
  return f;
}

// The scan positions of a path sequence.
std::vector<std::pair<std::size_t, std::size_t>> path_positions(const Dataset& ds, const MovieSpec& s) {
  const Shape4D& sh = ds.shape();
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (s.sequence == Sequence::path_row) {
    if (s.row >= sh.scan_rows)
      throw RegionError("movie path row " + std::to_string(s.row) + " is outside the scan (" +
                        std::to_string(sh.scan_rows) + " rows)");
    const std::size_t n = s.frames.value_or(sh.scan_cols);
    for (std::size_t i = 0; i < n; ++i) out.emplace_back(s.row, round_half_up(sweep_value(0, double(sh.scan_cols - 1), i, n)));
    return out;
  }
  const std::size_t r0 = s.line[0], c0 = s.line[1], r1 = s.line[2], c1 = s.line[3];
  for (std::size_t r : {r0, r1})
    if (r >= sh.scan_rows)
      throw RegionError("movie path line row " + std::to_string(r) + " is outside the scan (" +
                        std::to_string(sh.scan_rows) + " rows)");
  for (std::size_t c : {c0, c1})
    if (c >= sh.scan_cols)
      throw RegionError("movie path line column " + std::to_string(c) + " is outside the scan (" +
                        std::to_string(sh.scan_cols) + " columns)");
  const std::size_t steps = std::max(r0 > r1 ? r0 - r1 : r1 - r0, c0 > c1 ? c0 - c1 : c1 - c0);
  const std::size_t n = s.frames.value_or(steps + 1);
  for (std::size_t i = 0; i < n; ++i)
    out.emplace_back(round_half_up(sweep_value(double(r0), double(r1), i, n)),
                     round_half_up(sweep_value(double(c0), double(c1), i, n)));
  return out;
}

}  // namespace

std::string sequence_name(Sequence s) {
  switch (s) {
    case Sequence::bf_sweep: return "bf_sweep";
    case Sequence::adf_sweep: return "adf_sweep";
    case Sequence::path_row: return "path_row";
    case Sequence::path_line: return "path_line";
    case Sequence::ssb_defocus: return "ssb_defocus";
  }
  return "unknown";
}

Sequence sequence_from_name(const std::string& n) {
  for (Sequence s : {Sequence::bf_sweep, Sequence::adf_sweep, Sequence::path_row, Sequence::path_line,
                     Sequence::ssb_defocus})
    if (sequence_name(s) == n || sequence_name(s).substr(0, sequence_name(s).find('_')) == n) return s;
  if (n == "ssb") return Sequence::ssb_defocus;
  throw InvalidArgument("unknown movie sequence '" + n +
                        "' (expected bf_sweep, adf_sweep, path_row, path_line or ssb_defocus)");
}

Resize resize_from_name(const std::string& n) {
  if (n == "nearest") return Resize::nearest;
  if (n == "area") return Resize::area;
  throw InvalidArgument("unknown resize '" + n + "' (expected nearest or area)");
}

void validate(const MovieSpec& s, const std::string& out_path) {
  if (is_sweep(s.sequence)) {
    if (!std::isfinite(s.start) || !std::isfinite(s.stop))
      throw InvalidArgument("movie " + sequence_name(s.sequence) + ": range ends must be finite");
    if (s.start > s.stop)
      throw InvalidArgument("movie " + sequence_name(s.sequence) + ": start " + fmt("%g", s.start) +
                            " is greater than stop " + fmt("%g", s.stop));
    if (s.sequence != Sequence::ssb_defocus && s.start < 0)
      throw InvalidArgument("movie " + sequence_name(s.sequence) + ": radii must be >= 0");
  }
  if (s.sequence == Sequence::adf_sweep) {
    if (s.adf_width && s.adf_outer) throw InvalidArgument("movie adf_sweep: give an ADF width or an outer radius, not both");
    if (s.adf_width && !(*s.adf_width > 0 && std::isfinite(*s.adf_width)))
      throw InvalidArgument("movie adf_sweep: width must be positive and finite");
    if (s.adf_outer && !(std::isfinite(*s.adf_outer) && *s.adf_outer >= s.stop))
      throw InvalidArgument("movie adf_sweep: fixed outer radius " + fmt("%g", *s.adf_outer) +
                            " is below the last inner radius " + fmt("%g", s.stop));
  } else if (s.adf_width || s.adf_outer) {
    throw InvalidArgument("movie: an ADF width or outer radius only applies to adf_sweep");
  }
  if (s.frames && (*s.frames == 0 || *s.frames > kMaxFrames))
    throw InvalidArgument("movie frames must be 1.." + std::to_string(kMaxFrames) + " (got " +
                          std::to_string(*s.frames) + ")");
  if ((s.width == 0) != (s.height == 0)) throw InvalidArgument("movie size needs both width and height");
  if (s.width > 16384 || s.height > 16384) throw InvalidArgument("movie size must be at most 16384 x 16384");
  if (s.fps == 0 || s.fps > 60) throw InvalidArgument("movie fps must be 1..60 (got " + std::to_string(s.fps) + ")");
  display::validate(s.look);
  const Container c = container_of(out_path);
  const bool known = s.encoder == "auto" ||
                     (c == Container::mp4 ? s.encoder == "libx264" || s.encoder == "h264_nvenc" : s.encoder == "gif");
  if (!known)
    throw InvalidArgument("movie encoder '" + s.encoder + "' does not write " +
                          (c == Container::mp4 ? "mp4 (auto, libx264, h264_nvenc)" : "gif (auto, gif)"));
  check_output_path(out_path, "movie output");  // absent or a regular file; never a device node or FIFO
}

std::size_t frame_count(const Dataset& ds, const MovieSpec& s) {
  if (s.sequence == Sequence::path_row || s.sequence == Sequence::path_line) {
    if (ds.dtype() != DType::u8 && ds.dtype() != DType::u16 && ds.dtype() != DType::u32)
      throw DTypeError("movie: diffraction frames of dtype " + dtype_name(ds.dtype()) + " are not supported");
    return path_positions(ds, s).size();
  }
  if (s.sequence == Sequence::ssb_defocus) ssb::params_from_metadata(ds);  // the calibration must be there
  return s.frames.value_or(kDefaultSweepFrames);
}

void render_frames(const Dataset& ds, const MovieSpec& s, const std::function<void(const Frame&)>& sink) {
  const std::size_t n = frame_count(ds, s);
  const Backend b = ds.backend();
  const display::Lut& lut = display::colormap(s.look.colormap);
  auto emit = [&](const Image<float>& img, const std::string& text, double value) {
    Frame f;
    f.rgba = display::render(on_backend(img, b), s.look);  // host frames (path) are labelled with the dataset's backend
    if (s.width) f.rgba = resize(f.rgba, s.height, s.width, s.resize);
    f.label = text;
    f.value = value;
    if (s.label) burn_label(f.rgba, text, lut);
    sink(f);
  };

  if (s.sequence == Sequence::path_row || s.sequence == Sequence::path_line) {
    const std::size_t cols = ds.shape().scan_cols;
    for (const auto& [r, c] : path_positions(ds, s))
      emit(diffraction_frame(ds, r, c), "SCAN " + std::to_string(r) + "," + std::to_string(c), double(r * cols + c));
    return;
  }
  if (s.sequence == Sequence::ssb_defocus) {
    ssb::SsbParams p = ssb::params_from_metadata(ds);
    for (std::size_t i = 0; i < n; ++i) {
      const double c1 = sweep_value(s.start, s.stop, i, n);
      p.aberrations.C1 = c1;
      emit(ssb::reconstruct(ds, p).phase, fmt("C1 %.1f A", c1), c1);
    }
    return;
  }
  detector::Center center;
  if (s.center) {
    center = *s.center;
  } else {
    const detector::DiskFit fit = detector::fit_bf_disk(ds);
    center = {fit.center_row, fit.center_col};
  }
  double corner = 0;  // largest distance from the centre to a detector pixel
  for (double r : {0.0, double(ds.shape().det_rows) - 1})
    for (double c : {0.0, double(ds.shape().det_cols) - 1})
      corner = std::max(corner, std::hypot(r - center.first, c - center.second));
  for (std::size_t i = 0; i < n; ++i) {
    const double v = sweep_value(s.start, s.stop, i, n);
    if (s.sequence == Sequence::bf_sweep) {
      emit(detector::bf(ds, v, center).to_float(), fmt("BF R %.1f PX", v), v);
    } else {
      const double outer = s.adf_outer ? *s.adf_outer : s.adf_width ? v + *s.adf_width : std::max(corner, v);
      emit(detector::adf(ds, v, outer, center).to_float(), fmt("ADF %.1f-%.1f PX", v, outer), v);
    }
  }
}

MovieResult render(const Dataset& ds, const std::string& out_path, const MovieSpec& s,
                   const std::function<void(double)>& progress) {
  validate(s, out_path);
  const std::size_t n = frame_count(ds, s);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  double encode_s = 0;
  MovieResult res;
  res.path = out_path;
  std::unique_ptr<Encoder> enc;
  const display::Lut& lut = display::colormap(s.look.colormap);
  // Encoded into a temporary file beside out_path, renamed over it at the end: a failure leaves no partial
  // movie and whatever was at out_path untouched.
  AtomicOutput out(out_path, "movie output");
  nlohmann::json values = nlohmann::json::array(), labels = nlohmann::json::array();
  try {
    render_frames(ds, s, [&](const Frame& f) {
      values.push_back(f.value);
      labels.push_back(f.label);
      const auto te = clock::now();
      if (!enc) enc = open_encoder(out.temp_path(), f.rgba.rows, f.rgba.cols, s.fps, lut, s.encoder);
      enc->add(f.rgba);
      ++res.frames;
      encode_s += std::chrono::duration<double>(clock::now() - te).count();
      if (progress) progress(double(res.frames) / double(n));
    });
    if (!enc) throw InvalidArgument("movie: the sequence has no frames");
    const auto te = clock::now();
    enc->finish();
    encode_s += std::chrono::duration<double>(clock::now() - te).count();
  } catch (...) {
    enc.reset();  // closes the temporary before AtomicOutput removes it
    throw;
  }
  out.commit();
  res.width = enc->cols();
  res.height = enc->rows();
  res.encoder = enc->encoder_name();
  res.encode_seconds = encode_s;
  res.render_seconds = std::chrono::duration<double>(clock::now() - t0).count() - encode_s;
  nlohmann::json params = {{"sequence", sequence_name(s.sequence)},
                           {"frame_values", std::move(values)},
                           {"frame_labels", std::move(labels)},
                           {"colormap", s.look.colormap},
                           {"scale", display::scale_name(s.look.scale)},
                           {"percentiles", {s.look.lower_percentile, s.look.upper_percentile}},
                           {"fps", s.fps},
                           {"encoder", res.encoder},
                           {"path", out_path}};
  if (s.sequence == Sequence::bf_sweep || s.sequence == Sequence::adf_sweep || s.sequence == Sequence::ssb_defocus)
    params["range"] = {s.start, s.stop};
  if (s.center) params["center"] = {s.center->first, s.center->second};
  if (s.adf_width) params["adf_width"] = *s.adf_width;
  if (s.adf_outer) params["adf_outer"] = *s.adf_outer;
  res.provenance = dataset_provenance(ds, "movie." + sequence_name(s.sequence), "rgb frames",
                                      {res.frames, res.height, res.width}, std::move(params));
  return res;
}

bool nvenc_available() { return h264_nvenc_opens(); }

}  // namespace qgpu::movie
