// Version 1 B-tree of chunked raw data (node type 1), "Disk Format Level 1A1". Node: "TREE", type, level,
// entries used (2), left and right sibling addresses, then key 0, child 0, key 1, ..., key N. A key is chunk size (4),
// filter mask (4) and one 8-byte element offset per layout dimension (the last, element-size dimension, is 0).
//
// Read level by level (issue 33): the parent level gives every child address and the key range each child must
// stay in, so the nodes of a level are read in address order (nodes close together in one pread, as a DECTRIS
// writer lays them out) and decoded on a few threads, without per-node allocations. Every check of a one-node-at-
// a-time walk is kept: a node read twice (a cycle, or two parents sharing a child), levels that do not count down,
// keys out of order in a node or outside the range their parent gives, leaves out of order, truncated nodes. When
// several nodes of a level are damaged, the error of the first in key order is reported.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "io/hdf5/index/index_readers.hpp"

namespace qgpu::io::h5index {

namespace {

constexpr unsigned kMaxLevel = 64;
// One read covers nodes whose gap is at most one node guess, up to this many bytes (a read buffer per thread).
constexpr std::uint64_t kMaxRunBytes = std::uint64_t(1) << 20;
constexpr std::size_t kMaxThreads = 16;
constexpr std::size_t kRunsPerThread = 16;  // fewer runs than this per thread: not worth starting the thread

struct Node {                    // one node of the level being read, in key order
  std::uint64_t addr;            // relative file address
  std::uint64_t at;              // absolute byte offset
  const std::uint64_t* lo;       // bounds its parent gives (null: none)
  const std::uint64_t* hi;
};

struct Run {                     // one pread: [start, end) of the file, nodes order[first, last) inside it
  std::uint64_t start, end;
  std::size_t first, last;
};

struct BtreeV1 {
  IndexContext& ctx;
  std::size_t rank;
  std::uint64_t key_bytes, head_bytes, entry_bytes, guess;
  std::uint64_t undefined;

