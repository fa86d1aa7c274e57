// Extensible array chunk index (one unlimited dimension): header "EAHD", index block "EAIB" (first elements, data
// block addresses of the first super blocks, super block addresses), super blocks "EASB" (page-init bitmaps when
// their data blocks are paged, data block addresses), data blocks "EADB" (elements, or a prefix followed by
// checksummed pages). Element i is the chunk with linear index i over the grid with the unlimited dimension moved
// first ("swizzled", as H5Dearray.c). Layout facts from H5EAcache.c / H5EAhdr.c / H5EA.c.
#include <array>

#include "core/parallel_for.hpp"
#include "io/hdf5/index/index_readers.hpp"

namespace qgpu::io::h5index {

namespace {

constexpr std::size_t kMaxThreads = 16;
constexpr std::size_t kBlocksPerThread = 2;  // data blocks of a super block per thread at least

bool power_of_two(std::uint64_t v) { return v && !(v & (v - 1)); }
unsigned log2_of2(std::uint64_t v) {
  unsigned r = 0;
  while (v >>= 1) ++r;
  return r;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > ~std::uint64_t(0) - b ? ~std::uint64_t(0) : a + b; }
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? ~std::uint64_t(0) : r;
}

struct SuperBlockInfo {
  std::uint64_t ndblks, dblk_nelmts, start_idx, start_dblk;
};

struct Ea {
  Ea(IndexContext& c, std::uint64_t hdr) : ctx(c), hdr_addr(hdr) {}
  IndexContext& ctx;
  std::uint64_t hdr_addr;
  unsigned client = 0, elem_bytes = 0, size_bytes = 0, arr_off_size = 0;
  std::uint64_t idx_blk_elmts = 0, page_nelmts = 0, max_idx = 0;
  std::size_t unlim = 0;
  std::vector<std::uint64_t> sw_grid;

  // Chunk of element idx: unswizzle the linear index over (unlimited dim, other dims in order).
  bool direct = false;  // unlimited dim first and the others at their maximum: element index = table index

  // (Thread-safe: the pages of a data block are put from several threads.)
  void put(std::uint64_t idx, std::uint64_t addr, std::uint64_t size, std::uint32_t mask) const {
    if (direct) return ctx.grid.put_index(idx, addr, size, mask, true);
    std::array<std::uint64_t, ChunkGrid::kMaxRank> sw, scaled;
    const std::size_t r = sw_grid.size();
    for (std::size_t i = r; i-- > 1;) {
      sw[i] = idx % sw_grid[i];
      idx /= sw_grid[i];
    }
    sw[0] = idx;
    scaled[unlim] = sw[0];
    for (std::size_t i = 0, k = 1; i < r; ++i)
      if (i != unlim) scaled[i] = sw[k++];
    ctx.grid.put(scaled.data(), addr, size, mask);
  }

  void elements(const std::uint8_t* p, std::uint64_t first, std::uint64_t n) const {
    Cursor c(p, static_cast<std::size_t>(n * elem_bytes), "extensible array elements");
    for (std::uint64_t i = 0; i < n && first + i < max_idx; ++i) {
      const std::uint64_t addr = c.addr(ctx.sizes);
      std::uint64_t size = ctx.chunk_bytes;
      std::uint32_t mask = 0;
      if (client == 1) {
        size = c.var(size_bytes);
        mask = c.u32();
      }
      put(first + i, addr, size, mask);
    }
  }

  // Signature, version, client and owning header address common to all blocks.
  void prefix(Cursor& c, const char sig[4], const char* what) const {
    c.signature(sig);
    if (c.u8() != 0) throw Unsupported(std::string(what) + " version");
    if (c.u8() != client) corrupt(std::string(what) + " of another client");
    if (c.addr(ctx.sizes) != hdr_addr) corrupt(std::string(what) + " names another header");
  }

