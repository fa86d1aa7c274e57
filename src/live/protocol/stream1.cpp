#include "live/protocol/stream1.hpp"

#include <cstring>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "live/protocol/frame_bytes.hpp"

namespace qgpu::live::stream1 {

namespace {

[[noreturn]] void bad(const std::string& why) { throw FormatError("DECTRIS stream V1 message: " + why); }

nlohmann::json json_part(const Part& p, const std::string& what) {
  if (p.size > (std::size_t(16) << 20)) bad(what + " is a JSON part of " + std::to_string(p.size) + " bytes");
  nlohmann::json j = nlohmann::json::parse(p.data, p.data + p.size, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad(what + " is not a JSON object");
  return j;
}

// The text at key, or `def` when absent or not text (a number where a name belongs is as good as absent).
std::string text_or(const nlohmann::json& j, const char* key, const std::string& def) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}

template <class T> T get(const nlohmann::json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) bad(what + " has no '" + key + "'");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    bad(what + " field '" + key + "' has the wrong type");
  }
}

std::uint64_t uint_field(const nlohmann::json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) bad(what + " has no '" + key + "'");
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<long long>() >= 0))
    bad(what + " field '" + key + "' is not a non-negative integer");
  return it->get<std::uint64_t>();
}

// A [x, y]-style array of non-negative integers (a float there is refused: converting it would be undefined).
std::vector<std::uint64_t> uint_array(const nlohmann::json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) bad(what + " has no '" + key + "'");
  if (!it->is_array()) bad(what + " field '" + key + "' is not an array");
  std::vector<std::uint64_t> out;
  for (const auto& v : *it) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0))
      bad(what + " field '" + key + "' holds a value that is not a non-negative integer");
    out.push_back(v.get<std::uint64_t>());
  }
  return out;
}

DType dtype_from(const std::string& s, const std::string& what) {
  if (s == "uint8") return DType::u8;
  if (s == "uint16") return DType::u16;
  if (s == "uint32") return DType::u32;
  bad(what + " type '" + s + "' (uint8, uint16 or uint32 expected)");
}

void header_fields(const std::vector<Part>& parts, Message& m) {
  if (parts.size() < 2) bad("series header without its detector config part");
  const nlohmann::json cfg = json_part(parts[1], "detector config");
  SeriesInfo& s = m.start;
  s.protocol = "dectris-v1";
  s.series_id = std::to_string(m.series);
  s.det_cols = std::size_t(uint_field(cfg, "x_pixels_in_detector", "detector config"));
  s.det_rows = std::size_t(uint_field(cfg, "y_pixels_in_detector", "detector config"));
  if (s.det_rows == 0 || s.det_cols == 0 || s.det_rows > 65536 || s.det_cols > 65536)
    bad("detector size " + std::to_string(s.det_cols) + " x " + std::to_string(s.det_rows) + " (1..65536 each)");
  const std::uint64_t bits = uint_field(cfg, "bit_depth_image", "detector config");
  if (bits != 8 && bits != 16 && bits != 32) bad("bit_depth_image " + std::to_string(bits) + " (8, 16 or 32)");
  s.dtype = bits == 8 ? DType::u8 : bits == 16 ? DType::u16 : DType::u32;
  const std::uint64_t ntrigger = cfg.contains("ntrigger") ? uint_field(cfg, "ntrigger", "detector config") : 0;
  const std::uint64_t nimages = cfg.contains("nimages") ? uint_field(cfg, "nimages", "detector config") : 0;
  const std::string mode = text_or(cfg, "trigger_mode", "exts");
  s.frames = (mode == "exte" || mode == "inte") ? ntrigger : checked_mul(ntrigger, nimages, "ntrigger x nimages");
  for (const auto& [k, v] : cfg.items())
    if (!v.is_object() && !v.is_array()) s.metadata[k] = v;
  for (const char* key : {"incident_energy", "photon_energy"}) {
    auto it = cfg.find(key);
    if (it != cfg.end() && it->is_number() && it->get<double>() > 0 && !s.calibration.contains("energy_kev")) {
      const double ev = it->get<double>();
      s.calibration["energy_kev"] = ev / 1e3;
      s.calibration_detail["energy_kev"] = {{"value", ev / 1e3}, {"unit", "keV"},
                                            {"source", std::string("stream V1 detector config ") + key}};
    }
  }
  // header_detail "all": (json, blob) pairs; the pixel mask is read, the others kept as names.
  for (std::size_t i = 2; i + 1 < parts.size(); i += 2) {
    const nlohmann::json h = json_part(parts[i], "header part " + std::to_string(i));
    if (text_or(h, "htype", "") != "dpixelmask-1.0") continue;
    const auto shape = uint_array(h, "shape", "dpixelmask");
    if (shape.size() != 2 || shape[0] != s.det_cols || shape[1] != s.det_rows)
      bad("dpixelmask shape differs from the detector's [x, y]");
    if (text_or(h, "type", "") != "uint32") bad("dpixelmask type is not uint32");
    const Part& blob = parts[i + 1];
    if (blob.size != s.det_rows * s.det_cols * 4)
      bad("dpixelmask blob of " + std::to_string(blob.size) + " bytes; the detector has " +
          std::to_string(s.det_rows * s.det_cols) + " uint32 pixels");
    for (std::size_t k = 0; k < s.det_rows * s.det_cols; ++k) {
      std::uint32_t v;
      std::memcpy(&v, blob.data + 4 * k, 4);
      if (v) s.bad_pixels.push_back(std::uint32_t(k));
    }
    s.pixel_mask_source = "stream V1 dpixelmask-1.0";
  }
}

}  // namespace

