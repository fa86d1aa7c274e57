#include "io/merlin/mib_header.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <string_view>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::io::merlin {

namespace {

constexpr std::uint32_t kMaxChips = 64;
constexpr std::uint64_t kMaxSide = 1u << 20;  // pixels along one frame axis

const char* const kFieldNames[] = {"magic",     "sequence number", "header size", "chips",         "width",
                                   "height",    "pixel type",      "layout",      "chip select",   "timestamp",
                                   "shutter time", "counter",      "colour mode", "gain mode"};

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char ch : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(ch);
    if (u >= 0x20 && u < 0x7f) {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    }
  }
  if (s.size() > 64) out += "...";
  return out + "'";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Errors about field `index` of a frame header.
struct FieldError {
  const Where& where;
  [[noreturn]] void fail(std::size_t index, std::string_view token, const std::string& why) const {
    const std::string name = index < std::size(kFieldNames) ? std::string(" (") + kFieldNames[index] + ")" : "";
    throw FormatError("Merlin frame header of " + where.text() + ": field " + std::to_string(index) + name + " " +
                      quoted(token) + " " + why);
  }
  std::uint64_t uint(std::size_t index, std::string_view token, std::uint64_t lo, std::uint64_t hi) const {
    const std::string_view t = trim(token);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 10);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size())
      fail(index, token, "is not a decimal number");
    if (v < lo || v > hi) fail(index, token, "is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return v;
  }
  std::int64_t sint(std::size_t index, std::string_view token) const {
    const std::string_view t = trim(token);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 10);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size()) fail(index, token, "is not an integer");
    return v;
  }
  double real(std::size_t index, std::string_view token) const {
    const std::string_view t = trim(token);
    double v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v))
      fail(index, token, "is not a finite number");
    return v;
  }
};

bool is_number(std::string_view t) {
  t = trim(t);
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && ec == std::errc() && end == t.data() + t.size();
}

bool parse_pixel_type(std::string_view t, PixelType* out) {
  static constexpr std::pair<const char*, PixelType> kTypes[] = {{"U01", PixelType::U01}, {"U08", PixelType::U08},
                                                                 {"U16", PixelType::U16}, {"U32", PixelType::U32},
                                                                 {"U64", PixelType::U64}, {"R64", PixelType::R64}};
  for (const auto& [name, type] : kTypes)
    if (t == name) {
      *out = type;
      return true;
    }
  return false;
}

// "1x1", "2x2", "2x2G", "Nx1", "Nx1G", "<digits>x1", "<digits>x1G" (leading spaces already trimmed).
bool parse_layout(std::string_view t, Layout* out, std::uint32_t* n) {
  *n = 1;
  if (t == "1x1") return *out = Layout::L1x1, true;
  if (t == "2x2") return *out = Layout::L2x2, *n = 4, true;
  if (t == "2x2G") return *out = Layout::L2x2G, *n = 4, true;
  const bool gap = !t.empty() && t.back() == 'G';
  if (gap) t.remove_suffix(1);
  if (t.size() < 3 || t.substr(t.size() - 2) != "x1") return false;
  const std::string_view lead = t.substr(0, t.size() - 2);
  *out = gap ? Layout::Nx1G : Layout::Nx1;
  if (lead == "N") return *n = 0, true;
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(lead.data(), lead.data() + lead.size(), v, 10);
  if (ec != std::errc() || end != lead.data() + lead.size() || v < 1 || v > kMaxChips) return false;
  *n = v;
  return true;
}

std::uint32_t raw_group(std::uint32_t depth) { return depth == 1 ? 64 : depth == 6 ? 8 : 4; }

std::string latin1_to_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x80) {
      out += ch;
    } else {
      out += static_cast<char>(0xc0 | (u >> 6));
      out += static_cast<char>(0x80 | (u & 0x3f));
    }
  }
  return out;
}

}  // namespace

const char* pixel_type_name(PixelType t) {
  switch (t) {
    case PixelType::U01: return "U01";
    case PixelType::U08: return "U08";
    case PixelType::U16: return "U16";
    case PixelType::U32: return "U32";
    case PixelType::U64: return "U64";
    case PixelType::R64: return "R64";
  }
  return "?";
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::L1x1: return "1x1";
    case Layout::L2x2: return "2x2";
    case Layout::L2x2G: return "2x2G";
    case Layout::Nx1: return "Nx1";
    case Layout::Nx1G: return "Nx1G";
  }
  return "?";
}