  // A data block of nelmts elements whose first element is array index idx_blk_elmts + block_off.
  void data_block(std::uint64_t addr, std::uint64_t nelmts, std::uint64_t block_off, const std::uint8_t* page_init,
                  std::uint64_t dblk_in_sblock) const {
    const FileSizes& s = ctx.sizes;
    const std::uint64_t at = ctx.abs(addr);
    const std::uint64_t first = idx_blk_elmts + block_off;
    const std::uint64_t head = 4 + 1 + 1 + s.addr + arr_off_size;
    auto check = [&](const std::vector<std::uint8_t>& b) {
      Cursor c(b, "extensible array data block");
      prefix(c, "EADB", "extensible array data block");
      // (The stored block offset is not checked: HDF5 writes it inconsistently for index-block data blocks.)
    };
    if (nelmts <= page_nelmts) {
      const auto b = ctx.src.read(at, head + checked_mul(nelmts, elem_bytes, "data block") + 4,
                                  "extensible array data block");
      check(b);
      check_checksum(b, "extensible array data block");
      elements(b.data() + head, first, nelmts);
      return;
    }
    if (!page_init) throw Unsupported("paged extensible array data block outside a super block");
    const std::uint64_t npages = nelmts / page_nelmts;
    const std::uint64_t page_bytes = page_nelmts * elem_bytes + 4;
    const auto b = ctx.src.read(at, head + 4 + checked_mul(npages, page_bytes, "data block pages"),
                                "extensible array data block");
    std::vector<std::uint8_t> pre(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(head + 4));
    check(pre);
    check_checksum(pre, "extensible array data block");
    for (std::uint64_t p = 0; p < npages; ++p) {
      const std::uint64_t bit = dblk_in_sblock * npages + p;
      if (!(page_init[bit / 8] & (0x80u >> (bit % 8)))) continue;  // page never written
      if (first + p * page_nelmts >= max_idx) break;
      const std::uint8_t* page = b.data() + head + 4 + p * page_bytes;
      const std::uint32_t stored = static_cast<std::uint32_t>(load_le(page + page_nelmts * elem_bytes, 4));
      if (!checksum_ok(page, static_cast<std::size_t>(page_nelmts * elem_bytes), stored))
        corrupt("checksum mismatch in extensible array data block page");
      elements(page, first + p * page_nelmts, page_nelmts);
    }
  }
};

}  // namespace

