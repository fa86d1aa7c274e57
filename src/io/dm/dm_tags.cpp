#include "io/dm/dm_tags.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::io::dm {

namespace {

constexpr unsigned kMaxDepth = 64;
constexpr std::uint64_t kMaxTags = std::uint64_t(1) << 20;
constexpr std::size_t kMaxPath = 4096;    // a tag's path from the root (each tag holds its own copy)
constexpr std::uint64_t kMaxInfo = 1024;  // info words of one tag (a struct of ~500 fields)

// Reads the file through a window of its bytes; every read checked against the file's end.
class Cursor {
 public:
  Cursor(std::function<void(std::uint64_t, std::size_t, std::uint8_t*)> read, std::uint64_t size, std::string where)
      : read_(std::move(read)), size_(size), where_(std::move(where)) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t size() const { return size_; }
  std::uint64_t left() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what, std::uint64_t at) const {
    throw FormatError(where_ + ": " + what + " (at byte " + std::to_string(at) + ")");
  }
  void need(std::uint64_t n, const std::string& what) const {
    if (n > left())
      fail(what + " needs " + std::to_string(n) + " bytes but the file ends " + std::to_string(left()) +
               " bytes further",
           pos_);
  }
  const std::uint8_t* take(std::size_t n, const std::string& what) {
    need(n, what);
    if (pos_ < win_start_ || pos_ + n > win_start_ + win_.size()) {
      const std::size_t w = std::size_t(std::min<std::uint64_t>(std::max<std::size_t>(n, kWindow), left()));
      win_.resize(w);
      read_(pos_, w, win_.data());
      win_start_ = pos_;
    }
    const std::uint8_t* p = win_.data() + (pos_ - win_start_);
    pos_ += n;
    return p;
  }
  void skip(std::uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }
  std::uint64_t be(std::size_t bytes, const std::string& what) {
    const std::uint8_t* p = take(bytes, what);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | p[i];
    return v;
  }

 private:
  static constexpr std::size_t kWindow = std::size_t(1) << 20;
  std::function<void(std::uint64_t, std::size_t, std::uint8_t*)> read_;
  std::uint64_t size_;
  std::string where_;
  std::uint64_t pos_ = 0, win_start_ = 0;
  std::vector<std::uint8_t> win_;
};

std::string type_name(std::uint64_t t) {
  switch (t) {
    case 2: return "int16";
    case 3: return "int32";
    case 4: return "uint16";
    case 5: return "uint32";
    case 6: return "float32";
    case 7: return "float64";
    case 8: return "bool";
    case 9: return "int8";
    case 10: return "uint8";
    case 11: return "int64";
    case 12: return "uint64";
    default: return "type " + std::to_string(t);
  }
}