  // Keys are scaled chunk offsets (rank values each), compared lexicographically as HDF5 does (H5VM_vector_cmp_u).
  bool less(const std::uint64_t* a, const std::uint64_t* b) const {
    for (std::size_t i = 0; i < rank; ++i)
      if (a[i] != b[i]) return a[i] < b[i];
    return false;
  }
  std::string text(const std::uint64_t* k) const {
    std::string s = "(";
    for (std::size_t i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(k[i]);
    return s + ")";
  }

  // Scaled key from its stored element offsets (p: the rank + 1 offsets of a key); false when they are not
  // chunk offsets (report() names the fault).
  bool decode_key(const std::uint8_t* p, std::uint64_t* key) const {
    for (std::size_t d = 0; d < rank; ++d) {
      const std::uint64_t off = load_le(p + 8 * d, 8);
      const std::uint64_t cd = ctx.layout.chunk_dims[d];
      if (off == 0 || cd == 1) {  // (no division in the common cases)
        key[d] = off;
        continue;
      }
      if (off % cd != 0) return false;
      key[d] = off / cd;
    }
    return load_le(p + 8 * rank, 8) == 0;
  }

  // The bytes of a node (at least its header when the file holds it): `view` of `have` bytes from the level's
  // read, else read alone as the one-node walk did. Returns the node's entry count and level.
  struct Header {
    const std::uint8_t* p;
    unsigned level, entries;
  };
  Header header(const Node& n, const std::uint8_t* view, std::uint64_t have, std::vector<std::uint8_t>& own) const {
    const ByteSource& src = ctx.src;
    if (!view) {
      own = src.read(n.at, std::min(guess, src.size() - std::min(src.size(), n.at)), "B-tree node");
      view = own.data();
      have = own.size();
    }
    Cursor h(view, static_cast<std::size_t>(have), "B-tree node");
    h.signature("TREE");
    if (h.u8() != 1) corrupt("B-tree node is not a chunk node (type 1)");
    const unsigned level = h.u8();
    const unsigned entries = h.u16();
    const std::uint64_t node_bytes = head_bytes + std::uint64_t(entries) * entry_bytes + key_bytes;
    if (node_bytes > have) {
      own = src.read(n.at, node_bytes, "B-tree node");
      view = own.data();
    }
    return {view, level, entries};
  }

  // Keys of a node decoded and checked: increasing, inside [lo, hi). keys: entries * rank values. Increasing keys
  // lie inside the range when the first and the last do; on any fault, report() names the first one key by key.
  void check_keys(const Node& n, const std::uint8_t* p, unsigned entries, std::uint64_t* keys) const {
    bool ok = true;
    for (unsigned i = 0; i < entries; ++i) {
      std::uint64_t* key = keys + std::size_t(i) * rank;
      ok = decode_key(p + std::size_t(i) * entry_bytes + 8, key) && ok;
      if (i > 0 && !less(key - rank, key)) ok = false;
    }
    if (entries && ((n.lo && less(keys, n.lo)) || (n.hi && !less(keys + std::size_t(entries - 1) * rank, n.hi))))
      ok = false;
    if (!ok) report(n, p, entries, keys);
  }
  [[noreturn]] void report(const Node& n, const std::uint8_t* p, unsigned entries, std::uint64_t* keys) const {
    for (unsigned i = 0; i < entries; ++i) {
      std::uint64_t* key = keys + std::size_t(i) * rank;
      const std::uint8_t* k = p + std::size_t(i) * entry_bytes + 8;
      if (!decode_key(k, key)) {
        for (std::size_t d = 0; d < rank; ++d)
          if (load_le(k + 8 * d, 8) % ctx.layout.chunk_dims[d] != 0) corrupt("B-tree key offset is not on a chunk boundary");
        corrupt("B-tree key has a non-zero element-size offset");
      }
      if (i > 0 && !less(key - rank, key))
        corrupt("version 1 B-tree keys out of order: key " + std::to_string(i) + " " + text(key) +
                " does not follow key " + std::to_string(i - 1) + " " + text(key - rank) + " (damaged index)");
      if ((n.lo && less(key, n.lo)) || (n.hi && !less(key, n.hi)))
        corrupt("version 1 B-tree key " + text(key) + " lies outside the range " + (n.lo ? text(n.lo) : "(start)") +
                " .. " + (n.hi ? text(n.hi) : "(end)") + " its parent node gives it (damaged index)");
    }
    corrupt("version 1 B-tree node fails its key checks");  // (not reached: check_keys found a fault)
  }

  // Level-by-level walk state.
  std::vector<std::uint64_t> visited;  // sorted addresses of the levels above
  std::uint64_t node_limit = 0, nodes_read = 0;

  // Reads the nodes of one level; `expect` = their level (-1: the root, any level). Inner levels fill keys/child
  // per node (key order) for the next level; leaves go to the grid. Returns the level read.
  struct Inner {
    std::vector<std::uint64_t> keys, child;  // all entries of the level, in key order
    std::vector<std::size_t> begin;          // per node: its first entry (nodes + 1 values)
  };
  int level(const std::vector<Node>& nodes, int expect, Inner& out) {
    const std::size_t nn = nodes.size();
    // A node met twice (here or on a level above) would be a cycle or a shared child.
    nodes_read += nn;
    if (nodes_read > node_limit) corrupt("version 1 B-tree has more nodes than the dataset has chunks");
    std::vector<std::size_t> order(nn);
    for (std::size_t i = 0; i < nn; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return nodes[a].at < nodes[b].at; });
    for (std::size_t i = 0; i < nn; ++i) {
      const std::uint64_t a = nodes[order[i]].addr;
      if ((i > 0 && nodes[order[i - 1]].addr == a) || std::binary_search(visited.begin(), visited.end(), a))
        corrupt("version 1 B-tree nodes form a cycle");
    }
    // Reads in address order: nodes whose gap is at most a node guess share one read.
    const std::uint64_t fsize = ctx.src.size();
    std::vector<Run> runs;
    for (std::size_t i = 0; i < nn; ++i) {
      const std::uint64_t at = nodes[order[i]].at;
      const std::uint64_t end = at < fsize ? at + std::min(guess, fsize - at) : at;
      Run* back = runs.empty() ? nullptr : &runs.back();
      if (back && back->end > back->start && at < fsize && (at <= back->end || at - back->end <= guess) &&
          end - back->start <= kMaxRunBytes) {
        back->end = std::max(back->end, end);
        back->last = i + 1;
      } else {
        runs.push_back({at, end, i, i + 1});
      }
    }
    std::vector<unsigned> entries(nn, 0), levels(nn, 0);
    // Leaves: the first and last key of each (the order between leaves is checked after the decode).
    std::vector<std::uint64_t> ends(2 * nn * rank);
    std::vector<std::vector<std::uint8_t>> inner_bytes(nn);  // inner nodes: entries kept for the pass in key order
    std::vector<std::exception_ptr> errors(nn);
    std::atomic<bool> failed{false};

    // The nodes of run r: headers checked; a leaf's keys checked and its chunks put in the grid (distinct leaves
    // that pass their checks hold disjoint key ranges, so threads never put the same chunk); an inner node's
    // entries kept.
    auto work = [&](std::size_t r, std::vector<std::uint8_t>& buf, std::vector<std::uint8_t>& own,
                    std::vector<std::uint64_t>& keys) {
      const Run& run = runs[r];
      const std::uint8_t* base = nullptr;
      if (run.end > run.start) {
        buf.resize(static_cast<std::size_t>(run.end - run.start));
        ctx.src.read_to(run.start, run.end - run.start, buf.data(), "B-tree node");
        base = buf.data();
      }
      for (std::size_t k = run.first; k < run.last; ++k) {
        const std::size_t ni = order[k];
        const Node& n = nodes[ni];
        try {
          const Header h = header(n, base ? base + (n.at - run.start) : nullptr, base ? run.end - n.at : 0, own);
          if (h.level > kMaxLevel || (expect >= 0 && int(h.level) != expect))
            corrupt("B-tree node at level " + std::to_string(h.level) + " where level " + std::to_string(expect) +
                    " belongs");
          entries[ni] = h.entries;
          levels[ni] = h.level;
          const std::uint8_t* p = h.p + head_bytes;
          if (h.level != 0) {
            inner_bytes[ni].assign(p, p + std::size_t(h.entries) * entry_bytes + key_bytes);
            continue;
          }
          keys.resize(std::size_t(h.entries) * rank);
          check_keys(n, p, h.entries, keys.data());
          for (unsigned i = 0; i < h.entries; ++i) {
            const std::uint8_t* e = p + std::size_t(i) * entry_bytes;
            ctx.grid.put(keys.data() + std::size_t(i) * rank, load_le(e + key_bytes, ctx.sizes.addr), load_le(e, 4),
                         static_cast<std::uint32_t>(load_le(e + 4, 4)));
          }
          if (h.entries) {
            std::copy_n(keys.data(), rank, ends.data() + 2 * ni * rank);
            std::copy_n(keys.data() + std::size_t(h.entries - 1) * rank, rank, ends.data() + (2 * ni + 1) * rank);
          }
        } catch (...) {
          errors[ni] = std::current_exception();
          failed = true;
        }
      }
    };
    const std::size_t threads =
        std::min({kMaxThreads, std::size_t(std::max(1u, std::thread::hardware_concurrency())),
                  std::max<std::size_t>(1, runs.size() / kRunsPerThread)});
    std::atomic<std::size_t> next{0};
    auto loop = [&] {
      std::vector<std::uint8_t> buf, own;
      std::vector<std::uint64_t> keys;
      for (std::size_t r; (r = next.fetch_add(1)) < runs.size();) {
        try {
          work(r, buf, own, keys);
        } catch (...) {  // the run's read itself (IoError, memory): charged to its first node
          errors[order[runs[r].first]] = std::current_exception();
          failed = true;
        }
      }
    };
    if (threads > 1) {
      std::vector<std::thread> pool;
      for (std::size_t t = 1; t < threads; ++t) {
        try {
          pool.emplace_back(loop);
        } catch (const std::system_error&) {  // no more threads to be had: the others share the runs
          break;
        }
      }
      loop();
      for (auto& t : pool) t.join();
    } else {
      loop();
    }
    if (failed)
      for (const auto& e : errors)
        if (e) std::rethrow_exception(e);  // the first damaged node in key order

    const int lvl = nn ? int(levels[0]) : expect;
    if (lvl == 0) {
      // Leaves in key order: each one's first key after the previous one's last.
      const std::uint64_t* last = nullptr;
      for (std::size_t i = 0; i < nn; ++i) {
        if (!entries[i]) continue;
        const std::uint64_t* first = ends.data() + 2 * i * rank;
        if (last && !less(last, first))
          corrupt("version 1 B-tree chunks out of order: " + text(first) + " after " + text(last) + " (damaged index)");
        last = first + rank;
      }
      return 0;
    }
    // Inner nodes: keys checked and children taken, in key order, for the next level.
    out.begin.assign(nn + 1, 0);
    for (std::size_t i = 0; i < nn; ++i) out.begin[i + 1] = out.begin[i] + entries[i];
    out.keys.resize(out.begin[nn] * rank);
    out.child.resize(out.begin[nn]);
    for (std::size_t i = 0; i < nn; ++i) {
      const std::uint8_t* p = inner_bytes[i].data();
      check_keys(nodes[i], p, entries[i], out.keys.data() + out.begin[i] * rank);
      for (unsigned k = 0; k < entries[i]; ++k) {
        const std::uint64_t c = load_le(p + std::size_t(k) * entry_bytes + key_bytes, ctx.sizes.addr);
        if (c == undefined) corrupt("B-tree child pointer undefined");
        out.child[out.begin[i] + k] = c;
      }
    }
    return lvl;
  }