void read_extensible_array(IndexContext& ctx) {
  const FileSizes& s = ctx.sizes;
  if (ctx.layout.index_addr == s.undefined()) return;
  const std::uint64_t hdr_bytes = 4 + 1 + 1 + 6 + 6 * std::uint64_t(s.len) + s.addr + 4;
  const auto hb = ctx.src.read(ctx.abs(ctx.layout.index_addr), hdr_bytes, "extensible array header");
  Cursor h(hb, "extensible array header");
  h.signature("EAHD");
  if (h.u8() != 0) throw Unsupported("extensible array header version");
  check_checksum(hb, "extensible array header");
  Ea ea{ctx, ctx.layout.index_addr};
  ea.client = h.u8();
  if (ea.client > 1) corrupt("extensible array of client " + std::to_string(ea.client) + " indexes chunks");
  ea.elem_bytes = h.u8();
  const unsigned max_bits = h.u8();
  ea.idx_blk_elmts = h.u8();
  const unsigned min_elmts = h.u8();
  const unsigned min_ptrs = h.u8();
  const unsigned page_bits = h.u8();
  h.skip(4 * std::size_t(s.len));  // super/data block counts and sizes
  ea.max_idx = h.len(s);
  h.len(s);  // elements realized
  const std::uint64_t iblock = h.addr(s);
  if (ea.client == 1) ea.size_bytes = filtered_size_bytes(ea.elem_bytes, s.addr + 4, "extensible array");
  else if (ea.elem_bytes != s.addr) corrupt("extensible array element size does not fit unfiltered chunks");
  if (max_bits == 0 || max_bits > 64 || ea.idx_blk_elmts == 0 || !power_of_two(min_elmts) ||
      !power_of_two(min_ptrs) || log2_of2(min_elmts) > max_bits || page_bits == 0 || page_bits > 32)
    corrupt("extensible array creation parameters are inconsistent");
  ea.arr_off_size = (max_bits + 7) / 8;
  ea.page_nelmts = std::uint64_t(1) << page_bits;

  // The unlimited dimension leads the element order.
  const auto& mg = ctx.grid.max_grid();
  std::size_t nunlim = 0;
  for (std::size_t i = 0; i < mg.size(); ++i)
    if (mg[i] == 0) ea.unlim = i, ++nunlim;
  if (nunlim != 1) corrupt("extensible array index on a dataset without exactly one unlimited dimension");
  ea.sw_grid.push_back(0);
  for (std::size_t i = 0; i < mg.size(); ++i)
    if (i != ea.unlim) ea.sw_grid.push_back(mg[i]);
  ea.direct = ea.unlim == 0 && ctx.grid.rows_match_max_grid();
  if (iblock == s.undefined()) return;

  // Super block geometry (H5EA__hdr_init).
  const unsigned nsblks = 1 + max_bits - log2_of2(min_elmts);
  std::vector<SuperBlockInfo> info(nsblks);
  std::uint64_t start_idx = 0, start_dblk = 0;
  for (unsigned u = 0; u < nsblks; ++u) {
    info[u] = {std::uint64_t(1) << (u / 2), (std::uint64_t(1) << ((u + 1) / 2)) * min_elmts, start_idx, start_dblk};
    start_idx = sat_add(start_idx, sat_mul(info[u].ndblks, info[u].dblk_nelmts));
    start_dblk = sat_add(start_dblk, info[u].ndblks);
  }
  const unsigned iblock_nsblks = 2 * log2_of2(min_ptrs);
  if (iblock_nsblks > nsblks) corrupt("extensible array index block holds more super blocks than exist");
  const std::uint64_t ndblk_addrs = 2 * (std::uint64_t(min_ptrs) - 1);
  const std::uint64_t nsblk_addrs = nsblks - iblock_nsblks;

  const std::uint64_t ib_bytes = 4 + 1 + 1 + s.addr + ea.idx_blk_elmts * ea.elem_bytes +
                                 (ndblk_addrs + nsblk_addrs) * s.addr + 4;
  const auto ib = ctx.src.read(ctx.abs(iblock), ib_bytes, "extensible array index block");
  Cursor c(ib, "extensible array index block");
  ea.prefix(c, "EAIB", "extensible array index block");
  check_checksum(ib, "extensible array index block");
  ea.elements(c.take(static_cast<std::size_t>(ea.idx_blk_elmts * ea.elem_bytes)), 0, ea.idx_blk_elmts);
  std::vector<std::uint64_t> dblk_addrs(ndblk_addrs), sblk_addrs(nsblk_addrs);
  for (auto& a : dblk_addrs) a = c.addr(s);
  for (auto& a : sblk_addrs) a = c.addr(s);

  for (unsigned u = 0; u < nsblks; ++u) {
    const SuperBlockInfo& si = info[u];
    if (sat_add(ea.idx_blk_elmts, si.start_idx) >= ea.max_idx) break;
    const bool paged = si.dblk_nelmts > ea.page_nelmts;
    const std::uint64_t npages = paged ? si.dblk_nelmts / ea.page_nelmts : 0;
    const std::uint64_t init_bytes = paged ? (npages + 7) / 8 : 0;
    std::vector<std::uint64_t> addrs;
    std::vector<std::uint8_t> page_init;
    if (u < iblock_nsblks) {
      if (si.start_dblk + si.ndblks > ndblk_addrs) corrupt("extensible array index block is short of data blocks");
      addrs.assign(dblk_addrs.begin() + static_cast<std::ptrdiff_t>(si.start_dblk),
                   dblk_addrs.begin() + static_cast<std::ptrdiff_t>(si.start_dblk + si.ndblks));
    } else {
      const std::uint64_t sb = sblk_addrs[u - iblock_nsblks];
      if (sb == s.undefined()) continue;  // no chunk in this super block's range
      const std::uint64_t sb_bytes = 4 + 1 + 1 + s.addr + ea.arr_off_size +
                                     checked_mul(si.ndblks, init_bytes + s.addr, "super block") + 4;
      const auto b = ctx.src.read(ctx.abs(sb), sb_bytes, "extensible array super block");
      Cursor sc(b, "extensible array super block");
      ea.prefix(sc, "EASB", "extensible array super block");
      check_checksum(b, "extensible array super block");
      if (sc.var(ea.arr_off_size) != si.start_idx) corrupt("extensible array super block at the wrong array offset");
      const std::uint8_t* bits = sc.take(static_cast<std::size_t>(si.ndblks * init_bytes));
      page_init.assign(bits, bits + si.ndblks * init_bytes);
      addrs.resize(si.ndblks);
      for (auto& a : addrs) a = sc.addr(s);
    }
    // The data blocks of a super block on a few threads (each reads, checks and puts its own chunks); the first
    // damaged block is named.
    parallel_for_first_error(
        static_cast<std::size_t>(si.ndblks),
        [&](std::size_t d) {
          const std::uint64_t block_off = si.start_idx + d * si.dblk_nelmts;
          if (sat_add(ea.idx_blk_elmts, block_off) >= ea.max_idx) return;  // (and every block after it)
          if (addrs[d] == s.undefined()) return;
          ea.data_block(addrs[d], si.dblk_nelmts, block_off, page_init.empty() ? nullptr : page_init.data(), d);
        },
        kMaxThreads, kBlocksPerThread);
  }
}

}  // namespace qgpu::io::h5index
