#pragma once
// Writes one result image as NAME.npy (raw values), NAME.png (display: colours, --png-scale, --annotate) and NAME.json
// (provenance of the result and of its picture, and the product's calibration: pixel size in angstrom or mrad).
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/atomic_output.hpp"
#include "core/image.hpp"
#include "display/display.hpp"
#include "display/figure.hpp"
#include "io/npy/npy.hpp"
#include "io/tiff/write_tiff.hpp"

namespace qgpu::cli {

// NAME.json in `dir`, pretty-printed (through a temporary file, core/atomic_output.hpp).
inline void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  write_file_atomically(path.string(), j.dump(2) + "\n", "JSON output");
}

// --png-scale and --annotate of the image-writing commands (display/figure.hpp).
struct PngFlags {
  std::size_t png_scale = 1;
  bool annotate = false;
  std::string save;  // --save: extra formats, comma-separated (tiff, emd)
};

// The formats of --save: "tiff", "emd" or both ("tiff,emd"); InvalidArgument naming anything else.
struct SaveFormats {
  bool tiff = false, emd = false;
};
inline SaveFormats parse_save(const std::string& list) {
  SaveFormats f;
  std::size_t p = 0;
  while (p <= list.size() && !list.empty()) {
    std::size_t c = list.find(',', p);
    if (c == std::string::npos) c = list.size();
    const std::string item = list.substr(p, c - p);
    if (item == "tiff" || item == "tif") f.tiff = true;
    else if (item == "emd") f.emd = true;
    else if (!item.empty()) throw InvalidArgument("--save takes tiff and/or emd (comma-separated), not '" + item + "'");
    p = c + 1;
  }
  return f;
}

inline void add_png_flags(CLI::App* cmd, PngFlags& p) {
  cmd->add_option("--png-scale", p.png_scale, "enlarge the PNGs N times (nearest neighbour, 1..64)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--annotate", p.annotate,
                "colourbar on the PNGs, and a scale bar where the pixel size is known (file calibration)");
  cmd->add_option("--save", p.save,
                  "also write tiff (NAME.tif: 32-bit float values, pixel size for ImageJ/Fiji) and/or emd "
                  "(OUT/products.emd: every product of the run as an EMD 1.0 array with its calibration), "
                  "comma-separated: --save tiff,emd")
      ->check([](const std::string& v) {
        try {
          parse_save(v);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      });
}

// What one product's files look like and where its pixels lie.
struct ProductLook {
  display::DisplayOptions look;
  display::FigureOptions figure;  // pixel_size set from `calibration` when known
  bool symmetric = false;         // a signed map: display range symmetric about 0
  nlohmann::json calibration;     // written to NAME.json
  SaveFormats save;               // --save tiff / emd
};

// The pixel size of a product as exported (TIFF, EMD): scan products in nm (ImageJ's unit), detector ones in mrad;
// {0, ""} when unknown.
inline std::pair<double, std::string> export_pixel(const nlohmann::json& cal) {
  if (!cal.is_object() || !cal.value("pixel_size", nlohmann::json()).is_number()) return {0.0, ""};
  const double v = cal["pixel_size"].get<double>();
  return cal.value("space", "") == "scan" ? std::pair<double, std::string>{v / 10, "nm"}
                                          : std::pair<double, std::string>{v, "mrad"};
}

// The products of this run for --save emd, per output folder: the file is rewritten with each new product (a few
// small images), so it is complete whichever product comes last.
inline std::vector<io::ProductImage>& emd_products(const std::filesystem::path& dir) {
  static std::map<std::string, std::vector<io::ProductImage>> by_dir;
  return by_dir[dir.string()];
}

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
  p.save = parse_save(png.save);
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
  std::string written = "npy,png,json";
  if (p.save.tiff || p.save.emd) {
    const Image<float> values = as_float(img);  // the values, not the display view
    const auto [size, unit] = export_pixel(p.calibration);
    if (p.save.tiff) {
      io::write_tiff_f32((dir / (name + ".tif")).string(), values.rows, values.cols, values.data.data(), size, unit);
      written += ",tif";
    }
    if (p.save.emd) {
      auto& all = emd_products(dir);
      io::ProductImage pi{name, values.rows, values.cols, values.data, size, unit, img.provenance.to_json()};
      const auto same = std::find_if(all.begin(), all.end(), [&](const io::ProductImage& x) { return x.name == name; });
      if (same != all.end()) *same = std::move(pi);
      else all.push_back(std::move(pi));
      nlohmann::json cal = nlohmann::json::object();
      for (const char* k : {"scan_step_angstrom", "detector_mrad_per_pixel"})
        if (p.calibration.is_object() && p.calibration.value(k, nlohmann::json()).is_number()) cal[k] = p.calibration[k];
      io::write_products_emd((dir / "products.emd").string(), all, cal);
    }
  }
  std::printf("  %-14s %zux%zu -> %s.{%s}%s\n", name.c_str(), img.rows, img.cols, (dir / name).c_str(),
              written.c_str(), p.save.emd ? " + products.emd" : "");
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
