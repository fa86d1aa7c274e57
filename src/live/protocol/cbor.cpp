#include "live/protocol/cbor.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace qgpu::live::cbor {

namespace {

constexpr int kMaxDepth = 32;
constexpr std::size_t kMaxItems = std::size_t(1) << 20;  // items in one message: far above any DECTRIS message

struct Parser {
  const std::uint8_t* p;
  std::size_t n, pos = 0, items = 0;

  [[noreturn]] void fail(const std::string& why, std::size_t at) const {
    throw FormatError("CBOR: " + why + " at byte " + std::to_string(at) + " of " + std::to_string(n));
  }
  std::uint8_t byte() {
    if (pos >= n) fail("message ends inside an item", pos);
    return p[pos++];
  }
  std::uint64_t argument(std::uint8_t info, std::size_t at) {
    if (info < 24) return info;
    int len = info == 24 ? 1 : info == 25 ? 2 : info == 26 ? 4 : info == 27 ? 8 : 0;
    if (len == 0) fail("reserved additional information " + std::to_string(info), at);
    std::uint64_t v = 0;
    for (int i = 0; i < len; ++i) v = (v << 8) | byte();
    return v;
  }
  double half(std::uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? std::nan("") : INFINITY) : std::ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
  }
  Item item(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth), pos);
    if (++items > kMaxItems) fail("more than " + std::to_string(kMaxItems) + " items", pos);
    Item it;
    it.offset = pos;
    const std::uint8_t ib = byte();
    const unsigned major = ib >> 5;
    const std::uint8_t info = ib & 0x1f;
    if (info == 31) {  // indefinite length
      if (major == 4 || major == 5) {
        it.type = major == 4 ? Type::array : Type::map;
        for (;;) {
          if (pos >= n) fail("indefinite container without its break", it.offset);
          if (p[pos] == 0xff) { ++pos; break; }
          it.items.push_back(item(depth + 1));
          if (major == 5) it.items.push_back(item(depth + 1));
        }
        return it;
      }
      fail(major == 2 || major == 3 ? "indefinite-length string (not supported)" : "unexpected break", it.offset);
    }
    if (major == 7) {
      switch (info) {
        case 20: case 21: it.type = Type::boolean; it.value = info - 20; return it;
        case 22: it.type = Type::null; return it;
        case 23: it.type = Type::undefined; return it;
        case 25: { it.type = Type::floating; it.real = half(std::uint16_t(argument(info, it.offset))); return it; }
        case 26: {
          const std::uint32_t bits = std::uint32_t(argument(info, it.offset));
          float f;
          std::memcpy(&f, &bits, 4);
          it.type = Type::floating; it.real = f; return it;
        }
        case 27: {
          const std::uint64_t bits = argument(info, it.offset);
          std::memcpy(&it.real, &bits, 8);
          it.type = Type::floating; return it;
        }
        default: fail("simple value " + std::to_string(info) + " (not supported)", it.offset);
      }
    }
    const std::uint64_t arg = argument(info, it.offset);
    switch (major) {
      case 0: it.type = Type::uint; it.value = arg; return it;
      case 1: it.type = Type::negint; it.value = arg; return it;
      case 2: case 3: {
        if (arg > n - pos) fail("string of " + std::to_string(arg) + " bytes passes the end", it.offset);
        it.type = major == 2 ? Type::bytes : Type::text;
        it.data = p + pos;
        it.size = std::size_t(arg);
        pos += std::size_t(arg);
        return it;
      }
      case 4: case 5: {
        // every element takes at least one byte: a count beyond the bytes left is malformed (and no huge reserve)
        const std::uint64_t elems = major == 5 ? arg * 2 : arg;
        if (arg > n - pos || elems > n - pos)
          fail(std::string(major == 4 ? "array" : "map") + " of " + std::to_string(arg) + " entries passes the end",
               it.offset);
        it.type = major == 4 ? Type::array : Type::map;
        it.items.reserve(std::size_t(elems));
        for (std::uint64_t i = 0; i < elems; ++i) it.items.push_back(item(depth + 1));
        return it;
      }
      default: {  // 6: tag
        it.type = Type::tag;
        it.value = arg;
        it.items.push_back(item(depth + 1));
        return it;
      }
    }
  }
};

}  // namespace

const Item* Item::find(std::string_view key) const {
  if (type != Type::map) return nullptr;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i].type == Type::text && items[i].text() == key) return &items[i + 1];
  return nullptr;
}

const Item* Item::untag(std::uint64_t t) const {
  return type == Type::tag && value == t && !items.empty() ? &items[0] : nullptr;
}

std::int64_t Item::integer(std::string_view what) const {
  if (type == Type::uint && value <= std::uint64_t(std::numeric_limits<std::int64_t>::max())) return std::int64_t(value);
  if (type == Type::negint && value <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    return -1 - std::int64_t(value);
  throw FormatError(std::string(what) + " is not an integer in the int64 range");
}

std::uint64_t Item::unsigned_integer(std::string_view what) const {
  if (type == Type::uint) return value;
  throw FormatError(std::string(what) + " is not an unsigned integer");
}

double Item::number(std::string_view what) const {
  if (type == Type::floating) return real;
  if (type == Type::uint) return double(value);
  if (type == Type::negint) return -1.0 - double(value);
  throw FormatError(std::string(what) + " is not a number");
}

Item parse(const std::uint8_t* data, std::size_t size) {
  Parser ps{data, size};
  Item it = ps.item(0);
  if (ps.pos != size) ps.fail(std::to_string(size - ps.pos) + " bytes after the message's item", ps.pos);
  return it;
}

void Writer::head(unsigned major, std::uint64_t v) {
  const std::uint8_t m = std::uint8_t(major << 5);
  if (v < 24) {
    out_.push_back(std::uint8_t(m | v));
    return;
  }
  int len = v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffffull ? 4 : 8;
  out_.push_back(std::uint8_t(m | (len == 1 ? 24 : len == 2 ? 25 : len == 4 ? 26 : 27)));
  for (int i = len - 1; i >= 0; --i) out_.push_back(std::uint8_t(v >> (8 * i)));
}

Writer& Writer::bytes(const void* p, std::size_t n) {
  head(2, n);
  const auto* b = static_cast<const std::uint8_t*>(p);
  out_.insert(out_.end(), b, b + n);
  return *this;
}

Writer& Writer::text(std::string_view s) {
  head(3, s.size());
  out_.insert(out_.end(), s.begin(), s.end());
  return *this;
}

Writer& Writer::float64(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  out_.push_back(0xfb);
  for (int i = 7; i >= 0; --i) out_.push_back(std::uint8_t(bits >> (8 * i)));
  return *this;
}

}  // namespace qgpu::live::cbor
