#include "io/hdf5/index/object_header.hpp"

#include <algorithm>
#include <set>

namespace qgpu::io::h5index {

namespace {

constexpr int kMaxBlocks = 4096;  // header blocks followed before the header is declared cyclic/corrupt

struct Block {
  std::uint64_t addr;  // relative address of the block
  std::uint64_t len;
};

struct Walker {
  const ByteSource& src;
  const FileSizes& sizes;
  const std::vector<std::uint16_t>& wanted;
  std::vector<HeaderMessage> out;
  std::vector<Block> pending;
  std::set<std::uint64_t> seen;

  std::uint64_t abs(std::uint64_t rel) const { return checked_add(sizes.base, rel, "object header address"); }

  void keep(std::uint16_t type, std::uint8_t flags, const std::uint8_t* p, std::size_t n) {
    if (type == kContinuation) {
      Cursor c(p, n, "continuation message");
      const std::uint64_t a = c.addr(sizes);
      const std::uint64_t l = c.len(sizes);
      if (a == sizes.undefined() || l == 0) corrupt("object header continuation points nowhere");
      pending.push_back({a, l});
      return;
    }
    if (std::find(wanted.begin(), wanted.end(), type) != wanted.end())
      out.push_back({type, flags, std::vector<std::uint8_t>(p, p + n)});
  }

  // Messages of a version 1 block: type(2) size(2) flags(1) reserved(3) data(size), 8-byte aligned.
  void v1_messages(const std::uint8_t* p, std::size_t n) {
    Cursor c(p, n, "object header (v1) block");
    while (c.remaining() >= 8) {
      const std::uint16_t type = c.u16();
      const std::uint16_t size = c.u16();
      const std::uint8_t flags = c.u8();
      c.skip(3);
      keep(type, flags, c.take(size), size);
    }
  }

  // Messages of a version 2 block: type(1) size(2) flags(1) [creation order(2)] data(size); a gap may end it.
  void v2_messages(const std::uint8_t* p, std::size_t n, bool crt_order) {
    const std::size_t head = crt_order ? 6 : 4;
    Cursor c(p, n, "object header (v2) block");
    while (c.remaining() >= head) {
      const std::uint8_t type = c.u8();
      const std::uint16_t size = c.u16();
      const std::uint8_t flags = c.u8();
      if (crt_order) c.skip(2);
      keep(type, flags, c.take(size), size);
    }
  }

  void visit(std::uint64_t rel) {
    if (!seen.insert(rel).second) corrupt("object header continuation blocks form a cycle");
    if (seen.size() > kMaxBlocks) corrupt("object header has too many continuation blocks");
  }
};

}  // namespace

std::vector<HeaderMessage> read_object_header(const ByteSource& src, const FileSizes& sizes, std::uint64_t addr,
                                              const std::vector<std::uint16_t>& wanted) {
  Walker w{src, sizes, wanted, {}, {}, {}};
  w.visit(addr);
  const std::uint64_t at = w.abs(addr);
  const auto first = src.read(at, std::min<std::uint64_t>(6, src.size() - std::min(src.size(), at)), "object header");
  if (first.size() < 6) corrupt("object header lies beyond the end of the file");
  bool v2 = false, crt_order = false;
  if (std::equal(first.begin(), first.begin() + 4, "OHDR")) {
    v2 = true;
    if (first[4] != 2) throw Unsupported("object header version " + std::to_string(first[4]));
    const std::uint8_t flags = first[5];
    if (flags & 0xC0) corrupt("object header has unknown flags");
    crt_order = flags & 0x04;
    const std::size_t prefix = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
    const unsigned size_bytes = 1u << (flags & 0x03);
    const auto pre = src.read(at, prefix + size_bytes, "object header prefix");
    const std::uint64_t chunk0 = load_le(pre.data() + prefix, size_bytes);
    const std::uint64_t total = checked_add(prefix + size_bytes, checked_add(chunk0, 4, "object header"), "object header");
    const auto block = src.read(at, total, "object header");
    check_checksum(block, "object header");
    w.v2_messages(block.data() + prefix + size_bytes, static_cast<std::size_t>(chunk0), crt_order);
  } else if (first[0] == 1) {
    const auto pre = src.read(at, 16, "object header (v1)");
    const std::uint64_t len = load_le(pre.data() + 8, 4);
    const auto block = src.read(checked_add(at, 16, "object header"), len, "object header (v1)");
    w.v1_messages(block.data(), block.size());
  } else {
    throw Unsupported("object header version " + std::to_string(first[0]));
  }
  while (!w.pending.empty()) {
    const Block b = w.pending.back();
    w.pending.pop_back();
    w.visit(b.addr);
    const auto block = src.read(w.abs(b.addr), b.len, "object header continuation block");
    if (v2) {
      if (block.size() < 8) corrupt("object header continuation block is too short");
      Cursor c(block, "object header continuation block");
      c.signature("OCHK");
      check_checksum(block, "object header continuation block");
      w.v2_messages(block.data() + 4, block.size() - 8, crt_order);
    } else {
      w.v1_messages(block.data(), block.size());
    }
  }
  return std::move(w.out);
}

}  // namespace qgpu::io::h5index
