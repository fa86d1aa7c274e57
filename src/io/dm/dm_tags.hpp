#pragma once
// The tag tree of a Gatan DigitalMicrograph DM3 / DM4 file, parsed and checked without reading array data.
//
// Layout (big-endian header and structure; tag values in the byte order the header states):
//   header: u32 version (3 or 4), file length (u32 DM3, u64 DM4), u32 byte order (1 = values little-endian)
//   group:  u8 sorted, u8 open, u32/u64 number of tags, then the tags
//   tag:    u8 kind (20 group, 21 data), u16 name length, name; DM4: u64 tag size; then a group, or
//           "%%%%", u32/u64 info length n, n u32/u64 info words, the value's bytes.
//   info:   [type] a simple value; [18, length] a string; [15, 0, fields, (0, type) x fields] a struct;
//           [20, type, count] an array of simple values; [20, 15, 0, fields, (0, type) x fields, count] an array
//           of structs. Simple types: 2 i16, 3 i32, 4 u16, 5 u32, 6 f32, 7 f64, 8 bool, 9 i8, 10 u8, 11 i64, 12 u64.
// Tags are named by their path from the root, "/"-separated; unnamed tags (list entries) by their 0-based index in
// their group: "ImageList/1/ImageData/Dimensions/0".
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qgpu::io::dm {

enum class TagKind { group, number, string, array, other };

struct Tag {
  TagKind kind = TagKind::other;
  double number = 0;             // number: the value (bools 0 / 1)
  std::string text;              // strings and uint16 arrays of <= 256 (DM's UTF-16 text: ASCII kept, others as '?')
  std::uint32_t elem_type = 0;   // array: the element type (15 = struct)
  std::uint64_t count = 0;       // array: elements
  std::uint64_t elem_bytes = 0;  // array: bytes of one element
  std::uint64_t offset = 0;      // array: where its bytes start in the file
  std::uint64_t children = 0;    // group: number of tags
};

struct TagTree {
  unsigned version = 0;       // 3 or 4
  bool little_endian = true;  // the values' byte order
  std::uint64_t file_bytes = 0;
  std::uint64_t length_field = 0;  // the header's file length field
  std::map<std::string, Tag> tags;

  const Tag* find(const std::string& path) const;
  std::optional<double> number(const std::string& path) const;
  std::string text(const std::string& path) const;  // "" when absent or not text
};

// Bytes of a simple type (2..12), 0 for anything else.
std::uint64_t simple_type_bytes(std::uint64_t type);

// True for the first bytes of a DM3 / DM4 file (version 3 or 4, byte order 0 or 1, root group flags 0 or 1).
bool is_dm_head(const std::uint8_t* head, std::size_t n);

// Parses the whole tag tree of `path` (array data skipped). FormatError naming `where`, the byte offset and the field
// for everything malformed: a version other than 3 / 4, a byte order other than 0 / 1, a tag kind other than 20 / 21,
// a missing "%%%%", an info array that is empty, too long or of an unknown type, sizes that overflow or reach past the
// end of the file, nesting deeper than 64 groups, more than 1 << 20 tags or a
// tag path beyond 4096 characters. IoError when it cannot be read.
TagTree parse_tags(const std::string& path, const std::string& where);
// The same over bytes in memory (tests, the fuzz harness).
TagTree parse_tags(const std::uint8_t* data, std::size_t size, const std::string& where);

}  // namespace qgpu::io::dm
