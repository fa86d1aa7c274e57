// Fixed array chunk index ("Disk Format Level 1A... Fixed Array"): header "FAHD" (client 0 = unfiltered chunks:
// element = address; client 1 = filtered: address, chunk size, filter mask), data block "FADB". When the array has
// more elements than a page (2^page_bits), the data block holds a 'page initialized' bitmap and the pages follow it,
// each with its own checksum. Element i is the chunk with linear index i over the grid of the maximum dims.
#include "core/parallel_for.hpp"
#include "io/hdf5/index/index_readers.hpp"

namespace qgpu::io::h5index {

namespace {

constexpr std::size_t kMaxThreads = 16;
constexpr std::uint64_t kMaxThreadPageBytes = std::uint64_t(1) << 20;  // larger pages: one read of them all
constexpr std::size_t kPagesPerThread = 16;  // 16 pages of 1024 chunks (HDF5's default page) at least per thread

struct Elements {
  IndexContext& ctx;
  bool filtered;
  unsigned elem_bytes;
  unsigned size_bytes;

  void decode(const std::uint8_t* p, std::uint64_t first, std::uint64_t n) {
    Cursor c(p, static_cast<std::size_t>(n * elem_bytes), "fixed array elements");
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t addr = c.addr(ctx.sizes);
      std::uint64_t size = ctx.chunk_bytes;
      std::uint32_t mask = 0;
      if (filtered) {
        size = c.var(size_bytes);
        mask = c.u32();
      }
      ctx.grid.put_linear(first + i, addr, size, mask);
    }
  }
};

bool bit(const std::uint8_t* bitmap, std::uint64_t i) { return bitmap[i / 8] & (0x80u >> (i % 8)); }

}  // namespace

void read_fixed_array(IndexContext& ctx) {
  const FileSizes& s = ctx.sizes;
  if (ctx.layout.index_addr == s.undefined()) return;
  const std::uint64_t hdr_bytes = 4 + 1 + 1 + 1 + 1 + s.len + s.addr + 4;
  const auto hb = ctx.src.read(ctx.abs(ctx.layout.index_addr), hdr_bytes, "fixed array header");
  Cursor h(hb, "fixed array header");
  h.signature("FAHD");
  if (h.u8() != 0) throw Unsupported("fixed array header version");
  check_checksum(hb, "fixed array header");
  const unsigned client = h.u8();
  if (client > 1) corrupt("fixed array of client " + std::to_string(client) + " indexes chunks");
  const unsigned elem_bytes = h.u8();
  const unsigned page_bits = h.u8();
  const std::uint64_t nelmts = h.len(s);
  const std::uint64_t dblk = h.addr(s);
  Elements el{ctx, client == 1, elem_bytes, 0};
  if (el.filtered) el.size_bytes = filtered_size_bytes(elem_bytes, s.addr + 4, "fixed array");
  else if (elem_bytes != s.addr) corrupt("fixed array element size does not fit unfiltered chunks");
  if (page_bits == 0 || page_bits > 32) corrupt("fixed array page bits " + std::to_string(page_bits));
  if (nelmts != ctx.grid.max_count())
    corrupt("fixed array has " + std::to_string(nelmts) + " elements for " + std::to_string(ctx.grid.max_count()) +
            " chunks");
  if (dblk == s.undefined()) return;
  const std::uint64_t at = ctx.abs(dblk);
  const std::uint64_t page_nelmts = std::uint64_t(1) << page_bits;
  const std::uint64_t head = 4 + 1 + 1 + s.addr;
  auto check_prefix = [&](const std::vector<std::uint8_t>& b) {
    Cursor c(b, "fixed array data block");
    c.signature("FADB");
    if (c.u8() != 0) throw Unsupported("fixed array data block version");
    if (c.u8() != client) corrupt("fixed array data block of another client");
    if (c.addr(s) != ctx.layout.index_addr) corrupt("fixed array data block names another header");
  };
  if (nelmts <= page_nelmts) {
    const auto b = ctx.src.read(at, head + checked_mul(nelmts, elem_bytes, "fixed array") + 4, "fixed array data block");
    check_prefix(b);
    check_checksum(b, "fixed array data block");
    el.decode(b.data() + head, 0, nelmts);
    return;
  }
  const std::uint64_t npages = (nelmts + page_nelmts - 1) / page_nelmts;
  const std::uint64_t bitmap_bytes = (npages + 7) / 8;
  const std::uint64_t prefix = head + bitmap_bytes + 4;
  const auto pre = ctx.src.read(at, prefix, "fixed array data block");
  check_prefix(pre);
  check_checksum(pre, "fixed array data block");
  const std::uint8_t* bitmap = pre.data() + head;
  const std::uint64_t page_bytes = page_nelmts * elem_bytes + 4;
  const std::uint64_t last_nelmts = nelmts - (npages - 1) * page_nelmts;
  const std::uint64_t all = checked_add(checked_mul(npages - 1, page_bytes, "fixed array pages"),
                                        last_nelmts * elem_bytes + 4, "fixed array pages");
  const std::uint64_t pages_at = checked_add(at, prefix, "fixed array pages");
  // Pages of a sane size (HDF5's default: 1024 elements) are read by the threads that check them, each into its own
  // page buffer: no serial read of the whole array (268 MB for 16.7M chunks) into one fresh buffer first.
  const bool per_page = page_bytes <= kMaxThreadPageBytes;
  std::vector<std::uint8_t> pages;
  if (per_page) ctx.src.require_within(pages_at, all, "fixed array pages");
  else pages = ctx.src.read(pages_at, all, "fixed array pages");
  // Pages on a few threads (each checks its checksum and puts its own chunks); the first damaged page is named.
  parallel_for_first_error(
      static_cast<std::size_t>(npages),
      [&](std::size_t p) {
        if (!bit(bitmap, p)) return;  // page never written: none of its chunks exist
        const std::uint64_t n = p + 1 == npages ? last_nelmts : page_nelmts;
        thread_local std::vector<std::uint8_t> own;
        const std::uint8_t* page = nullptr;
        if (per_page) {
          own.resize(static_cast<std::size_t>(n * elem_bytes + 4));
          ctx.src.read_to(pages_at + p * page_bytes, own.size(), own.data(), "fixed array pages");
          page = own.data();
        } else {
          page = pages.data() + p * page_bytes;
        }
        const std::uint32_t stored = static_cast<std::uint32_t>(load_le(page + n * elem_bytes, 4));
        if (!checksum_ok(page, static_cast<std::size_t>(n * elem_bytes), stored))
          corrupt("checksum mismatch in fixed array data block page " + std::to_string(p));
        el.decode(page, p * page_nelmts, n);
      },
      kMaxThreads, kPagesPerThread);
}

}  // namespace qgpu::io::h5index
