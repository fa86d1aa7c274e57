#pragma once
// Writes one result image as NAME.npy (raw values), NAME.png (display) and NAME.json (provenance).
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/atomic_output.hpp"
#include "core/image.hpp"
#include "display/display.hpp"
#include "io/npy/npy.hpp"

namespace qgpu::cli {

// NAME.json in `dir`, pretty-printed (through a temporary file, core/atomic_output.hpp).
inline void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  write_file_atomically(path.string(), j.dump(2) + "\n", "JSON output");
}

// `view` optionally turns the image into what is shown (e.g. display::pattern_log); the .npy keeps the values.
template <class T>
void write_outputs(const std::filesystem::path& dir, const std::string& name, const Image<T>& img,
                   const display::DisplayOptions& look, Image<float> (*view)(const Image<float>&) = nullptr) {
  io::write_npy((dir / (name + ".npy")).string(), {img.rows, img.cols}, img.data);
  Image<float> f = as_float(img);
  if (view) f = view(f);
  const display::Rgba rgba = display::render(f, look);
  display::write_png((dir / (name + ".png")).string(), rgba);
  write_json(dir / (name + ".json"),
             nlohmann::json{{"result", img.provenance.to_json()}, {"display", rgba.provenance.to_json()}});
  std::printf("  %-14s %zux%zu -> %s.{npy,png,json}\n", name.c_str(), img.rows, img.cols, (dir / name).c_str());
}

// Sums in their own dtype (uint64 / int64 / float64).
inline void write_outputs(const std::filesystem::path& dir, const std::string& name, const SumImage& img,
                          const display::DisplayOptions& look) {
  img.visit([&](const auto& i) { write_outputs(dir, name, i, look); });
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