bool looks_like_mib(const std::uint8_t* head, std::size_t n) { return n >= 4 && std::memcmp(head, "MQ1,", 4) == 0; }
bool looks_like_hdr(const std::uint8_t* head, std::size_t n) { return n >= 4 && std::memcmp(head, "HDR,", 4) == 0; }

std::string Where::text() const {
  return "'" + file + "' frame " + std::to_string(frame) + " (byte " + std::to_string(offset) + ")";
}

FrameHeader parse_frame_header(const std::uint8_t* data, std::size_t n, const Where& where) {
  const FieldError err{where};
  if (!looks_like_mib(data, n))
    throw FormatError("Merlin frame header of " + where.text() + ": does not start with 'MQ1,' (starts " +
                      quoted(std::string_view(reinterpret_cast<const char*>(data), std::min<std::size_t>(n, 8))) +
                      "): not a .mib frame, or the frames before it have another size");
  // Fields 1 and 2 (sequence, header size) lie within the first 64 bytes.
  const std::string_view lead(reinterpret_cast<const char*>(data), std::min<std::size_t>(n, 64));
  const std::size_t c1 = lead.find(',', 4), c2 = c1 == std::string_view::npos ? c1 : lead.find(',', c1 + 1);
  if (c2 == std::string_view::npos)
    throw FormatError("Merlin frame header of " + where.text() + ": truncated or malformed before field 2 "
                      "(header size): " + quoted(lead));
  FrameHeader h;
  h.header_bytes = std::uint32_t(err.uint(2, lead.substr(c1 + 1, c2 - c1 - 1), 64, kMaxFrameHeaderBytes));
  if (h.header_bytes > n)
    throw FormatError("Merlin frame header of " + where.text() + ": truncated: field 2 (header size) says " +
                      std::to_string(h.header_bytes) + " bytes, only " + std::to_string(n) + " remain");
  // The text runs to the first NUL; the rest of the header is padding.
  const char* text_begin = reinterpret_cast<const char*>(data);
  const std::size_t text_len = std::find(text_begin, text_begin + h.header_bytes, '\0') - text_begin;
  std::string_view text(text_begin, text_len);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u >= 0x7f)
      throw FormatError("Merlin frame header of " + where.text() + ": byte " + std::to_string(i) + " is 0x" +
                        [u] { char b[4]; std::snprintf(b, sizeof(b), "%02x", u); return std::string(b); }() +
                        ", not header text (is field 2, the header size " + std::to_string(h.header_bytes) +
                        ", right?)");
  }
  if (text.empty() || text.back() != ',')
    throw FormatError("Merlin frame header of " + where.text() + ": the header text does not end with ',' within "
                      "the " + std::to_string(h.header_bytes) + " bytes field 2 (header size) gives: the header "
                      "size disagrees with the header (ends " + quoted(text.substr(text.size() > 24 ? text.size() - 24 : 0)) + ")");
  text.remove_suffix(1);
  std::vector<std::string_view> f;
  for (std::size_t pos = 0;;) {
    const std::size_t c = text.find(',', pos);
    f.push_back(text.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  if (f.size() < 14)
    throw FormatError("Merlin frame header of " + where.text() + ": " + std::to_string(f.size()) +
                      " fields, expected at least 14 (MQ1 ... gain mode)");
  if (f[0] != "MQ1") err.fail(0, f[0], "is not MQ1");
  h.sequence = err.uint(1, f[1], 1, std::uint64_t(1) << 62);
  h.chips = std::uint32_t(err.uint(3, f[3], 1, kMaxChips));
  h.width = std::uint32_t(err.uint(4, f[4], 1, kMaxSide));
  h.height = std::uint32_t(err.uint(5, f[5], 1, kMaxSide));
  if (!parse_pixel_type(trim(f[6]), &h.pixel_type))
    err.fail(6, f[6], "is not a known pixel type (U01, U08, U16, U32, U64, R64)");
  if (!parse_layout(trim(f[7]), &h.layout, &h.layout_n))
    err.fail(7, f[7], "is not a known sensor layout (1x1, 2x2, 2x2G, Nx1, Nx1G)");
  {
    const std::string_view t = trim(f[8]);
    std::uint32_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 16);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size()) err.fail(8, f[8], "is not a hex number");
    h.chip_select = v;
  }
  h.timestamp = std::string(trim(f[9]));
  h.shutter_s = err.real(10, f[10]);
  h.counter = err.sint(11, f[11]);
  h.colour_mode = err.sint(12, f[12]);
  h.gain_mode = err.sint(13, f[13]);
  // Thresholds (numbers), then per-chip DAC blocks (a marker like "3RX" and numbers), then "MQ1A".
  std::size_t i = 14;
  for (; i < f.size() && f[i] != "MQ1A" && is_number(f[i]); ++i) h.thresholds_kev.push_back(err.real(i, f[i]));
  for (; i < f.size() && f[i] != "MQ1A"; ++i) {
    if (trim(f[i]).empty()) err.fail(i, f[i], "is empty");
    if (!is_number(f[i])) {
      if (h.dac_blocks > 0 && trim(f[i]) != h.chip_type)
        err.fail(i, f[i], "starts a DAC block of another chip type than " + quoted(h.chip_type));
      h.chip_type = std::string(trim(f[i]));
      ++h.dac_blocks;
    }
  }
  if (i < f.size()) {  // MQ1A extension: timestamp, exposure "<N>ns", counter depth
    if (f.size() < i + 4)
      throw FormatError("Merlin frame header of " + where.text() + ": the MQ1A extension (field " +
                        std::to_string(i) + ") has " + std::to_string(f.size() - i - 1) +
                        " fields, expected 3 (timestamp, exposure, counter depth)");
    h.mq1a = true;
    h.timestamp_ns = std::string(trim(f[i + 1]));
    std::string_view exp = trim(f[i + 2]);
    if (exp.size() < 3 || exp.substr(exp.size() - 2) != "ns") err.fail(i + 2, f[i + 2], "(MQ1A exposure) does not end in 'ns'");
    exp.remove_suffix(2);
    h.exposure_ns = err.uint(i + 2, exp, 0, std::uint64_t(1) << 62);
    h.counter_depth = std::uint32_t(err.uint(i + 3, f[i + 3], 0, 64));
    if (h.counter_depth != 1 && h.counter_depth != 6 && h.counter_depth != 12 && h.counter_depth != 24)
      err.fail(i + 3, f[i + 3], "(MQ1A counter depth) is not 1, 6, 12 or 24");
  }
  return h;
}

