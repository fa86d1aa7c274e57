#include "io/empad/empad_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/scan_shape.hpp"

namespace qgpu::io::empad {

namespace {

constexpr std::uint64_t kMaxXmlBytes = std::uint64_t(16) << 20;  // real EMPAD xmls are a few kB
constexpr int kMaxDepth = 256;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool is_name_char(char c) {
  return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string trimmed(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return s.substr(a, b - a);
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

struct XmlParser {
  const std::string& s;
  const std::string& where;
  std::size_t i = 0;

  [[noreturn]] void fail(const std::string& what, std::size_t at) const {
    throw FormatError(where + ": malformed XML (" + what + " at byte " + std::to_string(at) + ")");
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, i); }
  bool starts(const char* p) const { return s.compare(i, std::strlen(p), p) == 0; }
  void space() {
    while (i < s.size() && is_space(s[i])) ++i;
  }
  void skip_past(const char* end, const char* what) {
    const std::size_t at = i, k = s.find(end, i);
    if (k == std::string::npos) fail("unterminated " + std::string(what), at);
    i = k + std::strlen(end);
  }
  // Whitespace, comments and processing instructions (the <?xml ...?> declaration).
  void misc() {
    while (true) {
      space();
      if (starts("<!--")) skip_past("-->", "comment");
      else if (starts("<?")) skip_past("?>", "processing instruction");
      else return;
    }
  }
  std::string name() {
    if (i >= s.size() || !is_name_start(s[i])) fail("expected a name");
    const std::size_t a = i;
    while (i < s.size() && is_name_char(s[i])) ++i;
    return s.substr(a, i - a);
  }
  std::string decode(std::size_t a, std::size_t b) const {
    std::string out;
    for (std::size_t k = a; k < b; ++k) {
      if (s[k] != '&') {
        out += s[k];
        continue;
      }
      // Entities are short: look for the ';' among the next bytes only (linear time whatever the input).
      const std::size_t rel = std::string_view(s).substr(k, std::min<std::size_t>(b - k, 12)).find(';');
      if (rel == std::string_view::npos) fail("'&' not followed by an entity", k);
      const std::size_t semi = k + rel;
      const std::string e = s.substr(k + 1, semi - k - 1);
      if (e == "amp") out += '&';
      else if (e == "lt") out += '<';
      else if (e == "gt") out += '>';
      else if (e == "quot") out += '"';
      else if (e == "apos") out += '\'';
      else if (e.size() > 1 && e[0] == '#') {
        const bool hex = e[1] == 'x' || e[1] == 'X';
        const std::string digits = e.substr(hex ? 2 : 1);
        char* end = nullptr;
        const unsigned long cp = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
        if (digits.empty() || *end || cp == 0 || cp > 0x10FFFF) fail("bad character reference '&" + json_safe(e) + ";'", k);
        append_utf8(out, cp);
      } else {
        fail("unknown entity '&" + json_safe(e) + ";'", k);
      }
      k = semi;
    }
    return out;
  }
  XmlElement element(int depth) {
    if (depth > kMaxDepth) fail("elements nested deeper than " + std::to_string(kMaxDepth));
    const std::size_t open = i;
    ++i;  // '<'
    XmlElement e;
    e.name = name();
    while (true) {
      const bool spaced = i < s.size() && is_space(s[i]);
      space();
      if (i >= s.size()) fail("unterminated start tag <" + e.name + ">", open);
      if (starts("/>")) {
        i += 2;
        return e;
      }
      if (s[i] == '>') {
        ++i;
        break;
      }
      if (!spaced) fail("expected a space, '>' or '/>' in <" + e.name + ">");
      const std::string attr = name();
      space();
      if (i >= s.size() || s[i] != '=') fail("attribute '" + attr + "' of <" + e.name + "> has no '='");
      ++i;
      space();
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) fail("attribute '" + attr + "' of <" + e.name + "> is not quoted");
      const char q = s[i++];
      const std::size_t a = i, b = s.find(q, i);
      if (b == std::string::npos) fail("unterminated attribute '" + attr + "' of <" + e.name + ">", a);
      if (std::find(s.begin() + std::ptrdiff_t(a), s.begin() + std::ptrdiff_t(b), '<') != s.begin() + std::ptrdiff_t(b))
        fail("'<' in attribute '" + attr + "' of <" + e.name + ">", a);
      if (e.attributes.count(attr)) fail("attribute '" + attr + "' repeated in <" + e.name + ">", a);
      e.attributes[attr] = decode(a, b);
      i = b + 1;
    }
    while (true) {
      if (i >= s.size()) fail("<" + e.name + "> is not closed", open);
      if (starts("</")) {
        i += 2;
        const std::size_t at = i;
        const std::string closing = name();
        if (closing != e.name) fail("</" + closing + "> closes <" + e.name + ">", at);
        space();
        if (i >= s.size() || s[i] != '>') fail("expected '>' after </" + closing);
        ++i;
        return e;
      }
      if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<![CDATA[")) {
        const std::size_t a = i + 9;
        skip_past("]]>", "CDATA section");
        e.text += s.substr(a, i - 3 - a);
      } else if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts("<!")) {
        fail("unexpected markup '<!' in <" + e.name + ">");
      } else if (s[i] == '<') {
        e.children.push_back(element(depth + 1));
      } else {
        const std::size_t a = i, b = std::min(s.find('<', i), s.size());
        e.text += decode(a, b);
        i = b;
      }
    }
  }
};

// Positive integer of an element's text: FormatError naming the field otherwise.
std::size_t positive_integer(const XmlElement& e, const std::string& field, const std::string& where) {
  const std::string t = trimmed(e.text);
  bool ok = !t.empty() && t.size() <= 12;
  for (char c : t) ok = ok && std::isdigit(static_cast<unsigned char>(c));
  const std::size_t v = ok ? std::size_t(std::stoull(t)) : 0;
  if (!ok || v == 0)
    throw FormatError(where + ": EMPAD xml field " + field + " is '" + json_safe(t) + "', not a positive integer");
  return v;
}

std::optional<double> number(const XmlElement* e) {
  if (!e) return std::nullopt;
  const std::string t = trimmed(e->text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (*end || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// The xml's scan_resolution_y x scan_resolution_x of one <scan_parameters>, when it holds them.
void scan_of(const XmlElement& sp, const std::string& path, const std::string& where, EmpadXml& out) {
  const XmlElement* x = sp.child("scan_resolution_x");
  const XmlElement* y = sp.child("scan_resolution_y");
  if (!x && !y) return;
  if (!x || !y)
    throw FormatError(where + ": EMPAD xml " + path + " has " + (x ? "scan_resolution_x" : "scan_resolution_y") +
                      " but not " + (x ? "scan_resolution_y" : "scan_resolution_x"));
  const std::size_t cols = positive_integer(*x, path + "/scan_resolution_x", where);
  const std::size_t rows = positive_integer(*y, path + "/scan_resolution_y", where);
  out.scans.push_back({rows, cols, "EMPAD xml " + path + "/scan_resolution_y x scan_resolution_x"});
}

std::string read_small_file(const std::string& path, std::uint64_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw IoError("cannot stat '" + path + "': " + std::strerror(errno));
  }
  if (std::uint64_t(st.st_size) > limit) {
    ::close(fd);
    throw FormatError("'" + path + "' has " + std::to_string(st.st_size) + " bytes, more than an EMPAD xml (" +
                      std::to_string(limit) + " at most)");
  }
  std::string text(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t k = ::pread(fd, text.data() + got, text.size() - got, off_t(got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      ::close(fd);
      throw IoError("cannot read '" + path + "'" + (k < 0 ? std::string(": ") + std::strerror(errno) : ""));
    }
    got += std::size_t(k);
  }
  ::close(fd);
  return text;
}

}  // namespace

const XmlElement* XmlElement::child(const std::string& n) const {
  for (const XmlElement& c : children)
    if (c.name == n) return &c;
  return nullptr;
}

XmlElement parse_xml(const std::string& text, const std::string& where) {
  XmlParser p{text, where};
  if (p.starts("\xEF\xBB\xBF")) p.i = 3;
  p.misc();
  if (p.starts("<!DOCTYPE") || p.starts("<!doctype"))
    p.fail("a DOCTYPE (entity definitions) is not read in an EMPAD xml");
  if (p.i >= text.size() || text[p.i] != '<') p.fail("no root element");
  XmlElement root = p.element(0);
  p.misc();
  if (p.i < text.size()) p.fail("content after the root element </" + root.name + ">");
  return root;
}

EmpadXml parse_empad_xml(const std::string& text, const std::string& where) {
  const XmlElement root = parse_xml(text, where);
  if (root.name != "root")
    throw FormatError(where + ": the root element is <" + json_safe(root.name) + ">, not EMPAD's <root>");
  EmpadXml out;
  const XmlElement* raw = root.child("raw_file");
  if (!raw) throw FormatError(where + ": EMPAD xml lacks root/raw_file (the element naming the .raw file)");
  const auto fn = raw->attributes.find("filename");
  if (fn == raw->attributes.end() || trimmed(fn->second).empty())
    throw FormatError(where + ": EMPAD xml lacks root/raw_file@filename (the name of the .raw file)");
  out.raw_file = trimmed(fn->second);
  out.metadata["raw_file"] = json_safe(out.raw_file);

  // scan_parameters: acquire, then search, then any other (rosettasciio reads the first one), then pix_y x pix_x.
  std::vector<const XmlElement*> params;
  for (const XmlElement& c : root.children)
    if (c.name == "scan_parameters") params.push_back(&c);
  auto mode_of = [](const XmlElement* e) {
    const auto m = e->attributes.find("mode");
    return m == e->attributes.end() ? std::string() : m->second;
  };
  for (const char* mode : {"acquire", "search"})
    for (const XmlElement* sp : params)
      if (mode_of(sp) == mode) {
        scan_of(*sp, std::string("scan_parameters[@mode=\"") + mode + "\"]", where, out);
        break;
      }
  for (const XmlElement* sp : params) {
    const std::string m = mode_of(sp);
    if (m != "acquire" && m != "search")
      scan_of(*sp, m.empty() ? "scan_parameters" : "scan_parameters[@mode=\"" + json_safe(m) + "\"]", where, out);
    if (const XmlElement* sc = sp->child("series_count"); sc && !out.series_count)
      out.series_count = positive_integer(*sc, "scan_parameters/series_count", where);
  }
  const XmlElement* px = root.child("pix_x");
  const XmlElement* py = root.child("pix_y");
  if (px && py)
    out.scans.push_back({positive_integer(*py, "root/pix_y", where), positive_integer(*px, "root/pix_x", where),
                         "EMPAD xml root/pix_y x pix_x"});
  else if (px || py)
    throw FormatError(where + ": EMPAD xml has root/" + (px ? "pix_x" : "pix_y") + " but not root/" +
                      (px ? "pix_y" : "pix_x"));
  if (const XmlElement* sc = root.child("series_count"); sc && !out.series_count)
    out.series_count = positive_integer(*sc, "root/series_count", where);

  // Metadata as written (strings), and the calibration the xml states.
  if (const XmlElement* v = root.child("software_version")) out.metadata["software_version"] = json_safe(trimmed(v->text));
  if (const XmlElement* t = root.child("timestamp")) {
    const auto iso = t->attributes.find("isoformat");
    if (iso != t->attributes.end()) out.metadata["timestamp"] = json_safe(iso->second);
  }
  if (const XmlElement* e = root.child("exposure_time")) out.metadata["exposure_time"] = json_safe(trimmed(e->text));
  for (const XmlElement* sp : params) {
    const std::string m = mode_of(sp);
    nlohmann::json j = nlohmann::json::object();
    for (const XmlElement& c : sp->children)
      if (c.children.empty()) j[c.name] = json_safe(trimmed(c.text));
    out.metadata["scan_parameters"][m.empty() ? "default" : json_safe(m)] = j;
  }
  if (const XmlElement* iom = root.child("iom_measurements")) {
    nlohmann::json j = nlohmann::json::object();
    for (const XmlElement& c : iom->children)
      if (c.children.empty()) j[c.name] = json_safe(trimmed(c.text));
    if (const XmlElement* fov = iom->child("full_scan_field_of_view"))
      for (const XmlElement& c : fov->children) j["full_scan_field_of_view"][c.name] = json_safe(trimmed(c.text));
    out.metadata["iom_measurements"] = j;
    const std::string at = "EMPAD xml root/iom_measurements/";
    if (const XmlElement* hv = iom->child("high_voltage")) {
      const auto v = number(hv);
      if (v && *v > 0)
        out.calibration.offer("energy_kev", *v / 1e3, "keV", at + "high_voltage (" + number_text(*v) + " V)");
      else
        out.calibration.warn(at + "high_voltage '" + trimmed(hv->text) + "' is not a positive number: not used");
    }
    if (const XmlElement* cl = iom->child("nominal_camera_length")) {
      const auto v = number(cl);
      if (v && *v > 0)
        out.calibration.offer("camera_length_m", *v, "m", at + "nominal_camera_length (" + number_text(*v) + " m)");
      else
        out.calibration.warn(at + "nominal_camera_length '" + trimmed(cl->text) +
                             "' is not a positive number: not used");
    }
  }
  return out;
}

namespace {
// 1 to 9 decimal digits at text[i..], advancing i; nullopt otherwise.
std::optional<std::size_t> digits_at(std::string_view text, std::size_t& i) {
  std::size_t v = 0, n = 0;
  for (; i < text.size() && n < 10 && text[i] >= '0' && text[i] <= '9'; ++i, ++n) v = v * 10 + std::size_t(text[i] - '0');
  if (n == 0 || n > 9) return std::nullopt;
  return v;
}
}  // namespace

std::optional<std::pair<std::size_t, std::size_t>> scan_shape_from_raw_name(const std::string& path) {
  // The whole file name is scan_x<X>_y<Y>.raw (X, Y: 1 to 9 digits).
  const std::string file = std::filesystem::path(path).filename().string();
  const std::string_view f(file);
  std::size_t i = 0;
  if (!f.starts_with("scan_x")) return std::nullopt;
  i = 6;
  const auto x = digits_at(f, i);
  if (!x || f.substr(i, 2) != "_y") return std::nullopt;
  i += 2;
  const auto y = digits_at(f, i);
  if (!y || f.substr(i) != ".raw" || !*x || !*y) return std::nullopt;
  return std::make_pair(*y, *x);
}

bool is_empad_head(const std::uint8_t* head, std::size_t n) {
  std::string s(reinterpret_cast<const char*>(head), n);
  std::size_t i = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  // Skip whitespace, the declaration and comments; the first element must be <root ...> (or the head ends first).
  while (true) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (s.compare(i, 4, "<!--") == 0 || s.compare(i, 2, "<?") == 0) {
      const std::size_t k = s.find(s[i + 1] == '?' ? "?>" : "-->", i);
      if (k == std::string::npos) return false;
      i = k + (s[i + 1] == '?' ? 2 : 3);
      continue;
    }
    break;
  }
  if (s.compare(i, 5, "<root") != 0 || i + 5 >= s.size()) return false;
  const char after = s[i + 5];
  if (!is_space(after) && after != '>' && after != '/') return false;
  // And one of EMPAD's own elements among the first bytes: an xml of another program named <root> is not claimed.
  for (const char* mark : {"<raw_file", "<software_version", "<timestamp", "<scan_parameters", "<pix_x",
                           "<iom_measurements", "<camserver_parameters", "<exposure_time", "<background_image"})
    if (s.find(mark, i) != std::string::npos) return true;
  return false;
}

FileInfo inspect_empad(const std::string& path, const SourceOptions& o) {
  // The xml (recognised by content) or, named with format "empad", the .raw itself.
  std::uint8_t head[512] = {0};
  const std::size_t n = read_head(path, head, sizeof head);
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  const bool is_xml = is_empad_head(head, n) || ext == ".xml";
  FileInfo fi;
  fi.path = path;
  std::string raw_path = path, xml_where;
  std::optional<EmpadXml> xml;
  if (is_xml) {
    xml_where = "'" + path + "' (EMPAD xml)";
    xml = parse_empad_xml(read_small_file(path, kMaxXmlBytes), xml_where);
    // As written (relative to the xml's folder), else its file name in the xml's folder: acquisitions are copied
    // off the instrument's disk, whose absolute (or Windows) path the xml may hold (LiberTEM and rosettasciio take
    // the file name too).
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    const std::string& named = xml->raw_file;
    const std::size_t slash = named.find_last_of("/\\");
    const std::string base = slash == std::string::npos ? named : named.substr(slash + 1);
    std::vector<std::string> tried = {(folder / std::filesystem::path(named)).string()};
    if (base != named && !base.empty()) tried.push_back((folder / base).string());
    std::error_code ec;
    raw_path.clear();
    for (const std::string& t : tried)
      if (std::filesystem::exists(t, ec)) {
        raw_path = t;
        break;
      }
    if (raw_path.empty())
      throw IoError(xml_where + " names the raw file '" + json_safe(named) + "' (root/raw_file@filename): '" +
                    tried.front() + "'" + (tried.size() > 1 ? " nor '" + tried.back() + "'" : std::string()) +
                    " does not exist");
    if (!std::filesystem::is_regular_file(raw_path, ec))
      throw IoError(xml_where + " names the raw file '" + json_safe(named) + "': '" + raw_path +
                    "' is not a regular file");
  }
  const std::string where = "'" + raw_path + "' (EMPAD raw)";
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(raw_path, ec);
  if (ec) throw IoError("cannot stat '" + raw_path + "': " + ec.message());
  if (size == 0 || size % kRecordBytes)
    throw FormatError(where + " has " + std::to_string(size) + " bytes, not a whole number of EMPAD frames of " +
                      std::to_string(kRecordBytes) + " bytes (130 x 128 float32, 2 footer rows): " +
                      std::to_string(size / kRecordBytes) + " frames and " + std::to_string(size % kRecordBytes) +
                      " bytes over");
  const std::uint64_t frames = size / kRecordBytes;

  ScanShapeHints hints;
  hints.given_rows = o.scan_rows;
  hints.given_cols = o.scan_cols;
  std::uint64_t used = frames;
  const auto from_name = scan_shape_from_raw_name(raw_path);
  if (o.scan_rows && o.scan_cols) {
    used = checked_mul<RegionError>(o.scan_rows, o.scan_cols, "given scan shape");
    if (used > frames)
      throw FormatError("given scan shape " + std::to_string(o.scan_rows) + "x" + std::to_string(o.scan_cols) +
                        " needs " + std::to_string(used) + " frames; " + where + " holds " + std::to_string(frames));
    if (used < frames)
      fi.warnings.push_back(where + " holds " + std::to_string(frames) + " frames; the given scan shape takes the "
                            "first " + std::to_string(used));
  } else {
    // Candidates in order of trust: the xml's (acquire, search, pix), the raw name's. The first that multiplies to
    // the frame count is taken (LiberTEM PR 1636: some files hold the "search" scan); none that does is an error.
    std::vector<EmpadXml::Scan> candidates;
    if (xml) candidates = xml->scans;
    if (from_name)
      candidates.push_back({from_name->first, from_name->second, "EMPAD raw name scan_x<X>_y<Y> (" +
                                                                    std::filesystem::path(raw_path).filename().string() + ")"});
    const EmpadXml::Scan* chosen = nullptr;
    for (const EmpadXml::Scan& c : candidates)
      if (std::uint64_t(c.rows) * c.cols == frames) {
        chosen = &c;
        break;
      }
    if (chosen) {
      if (chosen != &candidates.front())
        fi.warnings.push_back(candidates.front().source + " = " + std::to_string(candidates.front().rows) + " x " +
                              std::to_string(candidates.front().cols) + " does not match the " +
                              std::to_string(frames) + " frames of " + where + "; " + chosen->source + " does");
      hints.sidecar = {(long long)chosen->rows, (long long)chosen->cols};
      hints.sidecar_source = chosen->source;
    } else if (!candidates.empty()) {
      std::string said;
      for (const EmpadXml::Scan& c : candidates)
        said += (said.empty() ? "" : ", ") + c.source + " = " + std::to_string(c.rows) + " x " +
                std::to_string(c.cols) + " = " + std::to_string(std::uint64_t(c.rows) * c.cols) + " frames";
      throw FormatError(where + " holds " + std::to_string(frames) + " frames (" + std::to_string(size) +
                        " bytes); " + said + ": give the scan shape");
    } else if (xml && xml->series_count && *xml->series_count != frames) {
      throw FormatError(xml_where + " says scan_parameters/series_count = " + std::to_string(*xml->series_count) +
                        "; " + where + " holds " + std::to_string(frames) + " frames");
    }
  }
  resolve_scan_shape_or_describe(fi, used, kRows, kCols, hints, o, where);
  fi.shape.nbytes(4);
  fi.source_kind = xml ? "EMPAD xml + raw" : "EMPAD raw";
  fi.dims = {std::size_t(used), kRows, kCols};
  fi.dtype = DType::f32;
  fi.codec.kind = FrameCodecKind::plain;
  fi.byte_order = "little";
  fi.precision = 32;
  fi.records.files = {raw_path};
  fi.records.runs = {{0, 0, used, 0, kRecordBytes, kFrameBytes}};
  fi.one_frame_per_chunk = true;
  fi.chunks_expected = fi.chunks_written = std::size_t(used);
  fi.ready = true;
  fi.metadata = xml ? xml->metadata : nlohmann::json::object();
  fi.metadata["raw_path"] = json_safe(raw_path);
  fi.metadata["frames_in_file"] = frames;
  fi.metadata["record_bytes"] = kRecordBytes;
  fi.metadata["footer_rows"] = kRawRows - kRows;
  if (xml && xml->series_count) fi.metadata["series_count"] = *xml->series_count;
  if (xml) {
    fi.calibration = xml->calibration.flat();
    fi.calibration_detail = xml->calibration.detail();
    fi.metadata_warnings = xml->calibration.warnings;
  }
  return fi;
}

}  // namespace qgpu::io::empad