  void walk() {
    node_limit = 2 * ctx.grid.count() + 1024;
    std::vector<Node> nodes{{ctx.layout.index_addr, ctx.abs(ctx.layout.index_addr), nullptr, nullptr}};
    // Every inner level stays until the leaves are read: the last child of a node is bounded by the node's own
    // upper bound, a key of a level further up.
    std::deque<Inner> inner;
    int expect = -1;
    for (;;) {
      Inner& cur = inner.emplace_back();
      const int lvl = level(nodes, expect, cur);
      if (lvl == 0) return;
      // The next level: child k of node i holds the chunks from key k up to (not including) key k + 1; the last
      // child up to the node's own bound (HDF5 sets the right-most key of a node loosely, so it bounds nothing).
      for (const Node& n : nodes) visited.push_back(n.addr);
      std::sort(visited.begin(), visited.end());
      std::vector<Node> next;
      next.reserve(cur.child.size());
      for (std::size_t i = 0; i + 1 < cur.begin.size(); ++i)
        for (std::size_t k = cur.begin[i]; k < cur.begin[i + 1]; ++k) {
          const std::uint64_t* key = cur.keys.data() + k * rank;
          next.push_back({cur.child[k], ctx.abs(cur.child[k]), key,
                          k + 1 < cur.begin[i + 1] ? key + rank : nodes[i].hi});
        }
      nodes = std::move(next);
      expect = lvl - 1;
    }
  }
};

}  // namespace

void read_btree_v1(IndexContext& ctx) {
  if (ctx.layout.index_addr == ctx.sizes.undefined()) return;  // no chunk written yet
  const std::size_t rank = ctx.layout.chunk_dims.size();
  const std::uint64_t key_bytes = 8 + 8 * (rank + 1);
  const std::uint64_t head_bytes = 8 + 2 * std::uint64_t(ctx.sizes.addr);
  const std::uint64_t entry_bytes = key_bytes + ctx.sizes.addr;
  // One read for header and entries of a node of up to 64 entries (HDF5's default chunk B-tree has 2K = 64).
  const std::uint64_t guess = head_bytes + 64 * entry_bytes + key_bytes;
  BtreeV1 t{ctx, rank, key_bytes, head_bytes, entry_bytes, guess, ctx.sizes.undefined(), {}, 0, 0};
  t.walk();
}

}  // namespace qgpu::io::h5index
