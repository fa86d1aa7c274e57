#include "display/figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "display/colormap.hpp"
#include "display/display.hpp"
#include "display/font.hpp"
#include "display/scaling.hpp"

namespace qgpu::display {

namespace {

constexpr std::uint8_t kWhite[4] = {255, 255, 255, 255};
constexpr std::uint8_t kBlack[4] = {0, 0, 0, 255};

void fill(Rgba& img, std::size_t r0, std::size_t c0, std::size_t rows, std::size_t cols, const std::uint8_t* colour) {
  for (std::size_t r = r0; r < std::min(img.rows, r0 + rows); ++r)
    for (std::size_t c = c0; c < std::min(img.cols, c0 + cols); ++c)
      std::copy_n(colour, 4, &img.rgba[(r * img.cols + c) * 4]);
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The data value of a scaled value s (the scale undone).
double unscaled(double s, Scale scale) {
  switch (scale) {
    case Scale::linear: return s;
    case Scale::log: return std::expm1(s);
    case Scale::signed_log: return s < 0 ? -std::expm1(-s) : std::expm1(s);
  }
  return s;
}

// Draws the scale bar into img (bottom left); its description, or null when it does not fit.
nlohmann::json scale_bar(Rgba& img, const PixelSize& ps, std::size_t png_scale, std::size_t k) {
  const double per_out_px = ps.value / double(png_scale);  // physical size of one output pixel
  const double length = round_length(0.25 * double(img.cols) * per_out_px);
  const auto bar_px = static_cast<std::size_t>(std::floor(length / per_out_px + 0.5));
  std::string label;
  if (ps.unit == "angstrom")
    label = length >= 10 ? number_text(length / 10) + " NM" : number_text(length) + " A";
  else
    label = number_text(length) + " MRAD";
  const std::size_t m = k, text_w = text_width_cells(label) * k, bar_t = 2 * k;
  const std::size_t box_w = 2 * m + std::max(bar_px, text_w), box_h = m + 5 * k + k + bar_t + m;
  if (bar_px < 2 || box_w + 4 * k > img.cols || box_h + 4 * k > img.rows) return nullptr;
  const std::size_t left = 2 * k, top = img.rows - 2 * k - box_h;
  fill(img, top, left, box_h, box_w, kBlack);
  draw_text(img, top + m, left + m, label, k, kWhite);
  fill(img, top + m + 6 * k, left + m, bar_t, bar_px, kWhite);
  return {{"length", ps.unit == "angstrom" && length >= 10 ? length / 10 : length},
          {"unit", ps.unit == "angstrom" ? (length >= 10 ? "nm" : "angstrom") : "mrad"},
          {"label", label},
          {"pixels", bar_px}};
}

// The image with a colourbar margin on the right.
Rgba with_colorbar(const Rgba& img, const nlohmann::json& params, std::size_t k, nlohmann::json& out) {
  for (const char* key : {"colormap", "scale", "lo", "hi"})
    if (!params.contains(key))
      throw InvalidArgument(std::string("figure: the rendered image's provenance lacks '") + key +
                            "' (a colourbar needs display::render's output)");
  const Lut& lut = colormap(params.at("colormap").get<std::string>());
  const Scale scale = scale_from_name(params.at("scale").get<std::string>());
  const double lo = params.at("lo").get<double>(), hi = params.at("hi").get<double>();
  const std::string hi_text = number_text(unscaled(hi, scale)), lo_text = number_text(unscaled(lo, scale));
  const bool zero = lo < 0 && hi > 0;
  const std::size_t label_w = std::max(text_width_cells(hi_text), text_width_cells(lo_text)) * k;
  const std::size_t gap = 2 * k, bar_w = std::max<std::size_t>(4 * k, img.cols / 20);
  Rgba o;
  o.rows = img.rows;
  o.cols = img.cols + gap + bar_w + k + label_w + gap;
  o.provenance = img.provenance;
  o.rgba.assign(checked_mul(checked_mul(o.rows, o.cols, "figure pixels"), std::size_t(4), "figure bytes"), 255);
  for (std::size_t r = 0; r < img.rows; ++r)
    std::copy_n(&img.rgba[r * img.cols * 4], img.cols * 4, &o.rgba[r * o.cols * 4]);
  // The bar spans rows [t0, t1): index 255 at t0, 0 at t1 - 1.
  std::size_t t0 = 3 * k, t1 = img.rows > 6 * k ? img.rows - 3 * k : 0;
  if (t1 < t0 + 2) t0 = 0, t1 = img.rows;
  const std::size_t span = t1 - 1 - t0, bar_c = img.cols + gap, text_c = bar_c + bar_w + k;
  for (std::size_t r = t0; r < t1; ++r) {
    const std::size_t idx = span ? ((t1 - 1 - r) * 255 + span / 2) / span : 255;
    fill(o, r, bar_c, 1, bar_w, &lut[4 * idx]);
  }
  const auto text_row = [&](std::size_t centre) { return centre >= 2 * k ? centre - 2 * k : 0; };
  const std::size_t hi_row = text_row(t0), lo_row = std::min(text_row(t1 - 1), o.rows > 5 * k ? o.rows - 5 * k : 0);
  draw_text(o, hi_row, text_c, hi_text, k, kBlack);
  draw_text(o, lo_row, text_c, lo_text, k, kBlack);
  out = {{"lo", unscaled(lo, scale)}, {"hi", unscaled(hi, scale)}, {"labels", {lo_text, hi_text}},
         {"width", o.cols - img.cols}};
  if (zero) {
    const std::size_t idx = static_cast<std::size_t>(color_index(0.0f, lo, hi));
    const std::size_t row = t1 - 1 - (idx * span + 127) / 255, zr = text_row(row);
    if (zr >= hi_row + 6 * k && zr + 6 * k <= lo_row) {
      draw_text(o, zr, text_c, "0", k, kBlack);
      out["labels"].push_back("0");
    }
  }
  return o;
}

}  // namespace

void validate(const FigureOptions& f) {
  if (f.png_scale < 1 || f.png_scale > 64)
    throw InvalidArgument("png_scale must be in 1..64, got " + std::to_string(f.png_scale));
  if (f.pixel_size) {
    if (!std::isfinite(f.pixel_size->value) || f.pixel_size->value <= 0)
      throw InvalidArgument("pixel size must be finite and > 0, got " + nlohmann::json(f.pixel_size->value).dump());
    if (f.pixel_size->unit != "angstrom" && f.pixel_size->unit != "mrad")
      throw InvalidArgument("pixel size unit must be 'angstrom' or 'mrad', got '" + f.pixel_size->unit + "'");
  }
}

double round_length(double max_length) {
  if (!(max_length > 0) || !std::isfinite(max_length)) throw InvalidArgument("round_length: need a positive length");
  double decade = std::pow(10.0, std::floor(std::log10(max_length)));
  if (decade > max_length) decade /= 10;  // log10 rounding
  for (double m : {5.0, 2.0, 1.0})
    if (m * decade <= max_length * (1 + 1e-12)) return m * decade;
  return decade / 2;
}

Rgba enlarge(const Rgba& img, std::size_t k) {
  if (k == 1) return img;
  Rgba o;
  o.rows = checked_mul(img.rows, k, "enlarged rows");
  o.cols = checked_mul(img.cols, k, "enlarged cols");
  o.provenance = img.provenance;
  o.rgba.resize(checked_mul(checked_mul(o.rows, o.cols, "enlarged pixels"), std::size_t(4), "enlarged bytes"));
  for (std::size_t r = 0; r < o.rows; ++r)
    for (std::size_t c = 0; c < o.cols; ++c)
      std::copy_n(&img.rgba[((r / k) * img.cols + c / k) * 4], 4, &o.rgba[(r * o.cols + c) * 4]);
  return o;
}

Rgba figure(const Rgba& rendered, const FigureOptions& f) {
  validate(f);
  Rgba img = enlarge(rendered, f.png_scale);
  nlohmann::json fj = {{"png_scale", f.png_scale},
                       {"annotate", f.annotate},
                       {"pixel_size", f.pixel_size ? nlohmann::json(f.pixel_size->value) : nlohmann::json(nullptr)},
                       {"pixel_unit",
                        f.pixel_size ? nlohmann::json(f.pixel_size->unit + "/px") : nlohmann::json(nullptr)},
                       {"scale_bar", nullptr},
                       {"colorbar", nullptr}};
  if (f.annotate) {
    const std::size_t k = std::max<std::size_t>(1, std::min(img.rows, img.cols) / 96);
    if (f.pixel_size) fj["scale_bar"] = scale_bar(img, *f.pixel_size, f.png_scale, k);
    nlohmann::json cb;
    img = with_colorbar(img, rendered.provenance.parameters, k, cb);
    fj["colorbar"] = cb;
  }
  img.provenance.parameters["figure"] = fj;
  img.provenance.output_shape = {img.rows, img.cols, 4};
  return img;
}

DisplayOptions symmetric_about_zero(const Image<float>& img, DisplayOptions o) {
  const Histogram h = histogram(img, o);
  double m = std::max(std::abs(h.lo), std::abs(h.hi));
  if (!(m > 0)) m = 1.0;
  o.vmin = -m;
  o.vmax = m;
  return o;
}

}  // namespace qgpu::display