Message decode(const std::vector<Part>& parts) {
  if (parts.empty()) bad("no parts");
  const nlohmann::json h = json_part(parts[0], "part 1");
  const std::string htype = text_or(h, "htype", "");
  Message m;
  if (htype == "dheader-1.0") {
    m.kind = Kind::header;
    m.series = uint_field(h, "series", "dheader");
    header_fields(parts, m);
  } else if (htype == "dseries_end-1.0") {
    m.kind = Kind::end;
    m.series = uint_field(h, "series", "dseries_end");
  } else if (htype == "dimage-1.0") {
    m.kind = Kind::image;
    m.series = uint_field(h, "series", "dimage");
    m.frame = uint_field(h, "frame", "dimage");
    if (parts.size() < 3) bad("image " + std::to_string(m.frame) + " has " + std::to_string(parts.size()) + " parts");
    const nlohmann::json d = json_part(parts[1], "dimage_d");
    const auto shape = uint_array(d, "shape", "dimage_d");
    if (shape.size() != 2) bad("dimage_d shape is not [x, y]");
    m.cols = std::size_t(shape[0]);
    m.rows = std::size_t(shape[1]);
    m.dtype = dtype_from(get<std::string>(d, "type", "dimage_d"), "dimage_d");
    m.encoding = get<std::string>(d, "encoding", "dimage_d");
    m.blob = parts[2];
    const std::uint64_t expect = checked_product({m.rows, m.cols, dtype_size(m.dtype)}, "image size");
    const bool compressed = m.encoding != "<";
    if (m.encoding != "<" && m.encoding != "lz4<" && m.encoding.rfind("bs", 0) != 0)
      bad("image encoding '" + m.encoding + "' (bs8/16/32-lz4<, lz4< or < expected)");
    if (m.encoding.rfind("bs", 0) == 0 &&
        m.encoding != "bs" + std::to_string(8 * dtype_size(m.dtype)) + "-lz4<")
      bad("image encoding '" + m.encoding + "' does not match type " + dtype_name(m.dtype));
    if (compressed && m.blob.size < 12) bad("compressed image blob shorter than its 12-byte header");
    const std::uint64_t got = compressed ? frame_bytes::decoded_size(m.blob.data) : m.blob.size;
    if (got != expect)
      bad("image " + std::to_string(m.frame) + " holds " + std::to_string(got) + " bytes; [" +
          std::to_string(m.cols) + ", " + std::to_string(m.rows) + "] " + dtype_name(m.dtype) + " is " +
          std::to_string(expect));
  } else {
    bad("htype '" + htype + "' (dheader-1.0, dimage-1.0 or dseries_end-1.0 expected)");
  }
  return m;
}

namespace {
std::vector<std::uint8_t> bytes_of(const nlohmann::json& j) {
  const std::string s = j.dump();
  return {s.begin(), s.end()};
}
}  // namespace

std::vector<std::vector<std::uint8_t>> encode_header(std::uint64_t series, const SeriesInfo& info,
                                                     double incident_energy_ev) {
  nlohmann::json cfg = {{"x_pixels_in_detector", info.det_cols}, {"y_pixels_in_detector", info.det_rows},
                        {"bit_depth_image", 8 * dtype_size(info.dtype)}, {"compression", "bslz4"},
                        {"ntrigger", info.frames}, {"nimages", 1}, {"trigger_mode", "exte"},
                        {"incident_energy", incident_energy_ev}, {"description", "quantem-gpu simulated detector"}};
  return {bytes_of({{"htype", "dheader-1.0"}, {"series", series}, {"header_detail", "basic"}}), bytes_of(cfg)};
}

std::vector<std::vector<std::uint8_t>> encode_image(std::uint64_t series, std::uint64_t frame, std::size_t rows,
                                                    std::size_t cols, DType dtype, const std::string& encoding,
                                                    const std::uint8_t* blob, std::size_t size) {
  return {bytes_of({{"htype", "dimage-1.0"}, {"series", series}, {"frame", frame}, {"hash", ""}}),
          bytes_of({{"htype", "dimage_d-1.0"}, {"shape", {cols, rows}}, {"type", dtype_name(dtype)},
                    {"encoding", encoding}, {"size", size}}),
          std::vector<std::uint8_t>(blob, blob + size),
          bytes_of({{"htype", "dconfig-1.0"}, {"start_time", 0}, {"stop_time", 0}, {"real_time", 0}})};
}

std::vector<std::vector<std::uint8_t>> encode_end(std::uint64_t series) {
  return {bytes_of({{"htype", "dseries_end-1.0"}, {"series", series}})};
}

}  // namespace qgpu::live::stream1