double decode_simple(const std::uint8_t* p, std::uint64_t type, bool little) {
  std::uint8_t b[8];
  const std::size_t n = std::size_t(simple_type_bytes(type));
  for (std::size_t i = 0; i < n; ++i) b[i] = little ? p[i] : p[n - 1 - i];
  switch (type) {
    case 2: {
      std::int16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case 3: {
      std::int32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case 4: {
      std::uint16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case 5: {
      std::uint32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case 6: {
      float v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case 7: {
      double v;
      std::memcpy(&v, b, 8);
      return v;
    }
    case 8:
    case 10: return b[0];
    case 9: return std::int8_t(b[0]);
    case 11: {
      std::int64_t v;
      std::memcpy(&v, b, 8);
      return double(v);
    }
    case 12: {
      std::uint64_t v;
      std::memcpy(&v, b, 8);
      return double(v);
    }
    default: return 0;
  }
}

class Parser {
 public:
  Parser(Cursor& c, TagTree& t) : c_(c), t_(t) {}

  void group(const std::string& prefix, unsigned depth) {
    if (depth > kMaxDepth) c_.fail("tag groups nested deeper than " + std::to_string(kMaxDepth), c_.pos());
    const std::uint64_t at = c_.pos();
    c_.take(2, "tag group header (sorted, open)");
    const std::uint64_t n = c_.be(word(), "tag group's number of tags");
    // Each tag takes at least 3 bytes (kind, name length): a count beyond the file is malformed, not a large group.
    if (n > c_.left() / 3)
      c_.fail("tag group '" + shown(prefix) + "' states " + std::to_string(n) + " tags, more than the " +
                  std::to_string(c_.left()) + " bytes left can hold",
              at);
    if (!prefix.empty()) t_.tags[prefix.substr(0, prefix.size() - 1)].children = n;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (++count_ > kMaxTags) c_.fail("more than " + std::to_string(kMaxTags) + " tags", c_.pos());
      const std::uint64_t tag_at = c_.pos();
      const unsigned kind = unsigned(c_.be(1, "tag kind"));
      const std::size_t name_len = std::size_t(c_.be(2, "tag name length"));
      const std::uint8_t* nm = c_.take(name_len, "tag name");
      std::string name(reinterpret_cast<const char*>(nm), name_len);
      for (char& ch : name)
        if (ch == '/' || static_cast<unsigned char>(ch) < 0x20) ch = '_';
      const std::string path = prefix + (name.empty() ? std::to_string(i) : name);
      if (path.size() > kMaxPath)
        c_.fail("tag path longer than " + std::to_string(kMaxPath) + " characters: '" + path.substr(0, 80) + "...'",
                tag_at);
      if (t_.version == 4) {
        // The bytes of the tag's content (readers skip it; only checked against the file's end, since what GMS
        // counts in it is not verified on real files here).
        const std::uint64_t size = c_.be(8, "DM4 tag size");
        if (size > c_.left())
          c_.fail("tag '" + path + "' states a size of " + std::to_string(size) + " bytes, past the end of the file",
                  tag_at);
      }
      if (kind == 20) {
        t_.tags[path].kind = TagKind::group;
        group(path + "/", depth + 1);
      } else if (kind == 21) {
        data(path);
      } else {
        c_.fail("tag '" + path + "' is of kind " + std::to_string(kind) + ", neither a group (20) nor data (21)",
                tag_at);
      }
    }
  }

 private:
  std::size_t word() const { return t_.version == 4 ? 8 : 4; }
  static std::string shown(const std::string& prefix) {
    return prefix.empty() ? "(root)" : prefix.substr(0, prefix.size() - 1);
  }

  void data(const std::string& path) {
    const std::uint64_t at = c_.pos();
    const std::uint8_t* d = c_.take(4, "tag '" + path + "' delimiter");
    if (std::memcmp(d, "%%%%", 4) != 0) c_.fail("data tag '" + path + "' lacks its '%%%%' delimiter", at);
    const std::uint64_t n = c_.be(word(), "tag '" + path + "' info length");
    if (n == 0 || n > kMaxInfo)
      c_.fail("data tag '" + path + "' has an info array of " + std::to_string(n) + " words (1.." +
                  std::to_string(kMaxInfo) + ")",
              at);
    std::vector<std::uint64_t> info(n);
    for (auto& w : info) w = c_.be(word(), "tag '" + path + "' info array");
    Tag& tag = t_.tags[path];
    const std::string what = "data tag '" + path + "'";
    auto bad_info = [&](const std::string& why) { c_.fail(what + ": " + why, at); };
    auto struct_bytes = [&](std::size_t first, std::uint64_t fields) {
      // (0, type) pairs from info[first]
      if (fields > kMaxInfo || first + 2 * fields > info.size())
        bad_info("struct of " + std::to_string(fields) + " fields overruns its info array");
      std::uint64_t bytes = 0;
      for (std::uint64_t f = 0; f < fields; ++f) {
        const std::uint64_t sz = simple_type_bytes(info[first + 2 * f + 1]);
        if (!sz) bad_info("struct field " + std::to_string(f) + " is of unknown " + type_name(info[first + 2 * f + 1]));
        bytes += sz;
      }
      return bytes;
    };
    const std::uint64_t type = info[0];
    if (const std::uint64_t sz = simple_type_bytes(type); sz) {
      if (n != 1) bad_info("a simple " + type_name(type) + " value with " + std::to_string(n) + " info words");
      tag.kind = TagKind::number;
      tag.number = decode_simple(c_.take(std::size_t(sz), what), type, t_.little_endian);
    } else if (type == 18) {
      if (n != 2) bad_info("a string with " + std::to_string(n) + " info words (2)");
      tag.kind = TagKind::string;
      if (info[1] <= 256) {
        const std::uint8_t* p = c_.take(std::size_t(info[1]), what);
        tag.text.assign(reinterpret_cast<const char*>(p), std::size_t(info[1]));
      } else {
        c_.skip(info[1], what);
      }
    } else if (type == 15) {
      if (n < 3) bad_info("a struct with " + std::to_string(n) + " info words");
      const std::uint64_t fields = info[2];
      if (n != 3 + 2 * fields)
        bad_info("a struct of " + std::to_string(fields) + " fields in " + std::to_string(n) + " info words");
      tag.kind = TagKind::other;
      c_.skip(struct_bytes(3, fields), what);
    } else if (type == 20) {
      if (n < 3) bad_info("an array with " + std::to_string(n) + " info words");
      const std::uint64_t elem = info[1];
      std::uint64_t elem_bytes = 0;
      if (elem == 15) {
        if (n < 5) bad_info("an array of structs with " + std::to_string(n) + " info words");
        const std::uint64_t fields = info[3];
        if (n != 5 + 2 * fields)
          bad_info("an array of structs of " + std::to_string(fields) + " fields in " + std::to_string(n) +
                   " info words");
        elem_bytes = struct_bytes(4, fields);
      } else if (elem == 18) {
        if (n != 4) bad_info("an array of strings with " + std::to_string(n) + " info words (4)");
        elem_bytes = info[2];
      } else {
        elem_bytes = simple_type_bytes(elem);
        if (!elem_bytes) bad_info("an array of unknown " + type_name(elem));
        if (n != 3) bad_info("an array of " + type_name(elem) + " with " + std::to_string(n) + " info words (3)");
      }
      const std::uint64_t count = info[n - 1];
      const std::uint64_t bytes = checked_mul(elem_bytes, count, what + " size");
      tag.kind = TagKind::array;
      tag.elem_type = unsigned(elem);
      tag.count = count;
      tag.elem_bytes = elem_bytes;
      tag.offset = c_.pos();
      if (elem == 4 && count <= 256) {  // DM text (UTF-16 code units): names, units, formats
        const std::uint8_t* p = c_.take(std::size_t(bytes), what);
        for (std::uint64_t k = 0; k < count; ++k) {
          const unsigned u = t_.little_endian ? p[2 * k] | (p[2 * k + 1] << 8) : (p[2 * k] << 8) | p[2 * k + 1];
          tag.text += u >= 0x20 && u < 0x7f ? char(u) : u == 0xb5 || u == 0x3bc ? 'u' : u == 0xc5 ? 'A' : '?';
        }
      } else {
        c_.skip(bytes, what);
      }
    } else {
      bad_info("unknown type " + std::to_string(type) + " (simple 2..12, struct 15, string 18, array 20)");
    }
  }

  Cursor& c_;
  TagTree& t_;
  std::uint64_t count_ = 0;
};

TagTree parse(Cursor& c) {
  TagTree t;
  t.file_bytes = c.size();
  const std::uint64_t version = c.be(4, "DM header version");
  if (version != 3 && version != 4)
    c.fail("DM version " + std::to_string(version) + " (the header's first word) is not 3 or 4", 0);
  t.version = unsigned(version);
  t.length_field = c.be(version == 4 ? 8 : 4, "DM header file length");
  const std::uint64_t order = c.be(4, "DM header byte order");
  if (order > 1)
    c.fail("DM byte order flag " + std::to_string(order) + " is not 0 (big-endian) or 1 (little-endian)",
           version == 4 ? 12 : 8);
  t.little_endian = order == 1;
  if (t.length_field > c.size())
    c.fail("the header states " + std::to_string(t.length_field) + " bytes but the file has " +
               std::to_string(c.size()) + ": truncated",
           4);
  Parser(c, t).group("", 0);
  return t;
}

}  // namespace

std::uint64_t simple_type_bytes(std::uint64_t t) {
  switch (t) {
    case 2:
    case 4: return 2;
    case 3:
    case 5:
    case 6: return 4;
    case 7:
    case 11:
    case 12: return 8;
    case 8:
    case 9:
    case 10: return 1;
    default: return 0;
  }
}

bool is_dm_head(const std::uint8_t* h, std::size_t n) {
  if (n < 24 || h[0] || h[1] || h[2] || (h[3] != 3 && h[3] != 4)) return false;
  const std::size_t order_at = h[3] == 4 ? 12 : 8;
  if (h[order_at] || h[order_at + 1] || h[order_at + 2] || h[order_at + 3] > 1) return false;
  return h[order_at + 4] <= 1 && h[order_at + 5] <= 1;
}

const Tag* TagTree::find(const std::string& path) const {
  const auto it = tags.find(path);
  return it == tags.end() ? nullptr : &it->second;
}

std::optional<double> TagTree::number(const std::string& path) const {
  const Tag* t = find(path);
  if (!t || t->kind != TagKind::number) return std::nullopt;
  return t->number;
}

std::string TagTree::text(const std::string& path) const {
  const Tag* t = find(path);
  return t ? t->text : std::string();
}

TagTree parse_tags(const std::string& path, const std::string& where) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open " + where + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IoError("cannot stat " + where + ": " + std::strerror(errno));
  Cursor c(
      [&](std::uint64_t off, std::size_t n, std::uint8_t* dst) {
        std::size_t got = 0;
        while (got < n) {
          const ssize_t r = ::pread(fd, dst + got, n - got, off_t(off + got));
          if (r < 0 && errno == EINTR) continue;
          if (r < 0) throw IoError("cannot read " + where + ": " + std::strerror(errno));
          if (r == 0) throw IoError("cannot read " + where + ": it shrank while being read");
          got += std::size_t(r);
        }
      },
      std::uint64_t(st.st_size), where);
  return parse(c);
}

TagTree parse_tags(const std::uint8_t* data, std::size_t size, const std::string& where) {
  Cursor c([data](std::uint64_t off, std::size_t n, std::uint8_t* dst) { std::memcpy(dst, data + off, n); }, size,
           where);
  return parse(c);
}

}  // namespace qgpu::io::dm
