#pragma once
// Writes one result image as NAME.npy (raw values), NAME.png (display: colours, --png-scale, --annotate) and NAME.json
// (provenance of the result and of its picture, and the product's calibration: pixel size in angstrom or mrad).
#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/atomic_output.hpp"
#include "core/image.hpp"
#include "display/display.hpp"
#include "display/figure.hpp"
#include "io/npy/npy.hpp"

namespace qgpu::cli {

// NAME.json in `dir`, pretty-printed (through a temporary file, core/atomic_output.hpp).
inline void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  write_file_atomically(path.string(), j.dump(2) + "\n", "JSON output");
}

// --png-scale and --annotate of the image-writing commands (display/figure.hpp).
struct PngFlags {
  std::size_t png_scale = 1;
  bool annotate = false;
};

inline void add_png_flags(CLI::App* cmd, PngFlags& p) {
  cmd->add_option("--png-scale", p.png_scale, "enlarge the PNGs N times (nearest neighbour, 1..64)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--annotate", p.annotate,
                "colourbar on the PNGs, and a scale bar where the pixel size is known (file calibration)");
}

// What one product's files look like and where its pixels lie.
struct ProductLook {
  display::DisplayOptions look;
  display::FigureOptions figure;  // pixel_size set from `calibration` when known
  bool symmetric = false;         // a signed map: display range symmetric about 0
  nlohmann::json calibration;     // written to NAME.json
};

// The calibration of a product from the dataset's metadata "calibration" ({key: value}): the file's scan step and
// detector mrad/px (null when absent) and the product's own pixel size: scan_step_angstrom (space "scan") or
// detector_mrad_per_pixel (space "detector") times `factor` (a bin factor, or 1 / upsample), `rule` saying how.
inline nlohmann::json product_calibration(const nlohmann::json& cal, const std::string& space, double factor = 1.0,
                                          const std::string& rule = "") {
  const auto value = [&](const char* key) -> nlohmann::json {
    if (cal.is_object() && cal.contains(key) && cal.at(key).is_number() && cal.at(key).get<double>() > 0)
      return cal.at(key);
    return nullptr;
  };
  nlohmann::json j = {{"scan_step_angstrom", value("scan_step_angstrom")},
                      {"detector_mrad_per_pixel", value("detector_mrad_per_pixel")},
                      {"space", space}};
  const nlohmann::json& base = space == "scan" ? j["scan_step_angstrom"] : j["detector_mrad_per_pixel"];
  j["pixel_size"] = base.is_null() ? nlohmann::json(nullptr) : nlohmann::json(base.get<double>() * factor);
  j["pixel_unit"] = space == "scan" ? "angstrom/px" : "mrad/px";
  j["pixel_size_rule"] = (space == "scan" ? std::string("scan_step_angstrom") : std::string("detector_mrad_per_pixel")) +
                         (rule.empty() ? std::string() : " " + rule) +
                         (base.is_null() ? std::string(" (not in the file's calibration: unknown)") : std::string());
  return j;
}

inline ProductLook product_look(const display::DisplayOptions& look, const PngFlags& png, nlohmann::json calibration,
                                bool symmetric = false) {
  ProductLook p;
  p.look = look;
  p.figure.png_scale = png.png_scale;
  p.figure.annotate = png.annotate;
  p.symmetric = symmetric;
  if (calibration.is_object() && calibration.value("pixel_size", nlohmann::json()).is_number())
    p.figure.pixel_size = display::PixelSize{calibration["pixel_size"].get<double>(),
                                             calibration.value("space", "") == "scan" ? "angstrom" : "mrad"};
  p.calibration = std::move(calibration);
  return p;
}

// `view` optionally turns the image into what is shown (e.g. display::pattern_log); the .npy keeps the values.
template <class T>
void write_outputs(const std::filesystem::path& dir, const std::string& name, const Image<T>& img,
                   const ProductLook& p, Image<float> (*view)(const Image<float>&) = nullptr) {
  io::write_npy((dir / (name + ".npy")).string(), {img.rows, img.cols}, img.data);
  Image<float> f = as_float(img);
  if (view) f = view(f);
  const display::DisplayOptions look = p.symmetric ? display::symmetric_about_zero(f, p.look) : p.look;
  const display::Rgba rgba = display::figure(display::render(f, look), p.figure);
  display::write_png((dir / (name + ".png")).string(), rgba);
  write_json(dir / (name + ".json"), nlohmann::json{{"result", img.provenance.to_json()},
                                                    {"display", rgba.provenance.to_json()},
                                                    {"calibration", p.calibration}});
  std::printf("  %-14s %zux%zu -> %s.{npy,png,json}\n", name.c_str(), img.rows, img.cols, (dir / name).c_str());
}

// Sums in their own dtype (uint64 / int64 / float64).
inline void write_outputs(const std::filesystem::path& dir, const std::string& name, const SumImage& img,
                          const ProductLook& p) {
  img.visit([&](const auto& i) { write_outputs(dir, name, i, p); });
}

// The BF disk a computation used (detector::fit_json: centre, radius, where each came from, the fit's confidence):
// one line, and on stderr the fit's warning naming --center/--radius when it is uncertain.
inline void report_bf_disk(const nlohmann::json& d) {
  const std::string cs = d.at("center_source").get<std::string>(), rs = d.at("radius_source").get<std::string>();
  char how[128];
  if (cs == "given" && rs == "given")
    std::snprintf(how, sizeof how, "given");
  else
    std::snprintf(how, sizeof how, "%s centre, %s radius; fit confidence %.2f", cs.c_str(), rs.c_str(),
                  d.value("confidence", 0.0));
  std::printf("  BF disk        centre (%.2f, %.2f), radius %.2f px (%s)\n", d.at("center")[0].get<double>(),
              d.at("center")[1].get<double>(), d.at("radius").get<double>(), how);
  if (d.contains("warning")) std::fprintf(stderr, "qgpu: warning: %s\n", d.at("warning").get<std::string>().c_str());
}

}  // namespace qgpu::cli