PixelFormat pixel_format(const FrameHeader& h, std::uint32_t hdr_depth, const Where& where) {
  const std::string at = "Merlin frame header of " + where.text() + ": ";
  PixelFormat f;
  f.layout = h.layout;
  f.chips = h.chips;
  f.stored = h.pixel_type;
  f.raw = h.pixel_type == PixelType::R64;
  const std::uint32_t want_chips = (h.layout == Layout::L1x1) ? 1 : (h.layout == Layout::L2x2 || h.layout == Layout::L2x2G) ? 4 : h.layout_n;
  if (want_chips != 0 && want_chips != h.chips)
    throw FormatError(at + "field 7 (layout) '" + layout_name(h.layout) + "' means " + std::to_string(want_chips) +
                      " chips but field 3 (chips) says " + std::to_string(h.chips));
  if (h.counter_depth && hdr_depth && h.counter_depth != hdr_depth)
    throw FormatError(at + "counter depth " + std::to_string(h.counter_depth) + " (MQ1A) disagrees with the .hdr's " +
                      "Counter Depth " + std::to_string(hdr_depth));
  const std::uint32_t depth = h.counter_depth ? h.counter_depth : hdr_depth;
  const std::uint64_t w = h.width, ht = h.height;
  const std::uint64_t stored_px = checked_mul(w, ht, "Merlin frame width x height");
  auto depth_fails = [&](const char* type, const char* holds) {
    throw FormatError(at + "pixel type " + type + " holds " + holds + " counts but the counter depth (" +
                      (h.counter_depth ? "MQ1A" : ".hdr") + ") is " + std::to_string(depth));
  };
  if (!f.raw) {
    std::uint32_t bytes = 1;
    switch (h.pixel_type) {
      case PixelType::U01:
        if (depth != 0 && depth != 1) depth_fails("U01", "1-bit");
        f.counter_depth = 1, f.out_dtype = DType::u8, bytes = 1;
        break;
      case PixelType::U08:
        if (depth != 0 && depth != 1 && depth != 6) depth_fails("U08", "1- or 6-bit");
        f.counter_depth = depth, f.out_dtype = DType::u8, bytes = 1;
        break;
      case PixelType::U16:
        if (depth != 0 && depth != 12) depth_fails("U16", "12-bit");
        f.counter_depth = 12, f.out_dtype = DType::u16, bytes = 2;
        break;
      case PixelType::U32:
        if (depth != 0 && depth != 24) depth_fails("U32", "24-bit");
        f.counter_depth = 24, f.out_dtype = DType::u32, bytes = 4;
        break;
      case PixelType::U64:
        throw DTypeError(at + "pixel type U64 (64-bit counts) is not supported: counts up to 32 bits (U32, 24-bit "
                              "counter depth) are");
      case PixelType::R64: break;
    }
    if (stored_px > kMaxFramePixels)
      throw FormatError(at + "frame " + std::to_string(w) + "x" + std::to_string(ht) + " is larger than " +
                        std::to_string(kMaxFramePixels) + " pixels");
    f.rows = h.height;
    f.cols = h.width;
    f.payload_bytes = checked_mul(stored_px, bytes, "Merlin frame bytes");
    return f;
  }
  // Raw (R64) frames.
  if (depth == 0)
    throw FormatError(at + "raw (R64) frame without a counter depth: no MQ1A extension in the header and no "
                           "'Counter Depth' in a .hdr beside the .mib");
  f.counter_depth = depth;
  f.out_dtype = depth <= 6 ? DType::u8 : depth == 12 ? DType::u16 : DType::u32;
  const bool single = h.layout == Layout::L1x1 && h.chips == 1;
  const bool quad = (h.layout == Layout::L2x2 || h.layout == Layout::L2x2G) && h.chips == 4;
  if (!single && !quad)
    throw FormatError(at + "raw (R64) frames of layout " + layout_name(h.layout) + " with " +
                      std::to_string(h.chips) + " chips are not supported (raw: 1x1 single chip and 2x2 quad)");
  const std::uint32_t g = raw_group(depth);
  const std::string geom = std::to_string(w) + "x" + std::to_string(ht);
  if (single) {
    if (depth == 24) {
      if (w % 2) throw FormatError(at + "raw 24-bit frame " + geom + ": the width counts both 12-bit parts and must be even");
      f.rows = h.height;
      f.cols = h.width / 2;
    } else {
      f.rows = h.height;
      f.cols = h.width;
    }
    const std::uint64_t px = std::uint64_t(f.rows) * f.cols;
    if (px % g)
      throw FormatError(at + "raw " + std::to_string(depth) + "-bit frame " + geom + ": " + std::to_string(px) +
                        " pixels are not whole groups of " + std::to_string(g));
    if (px > kMaxFramePixels) throw FormatError(at + "frame " + geom + " is larger than " + std::to_string(kMaxFramePixels) + " pixels");
    f.payload_bytes = depth == 1 ? px / 8 : depth == 6 ? px : depth == 12 ? 2 * px : 4 * px;
    return f;
  }
  // Quad raw: rows of [chip 4 | chip 3 | chip 2 | chip 1], each chip `s` pixels square; 24-bit: two such images.
  std::uint64_t s = 0;
  if (depth != 24 && w == 4 * ht) s = ht;
  if (depth == 24 && w == 8 * ht) s = ht;
  if (depth == 24 && w % 4 == 0 && ht == 2 * (w / 4)) s = w / 4;
  if (s == 0)
    throw FormatError(at + "raw quad frame " + geom + " at counter depth " + std::to_string(depth) +
                      ": expected width = 4 x height (one row of 4 chips" +
                      (depth == 24 ? ", twice for the two 12-bit parts" : "") + ")");
  if (s % g)
    throw FormatError(at + "raw quad frame " + geom + ": chip side " + std::to_string(s) +
                      " is not a multiple of the raw group of " + std::to_string(g) + " pixels");
  f.chip = std::uint32_t(s);
  f.rows = f.cols = std::uint32_t(2 * s + (h.layout == Layout::L2x2G ? 2 : 0));
  const std::uint64_t px = 4 * s * s;
  if (std::uint64_t(f.rows) * f.cols > kMaxFramePixels) throw FormatError(at + "frame " + geom + " is too large");
  f.payload_bytes = depth == 1 ? px / 8 : depth == 6 ? px : depth == 12 ? 2 * px : 4 * px;
  return f;
}

