#pragma once
// The subset of CBOR (RFC 8949) that DECTRIS stream V2 uses, read without copying: a message becomes a tree of Items
// whose strings point into the message. Definite and indefinite arrays and maps, tags, integers, floats, simple
// values; definite byte and text strings (indefinite strings are refused: DECTRIS does not send them). Every length
// is checked against the bytes left, nesting is limited, and anything malformed raises FormatError naming the byte.
// A writer for the same subset serves the simulator and the tests.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qgpu::live::cbor {

enum class Type : std::uint8_t { uint, negint, bytes, text, array, map, tag, boolean, null, undefined, floating };

struct Item {
  Type type = Type::null;
  std::uint64_t value = 0;          // uint; negint: -1 - value; tag: the tag number; boolean: 0/1
  double real = 0;                  // floating
  const std::uint8_t* data = nullptr;  // bytes / text
  std::size_t size = 0;
  std::vector<Item> items;          // array: elements; map: key, value, key, value ...; tag: the tagged item
  std::size_t offset = 0;           // byte offset of the item in the message (for messages)

  bool is_text() const { return type == Type::text; }
  std::string_view text() const { return {reinterpret_cast<const char*>(data), size}; }
  // Map lookup by text key (nullptr when absent or not a map).
  const Item* find(std::string_view key) const;
  // The tagged item when this is tag `tag`, else nullptr.
  const Item* untag(std::uint64_t tag) const;
  // Integer value (uint or negint), FormatError naming `what` otherwise or when it does not fit int64.
  std::int64_t integer(std::string_view what) const;
  std::uint64_t unsigned_integer(std::string_view what) const;
  // Numeric value (integer or float), FormatError otherwise.
  double number(std::string_view what) const;
};

// Parses one whole message (exactly one item, no bytes after it). FormatError on anything malformed.
Item parse(const std::uint8_t* data, std::size_t size);

// The self-describe tag (55799) that opens every stream V2 message: d9 d9 f7.
inline constexpr std::uint64_t kSelfDescribe = 55799;

// Appends CBOR items to a byte vector.
class Writer {
 public:
  std::vector<std::uint8_t>& out() { return out_; }
  Writer& uint(std::uint64_t v) { head(0, v); return *this; }
  Writer& integer(std::int64_t v) {
    if (v >= 0) head(0, std::uint64_t(v)); else head(1, std::uint64_t(-(v + 1)));
    return *this;
  }
  Writer& bytes(const void* p, std::size_t n);
  Writer& text(std::string_view s);
  Writer& array(std::uint64_t n) { head(4, n); return *this; }
  Writer& map(std::uint64_t n) { head(5, n); return *this; }
  Writer& tag(std::uint64_t t) { head(6, t); return *this; }
  Writer& boolean(bool b) { out_.push_back(b ? 0xf5 : 0xf4); return *this; }
  Writer& null() { out_.push_back(0xf6); return *this; }
  Writer& float64(double v);

 private:
  void head(unsigned major, std::uint64_t v);
  std::vector<std::uint8_t> out_;
};

}  // namespace qgpu::live::cbor