const std::string* AcquisitionHeader::find(const std::string& key) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : entries)
    if (k == key) found = &v;  // the last one wins
  return found;
}

AcquisitionHeader parse_acquisition_header(const std::uint8_t* data, std::size_t n, const std::string& file) {
  const std::string at = "Merlin acquisition header '" + file + "'";
  if (!looks_like_hdr(data, n)) throw FormatError(at + ": does not start with 'HDR,'");
  if (n > kMaxHdrBytes)
    throw FormatError(at + ": " + std::to_string(n) + " bytes, more than a .hdr holds (" +
                      std::to_string(kMaxHdrBytes) + ")");
  const std::string_view all(reinterpret_cast<const char*>(data), n);
  AcquisitionHeader h;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < all.size();) {
    const std::size_t nl = all.find('\n', pos);
    std::string_view line = all.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? all.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1) continue;  // "HDR,\t"
    if (line == "End" || line.substr(0, 4) == "End\t" || line.substr(0, 4) == "End ") break;
    if (trim(line).empty() || trim(line).find_first_not_of('\0') == std::string_view::npos) continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      throw FormatError(at + ": line " + std::to_string(line_no) + " " + quoted(line) +
                        " is not 'Key:<tab>value'");
    std::string_view key = trim(line.substr(0, tab));
    if (!key.empty() && key.back() == ':') key.remove_suffix(1);
    if (key.find('\0') != std::string_view::npos || line.find('\0') != std::string_view::npos)
      throw FormatError(at + ": line " + std::to_string(line_no) + " holds a NUL byte");
    h.entries.emplace_back(latin1_to_utf8(trim(key)), latin1_to_utf8(trim(line.substr(tab + 1))));
  }
  auto number = [&](const char* key) -> std::optional<std::uint64_t> {
    const std::string* v = h.find(key);
    if (!v) return std::nullopt;
    const std::string_view t = trim(*v);
    std::uint64_t x = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x, 10);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || x > (std::uint64_t(1) << 62))
      throw FormatError(at + ": '" + key + "' is " + quoted(*v) + ", not a whole number");
    return x;
  };
  h.frames_in_acquisition = number("Frames in Acquisition (Number)");
  if (h.frames_in_acquisition == 0u) h.frames_in_acquisition.reset();
  h.frames_per_trigger = number("Frames per Trigger (Number)");
  if (h.frames_per_trigger == 0u) h.frames_per_trigger.reset();
  h.scan_x = number("ScanX");
  h.scan_y = number("ScanY");
  if (h.scan_x.has_value() != h.scan_y.has_value())
    throw FormatError(at + ": gives " + (h.scan_x ? "ScanX" : "ScanY") + " without " + (h.scan_x ? "ScanY" : "ScanX"));
  if ((h.scan_x && *h.scan_x == 0) || (h.scan_y && *h.scan_y == 0))
    throw FormatError(at + ": ScanX/ScanY must be at least 1 (ScanX " + std::to_string(*h.scan_x) + ", ScanY " +
                      std::to_string(*h.scan_y) + ")");
  if (const auto d = number("Counter Depth (number)")) {
    if (*d != 1 && *d != 6 && *d != 12 && *d != 24)
      throw FormatError(at + ": Counter Depth " + std::to_string(*d) + " is not 1, 6, 12 or 24");
    h.counter_depth = std::uint32_t(*d);
  }
  if (const auto* v = h.find("Assembly Size (NX1, 2X2)")) h.assembly_size = *v;
  if (const auto* v = h.find("Gap Fill Mode")) h.gap_fill_mode = *v;
  if (const auto* v = h.find("Software Version")) h.software_version = *v;
  return h;
}

}  // namespace qgpu::io::merlin
