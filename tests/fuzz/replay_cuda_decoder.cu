// The CUDA bitshuffle+LZ4 decoder against the host decoder on the same inputs: every chunk must either fail on
// both (any reason) or decode on both to identical bytes.
//
//   replay_cuda_decoder [options] PATH...   replay fuzz inputs of fuzz_bitshuffle_host (files, or directories
//                                           read recursively): 5-byte prefix (tests/fuzz/fuzz_input.hpp) + chunk
//   replay_cuda_decoder [options] --mutate N [--seed S]
//                                           N chunks generated here: valid chunks of random geometry and content
//                                           (our encoder) and deterministic mutations of them (bit flips,
//                                           truncations, extensions, block length and header edits, overwrites)
// options:
//   --host-only       run only the host decoder (and the generator): no GPU needed; checks that every unmutated
//                     generated chunk decodes to its frame
//   --batch N         chunks per GPU batch (default 4096); the inputs of one batch share a geometry
//   --save DIR        write every disagreeing input there as a fuzz input file (replayable here and by
//                     fuzz_bitshuffle_host)
//   --threads N       host decoder threads (default: all cores)
//
// Each batch runs on the GPU: each chunk alone with its own error word (so every chunk's outcome is known)
// and the whole batch in one launch per decoder variant (io::cuda::DecodeVariant: the batch indexing and the
// variants; each error word must name the smallest failing chunk and the frames must equal the single-chunk ones). Inputs the GPU decoder does not take are skipped and
// counted: zstd blocks, 8-byte elements, blocks above 16 KiB.
// Exit status: 0 all agree, 1 a disagreement (or a generated valid chunk that does not decode), 2 usage or CUDA
// error, 77 no CUDA device (use --host-only). Runs under compute-sanitizer (one stream, synchronous checks).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "fuzz_input.hpp"
#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/codec/byte_order.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"

using namespace qgpu;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxGpuBlockBytes = 16 * 1024;
constexpr unsigned long long kNoError = ~0ull;

struct Options {
  bool host_only = false;
  std::size_t batch = 4096;
  std::uint64_t mutate = 0;
  std::uint64_t seed = 1;
  std::string save_dir;
  unsigned threads = 0;
  std::vector<std::string> paths;
};

struct Input {
  std::string name;
  fuzz::FuzzCase c;
  std::vector<std::uint8_t> chunk;
  std::vector<std::uint8_t> expect;  // generated unmutated chunks: the frame they must decode to (else empty)
  bool valid = false;
};

struct Counts {
  std::uint64_t inputs = 0, skip_short = 0, skip_zstd = 0, skip_elem8 = 0, skip_block = 0;
  std::uint64_t host_ok = 0, host_fail = 0, gpu_ok = 0, gpu_fail = 0;
  std::uint64_t gpu_code[6] = {0, 0, 0, 0, 0, 0};
  std::uint64_t both_ok = 0, both_fail = 0;
  std::uint64_t host_ok_gpu_fail = 0, host_fail_gpu_ok = 0, bytes_differ = 0, batch_differs = 0, wrong_chunk_id = 0;
  std::uint64_t valid_checked = 0, valid_wrong = 0;
  std::uint64_t swapped_checked = 0;  // frames also decoded as big-endian and compared with the host's, swapped
  std::uint64_t gpu_batches = 0;
  std::set<std::tuple<std::size_t, std::size_t, std::size_t>> geometries;  // (elem size, block, frame elems)
  std::size_t min_frame = ~std::size_t(0), max_frame = 0;
  std::uint64_t disagreements() const {
    return host_ok_gpu_fail + host_fail_gpu_ok + bytes_differ + batch_differs + wrong_chunk_id;
  }
};

// splitmix64: a deterministic generator whose sequence does not depend on the standard library.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  bool chance(unsigned percent) { return below(100) < percent; }
};

std::size_t index_of(const std::size_t* table, std::size_t n, std::size_t v) {
  for (std::size_t i = 0; i < n; ++i)
    if (table[i] == v) return i;
  return n;
}

// The input as a fuzz input file of fuzz_bitshuffle_host (prefix + chunk).
std::vector<std::uint8_t> as_fuzz_input(const Input& in) {
  std::vector<std::uint8_t> out(fuzz::kPrefixBytes + in.chunk.size());
  const std::size_t ei = index_of(fuzz::kElemSizes, 4, in.c.params.elem_size);
  std::size_t bi = index_of(fuzz::kBlocks, 5, in.c.params.block_elems);
  if (in.c.params.block_elems == io::codec::default_block_elems(in.c.params.elem_size)) bi = 0;
  fuzz::write_prefix(out.data(), ei, bi, in.c.params.compression == io::codec::BlockCompression::zstd,
                     in.c.frame_elems);
  std::copy(in.chunk.begin(), in.chunk.end(), out.begin() + std::ptrdiff_t(fuzz::kPrefixBytes));
  return out;
}

// ---- inputs from files ----

void read_file_input(const fs::path& p, Counts& n, std::vector<Input>& out) {
  std::ifstream f(p, std::ios::binary);
  const std::vector<std::uint8_t> b{std::istreambuf_iterator<char>(f), {}};
  ++n.inputs;
  if (b.size() < fuzz::kPrefixBytes) {
    ++n.skip_short;
    return;
  }
  Input in;
  in.name = p.string();
  in.c = fuzz::parse_prefix(b.data());
  in.chunk.assign(b.begin() + fuzz::kPrefixBytes, b.end());
  out.push_back(std::move(in));
}

std::vector<Input> read_inputs(const std::vector<std::string>& paths, Counts& n) {
  std::vector<Input> out;
  for (const std::string& path : paths) {
    if (fs::is_directory(path)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::recursive_directory_iterator(path))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) read_file_input(f, n, out);
    } else if (fs::is_regular_file(path)) {
      read_file_input(path, n, out);
    } else {
      throw InvalidArgument("not a file or directory: " + path);
    }
  }
  return out;
}

// Whether the GPU decoder takes this input; counts the reason when not.
bool gpu_takes(const Input& in, Counts& n) {
  if (in.c.params.compression == io::codec::BlockCompression::zstd) return ++n.skip_zstd, false;
  if (in.c.params.elem_size > 4) return ++n.skip_elem8, false;
  if (in.c.params.block_bytes() > kMaxGpuBlockBytes) return ++n.skip_block, false;
  return true;
}

// ---- generated inputs ----

fuzz::FuzzCase random_geometry(Rng& r) {
  std::uint8_t p[fuzz::kPrefixBytes];
  const unsigned cls = unsigned(r.below(100));
  std::size_t elems = cls < 25 ? 1 + r.below(64) : cls < 90 ? 65 + r.below(4096 - 64) : 4097 + r.below(65535 - 4096);
  fuzz::write_prefix(p, r.below(3), r.below(5), false, elems);  // element sizes 1, 2, 4
  return fuzz::parse_prefix(p);
}

// Detector-like frames: mostly zeros with small counts, sometimes dense or full-range (incompressible) values.
std::vector<std::uint8_t> random_frame(const fuzz::FuzzCase& c, Rng& r) {
  const std::size_t es = c.params.elem_size;
  std::vector<std::uint8_t> f(c.frame_elems * es, 0);
  static const unsigned kFill[4] = {1, 10, 50, 100};
  const unsigned fill = kFill[r.below(4)];
  const unsigned kind = unsigned(r.below(4));  // 0: 1-count, 1: small, 2: up to 1000, 3: full range
  for (std::size_t i = 0; i < c.frame_elems; ++i) {
    if (!r.chance(fill)) continue;
    std::uint64_t v = kind == 0 ? 1 : kind == 1 ? 1 + r.below(7) : kind == 2 ? r.below(1000) : r.next();
    for (std::size_t b = 0; b < es; ++b) f[i * es + b] = std::uint8_t(v >> (8 * b));
  }
  return f;
}

// Positions of the block length fields of a valid chunk.
std::vector<std::size_t> block_length_fields(const Input& in) {
  std::vector<std::size_t> at;
  const io::codec::ChunkGeometry g{in.c.params.elem_size, in.c.frame_elems, in.c.params.block_elems};
  std::size_t pos = io::codec::kChunkHeaderBytes;
  for (std::size_t k = 0; k < g.blocks() && pos + 4 <= in.chunk.size(); ++k) {
    at.push_back(pos);
    pos += 4 + io::codec::read_be32(in.chunk.data() + pos);
  }
  return at;
}

void mutate_once(std::vector<std::uint8_t>& b, const std::vector<std::size_t>& len_fields, Rng& r) {
  const std::size_t hdr = io::codec::kChunkHeaderBytes;
  switch (r.below(9)) {
    case 0:  // flip 1 to 8 bits anywhere
    case 1: {
      if (b.empty()) return;
      for (std::uint64_t k = 0, m = 1 + r.below(8); k < m; ++k) b[r.below(b.size())] ^= std::uint8_t(1u << r.below(8));
      return;
    }
    case 2: {  // flip one bit in the block data (past the header)
      if (b.size() <= hdr) return;
      b[hdr + r.below(b.size() - hdr)] ^= std::uint8_t(1u << r.below(8));
      return;
    }
    case 3: b.resize(r.below(b.size() + 1)); return;  // truncate
    case 4: {                                          // extend by 1 to 16 bytes
      for (std::uint64_t k = 0, m = 1 + r.below(16); k < m; ++k) b.push_back(std::uint8_t(r.next()));
      return;
    }
    case 5: {  // edit a block length field
      if (len_fields.empty()) return;
      const std::size_t at = len_fields[r.below(len_fields.size())];
      if (at + 4 > b.size()) return;
      const std::uint32_t len = io::codec::read_be32(b.data() + at);
      const std::uint32_t choices[7] = {0, len - 1, len + 1, std::uint32_t(r.next()), 0xffffffffu,
                                        std::uint32_t(b.size()), len + std::uint32_t(r.below(64))};
      io::codec::write_be32(b.data() + at, choices[r.below(7)]);
      return;
    }
    case 6: {  // edit the header: decoded size or block size
      if (b.size() < hdr) return;
      if (r.chance(50)) {
        const std::uint64_t v = io::codec::read_be64(b.data());
        const std::uint64_t choices[5] = {v + 1, v - 1, 0, r.next(), v * 2};
        io::codec::write_be64(b.data(), choices[r.below(5)]);
      } else {
        const std::uint32_t v = io::codec::read_be32(b.data() + 8);
        const std::uint32_t choices[5] = {v + 8, v - 8, 0, std::uint32_t(r.next()), v * 2};
        io::codec::write_be32(b.data() + 8, choices[r.below(5)]);
      }
      return;
    }
    case 7: {  // overwrite a run of up to 32 bytes with random bytes or zeros
      if (b.empty()) return;
      const std::size_t at = r.below(b.size()), len = std::min<std::size_t>(1 + r.below(32), b.size() - at);
      const bool zero = r.chance(30);
      for (std::size_t k = 0; k < len; ++k) b[at + k] = zero ? 0 : std::uint8_t(r.next());
      return;
    }
    default: {  // insert or delete one byte
      const std::size_t at = r.below(b.size() + 1);
      if (r.chance(50) || b.empty() || at == b.size()) b.insert(b.begin() + std::ptrdiff_t(at), std::uint8_t(r.next()));
      else b.erase(b.begin() + std::ptrdiff_t(at));
      return;
    }
  }
}

// A batch of generated inputs sharing one geometry: a new valid chunk (random frame) every kMutantsPerBase inputs,
// the inputs between are mutants of it (the base itself and 1 in 16 others unmutated).
constexpr std::size_t kMutantsPerBase = 64;

std::vector<Input> generate_batch(Rng& r, std::size_t count, std::uint64_t first_index) {
  Input base;
  base.c = random_geometry(r);
  std::vector<std::uint8_t> frame;
  std::vector<std::size_t> fields;
  std::vector<Input> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const bool new_base = i % kMutantsPerBase == 0;
    if (new_base) {
      frame = random_frame(base.c, r);
      base.chunk = io::codec::encode_chunk(base.c.params, base.c.frame_elems, frame.data());
      fields = block_length_fields(base);
    }
    Input in;
    in.name = "mutant " + std::to_string(first_index + i);
    in.c = base.c;
    in.chunk = base.chunk;
    if (new_base || r.chance(6)) {
      in.valid = true;
      in.expect = frame;
    } else {
      for (std::uint64_t k = 0, m = 1 + (r.chance(25) ? r.below(3) : 0); k < m; ++k) mutate_once(in.chunk, fields, r);
    }
    out.push_back(std::move(in));
  }
  return out;
}

// ---- decoding ----

struct HostResult {
  bool ok = false;
  std::vector<std::uint8_t> frame;
};

std::vector<HostResult> decode_host(const std::vector<Input>& ins, unsigned threads) {
  std::vector<HostResult> res(ins.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < ins.size();) {
      const Input& in = ins[i];
      HostResult& h = res[i];
      h.frame.assign(in.c.frame_elems * in.c.params.elem_size, 0);
      try {
        io::codec::decode_chunk(in.c.params, in.c.frame_elems, in.chunk.data(), in.chunk.size(), h.frame.data());
        h.ok = true;
      } catch (const FormatError&) {
        h.ok = false;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return res;
}

// Every decoder variant runs the batched launch; the chunks alone run with the default variant.
constexpr io::cuda::DecodeVariant kVariants[] = {io::cuda::DecodeVariant::kGlobal, io::cuda::DecodeVariant::kPrefetchL2,
                                                 io::cuda::DecodeVariant::kStageShared};
constexpr std::size_t kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);

struct GpuResult {
  std::vector<unsigned long long> err;  // [n] each chunk decoded alone
  unsigned long long batch_err[kNumVariants] = {};
  std::vector<std::uint8_t> single, batched[kNumVariants];  // n frames each
  // Elements of 2 or 4 bytes: the batch decoded once more as stored big-endian (DecodeGeometry::swap_bytes, the
  // last variant): each frame must be the host's frame with every element's bytes reversed, the error word the
  // same as that variant's.
  bool swapped_run = false;
  unsigned long long swapped_err = 0;
  std::vector<std::uint8_t> swapped;
};

// Decodes the batch (one geometry) on the GPU, each chunk alone and then all in one launch per decoder variant.
GpuResult decode_gpu(const std::vector<Input>& ins) {
  const std::size_t n = ins.size();
  const fuzz::FuzzCase& c = ins.front().c;
  const io::cuda::DecodeGeometry geo{c.params.elem_size, c.frame_elems, c.params.block_elems};
  const std::size_t frame_bytes = c.frame_elems * c.params.elem_size, mb = geo.max_blocks();
  std::vector<std::uint64_t> table(3 * n);
  std::vector<std::uint8_t> comp;
  for (std::size_t i = 0; i < n; ++i) {
    table[i] = comp.size();
    table[n + i] = ins[i].chunk.size();
    table[2 * n + i] = i;
    comp.insert(comp.end(), ins[i].chunk.begin(), ins[i].chunk.end());
  }
  // Exactly the chunk bytes (plus one so that an empty batch still allocates): reads past them are out of bounds
  // for compute-sanitizer.
  const bool swap = c.params.elem_size > 1;
  DeviceBuffer d_comp(comp.size() + 1), d_tab(table.size() * 8), d_single(n * frame_bytes + 1),
      d_batched(kNumVariants * n * frame_bytes + 1), d_swapped(swap ? n * frame_bytes + 1 : 1),
      d_src(n * mb * 8 + 8), d_len(n * mb * 4 + 4), d_err((n + kNumVariants + 1) * 8);
  if (!comp.empty()) d_comp.upload(comp.data(), comp.size());
  d_tab.upload(table.data(), table.size() * 8);
  QGPU_CUDA(cudaMemset(d_single.data(), 0xa5, d_single.bytes()));
  QGPU_CUDA(cudaMemset(d_batched.data(), 0xa5, d_batched.bytes()));
  QGPU_CUDA(cudaMemset(d_swapped.data(), 0xa5, d_swapped.bytes()));
  QGPU_CUDA(cudaMemset(d_err.data(), 0xff, d_err.bytes()));
  const auto* t = d_tab.as<std::uint64_t>();
  auto* err = d_err.as<unsigned long long>();
  for (std::size_t i = 0; i < n; ++i) {
    const io::cuda::DecodeBatch one{d_comp.as<std::uint8_t>(), t + i, t + n + i, t + 2 * n + i, 1, i};
    const io::cuda::DecodeScratch s{d_src.as<std::uint64_t>() + i * mb, d_len.as<std::uint32_t>() + i * mb, mb};
    io::cuda::decode_bitshuffle_lz4(one, geo, d_single.data(), s, err + i, nullptr);
  }
  const io::cuda::DecodeBatch all{d_comp.as<std::uint8_t>(), t, t + n, t + 2 * n, n, 0};
  const io::cuda::DecodeScratch s{d_src.as<std::uint64_t>(), d_len.as<std::uint32_t>(), n * mb};
  for (std::size_t v = 0; v < kNumVariants; ++v)
    io::cuda::decode_bitshuffle_lz4(all, geo, d_batched.as<std::uint8_t>() + v * n * frame_bytes, s, err + n + v,
                                    nullptr, kVariants[v]);
  if (swap) {
    io::cuda::DecodeGeometry big = geo;
    big.swap_bytes = true;
    io::cuda::decode_bitshuffle_lz4(all, big, d_swapped.data(), s, err + n + kNumVariants, nullptr,
                                    kVariants[kNumVariants - 1]);
  }
  QGPU_CUDA(cudaDeviceSynchronize());
  GpuResult g;
  std::vector<unsigned long long> words(n + kNumVariants + 1);
  d_err.download(words.data(), words.size() * 8);
  g.err.assign(words.begin(), words.begin() + std::ptrdiff_t(n));
  g.single.resize(n * frame_bytes);
  std::vector<std::uint8_t> batched(kNumVariants * n * frame_bytes);
  if (!g.single.empty()) {
    d_single.download(g.single.data(), g.single.size());
    d_batched.download(batched.data(), batched.size());
  }
  for (std::size_t v = 0; v < kNumVariants; ++v) {
    g.batch_err[v] = words[n + v];
    g.batched[v].assign(batched.begin() + std::ptrdiff_t(v * n * frame_bytes),
                        batched.begin() + std::ptrdiff_t((v + 1) * n * frame_bytes));
  }
  if (swap) {
    g.swapped_run = true;
    g.swapped_err = words[n + kNumVariants];
    g.swapped.resize(n * frame_bytes);
    if (!g.swapped.empty()) d_swapped.download(g.swapped.data(), g.swapped.size());
  }
  return g;
}

// Reports a disagreement (the first 50 on stderr) and saves the input (the first 10000).
void save(const Options& o, const Input& in, const char* why) {
  static std::uint64_t k = 0;
  if (k >= 10000) return;
  if (k < 50)
    std::fprintf(stderr, "DISAGREE %s: %s (elem %zu, block %zu, frame %zu elems, chunk %zu bytes)\n",
                 in.name.c_str(), why, in.c.params.elem_size, in.c.params.block_elems, in.c.frame_elems,
                 in.chunk.size());
  if (o.save_dir.empty()) {
    ++k;
    return;
  }
  const std::string path = o.save_dir + "/disagree_" + std::to_string(k++);
  const auto b = as_fuzz_input(in);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (k <= 50) std::fprintf(stderr, "  saved as %s\n", path.c_str());
}

// Runs one batch of GPU-decodable inputs sharing a geometry and adds up the outcomes.
void run_batch(const Options& o, const std::vector<Input>& ins, Counts& n) {
  if (ins.empty()) return;
  const std::vector<HostResult> host = decode_host(ins, o.threads);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    (host[i].ok ? n.host_ok : n.host_fail)++;
    if (ins[i].valid) {
      ++n.valid_checked;
      if (!host[i].ok || host[i].frame != ins[i].expect) {
        ++n.valid_wrong;
        std::fprintf(stderr, "HOST DECODER WRONG on unmutated %s\n", ins[i].name.c_str());
      }
    }
  }
  if (o.host_only) return;
  const GpuResult g = decode_gpu(ins);
  ++n.gpu_batches;
  const std::size_t fb = ins.front().c.frame_elems * ins.front().c.params.elem_size;
  std::size_t first_fail = ins.size();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const bool gpu_ok = g.err[i] == kNoError;
    (gpu_ok ? n.gpu_ok : n.gpu_fail)++;
    if (!gpu_ok) {
      const unsigned code = unsigned(g.err[i] & 0xff);
      n.gpu_code[code >= 1 && code <= 5 ? code : 0]++;
      if ((g.err[i] >> 8) != i) ++n.wrong_chunk_id, save(o, ins[i], "GPU error word names another chunk");
      first_fail = std::min(first_fail, i);
    }
    const auto* gs = g.single.data() + i * fb;
    if (host[i].ok && gpu_ok) {
      if (std::memcmp(gs, host[i].frame.data(), fb) == 0) ++n.both_ok;
      else ++n.bytes_differ, save(o, ins[i], "both decode, bytes differ");
    } else if (!host[i].ok && !gpu_ok) {
      ++n.both_fail;
    } else if (host[i].ok) {
      ++n.host_ok_gpu_fail, save(o, ins[i], ("host decodes, GPU fails: " + io::cuda::describe_decode_error(g.err[i])).c_str());
    } else {
      ++n.host_fail_gpu_ok, save(o, ins[i], "host fails, GPU decodes");
    }
    for (std::size_t v = 0; v < kNumVariants; ++v)
      if (gpu_ok && std::memcmp(gs, g.batched[v].data() + i * fb, fb) != 0)
        ++n.batch_differs, save(o, ins[i], (std::string("batched launch (decoder variant ") +
                                            io::cuda::decode_variant_name(kVariants[v]) +
                                            ") decodes other bytes than the chunk alone").c_str());
    if (g.swapped_run && host[i].ok && gpu_ok) {  // the big-endian decode: the host's frame, each element reversed
      std::vector<std::uint8_t> want = host[i].frame;
      io::codec::swap_element_bytes(want.data(), ins[i].c.frame_elems, ins[i].c.params.elem_size);
      ++n.swapped_checked;
      if (std::memcmp(g.swapped.data() + i * fb, want.data(), fb) != 0)
        ++n.batch_differs, save(o, ins[i], "big-endian launch (swap_bytes) differs from the host frame byte-swapped");
    }
  }
  if (g.swapped_run && g.swapped_err != g.batch_err[kNumVariants - 1]) {  // the same default variant
    ++n.batch_differs;
    std::fprintf(stderr, "DISAGREE batch of %s..: big-endian launch error word %llx, little-endian %llx\n",
                 ins.front().name.c_str(), g.swapped_err, g.batch_err[kNumVariants - 1]);
  }
  const unsigned long long expect = first_fail == ins.size() ? kNoError : g.err[first_fail];
  for (std::size_t v = 0; v < kNumVariants; ++v) {
    const unsigned long long got = g.batch_err[v];
    if ((got == kNoError) != (expect == kNoError) || (expect != kNoError && (got >> 8) != first_fail)) {
      ++n.batch_differs;
      std::fprintf(stderr,
                   "DISAGREE batch of %s.. (decoder variant %s): batched error word %llx, the chunks alone give first "
                   "failure %llx\n",
                   ins.front().name.c_str(), io::cuda::decode_variant_name(kVariants[v]), got, expect);
    }
  }
}

// Splits GPU-decodable inputs into batches of one geometry and at most o.batch chunks / 1 GiB of frames.
void run_grouped(const Options& o, std::vector<Input>& ins, Counts& n) {
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::vector<Input>> groups;
  for (Input& in : ins) {
    if (!gpu_takes(in, n)) continue;
    n.geometries.insert({in.c.params.elem_size, in.c.params.block_elems, in.c.frame_elems});
    n.min_frame = std::min(n.min_frame, in.c.frame_elems);
    n.max_frame = std::max(n.max_frame, in.c.frame_elems);
    groups[{in.c.params.elem_size, in.c.params.block_elems, in.c.frame_elems}].push_back(std::move(in));
  }
  for (auto& [key, list] : groups) {
    const std::size_t fb = std::max<std::size_t>(1, std::get<0>(key) * std::get<2>(key));
    const std::size_t per = std::max<std::size_t>(1, std::min(o.batch, (std::size_t(1) << 30) / fb));
    for (std::size_t at = 0; at < list.size(); at += per) {
      std::vector<Input> b(std::make_move_iterator(list.begin() + std::ptrdiff_t(at)),
                           std::make_move_iterator(list.begin() + std::ptrdiff_t(std::min(list.size(), at + per))));
      run_batch(o, b, n);
    }
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: replay_cuda_decoder [--host-only] [--batch N] [--save DIR] [--threads N] PATH...\n"
               "       replay_cuda_decoder [--host-only] [--batch N] [--save DIR] [--threads N] --mutate N [--seed S]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&] {
        if (i + 1 >= argc) throw InvalidArgument(a + " needs a value");
        return std::string(argv[++i]);
      };
      if (a == "--host-only") o.host_only = true;
      else if (a == "--batch") o.batch = std::max<std::size_t>(1, std::stoull(value()));
      else if (a == "--mutate") o.mutate = std::stoull(value());
      else if (a == "--seed") o.seed = std::stoull(value());
      else if (a == "--save") o.save_dir = value();
      else if (a == "--threads") o.threads = unsigned(std::stoul(value()));
      else if (a.rfind("--", 0) == 0) throw InvalidArgument("unknown option " + a);
      else o.paths.push_back(a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_cuda_decoder: %s\n", e.what());
    return usage();
  }
  if (o.paths.empty() == (o.mutate == 0)) return usage();
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  if (!o.save_dir.empty()) fs::create_directories(o.save_dir);
  if (!o.host_only) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::fprintf(stderr, "replay_cuda_decoder: no CUDA device here (--host-only runs the host half)\n");
      return 77;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  Counts n;
  try {
    if (o.mutate) {
      Rng r{o.seed};
      for (std::uint64_t done = 0; done < o.mutate;) {
        const std::size_t count = std::size_t(std::min<std::uint64_t>(o.batch, o.mutate - done));
        std::vector<Input> b = generate_batch(r, count, done);
        n.inputs += count;
        run_grouped(o, b, n);
        done += count;
      }
    } else {
      std::vector<Input> ins = read_inputs(o.paths, n);
      run_grouped(o, ins, n);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_cuda_decoder: error: %s\n", e.what());
    return 2;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("replay_cuda_decoder: %s, %.1f s\n",
              o.mutate ? ("mutate " + std::to_string(o.mutate) + " seed " + std::to_string(o.seed)).c_str()
                       : (std::to_string(o.paths.size()) + " path(s)").c_str(),
              s);
  std::printf("inputs %llu; skipped: short %llu, zstd %llu, 8-byte elements %llu, blocks > 16 KiB %llu\n",
              (unsigned long long)n.inputs, (unsigned long long)n.skip_short, (unsigned long long)n.skip_zstd,
              (unsigned long long)n.skip_elem8, (unsigned long long)n.skip_block);
  if (!n.geometries.empty())
    std::printf("geometries %zu (element size, block, frame size); frames of %zu to %zu elements\n",
                n.geometries.size(), n.min_frame, n.max_frame);
  std::printf("host: decoded %llu, failed %llu; unmutated generated chunks exact %llu of %llu\n",
              (unsigned long long)n.host_ok, (unsigned long long)n.host_fail,
              (unsigned long long)(n.valid_checked - n.valid_wrong), (unsigned long long)n.valid_checked);
  if (!o.host_only) {
    std::printf("gpu: decoded %llu, failed %llu (header size %llu, header block %llu, block bounds %llu, trailing "
                "%llu, lz4 %llu, other %llu) in %llu batches\n",
                (unsigned long long)n.gpu_ok, (unsigned long long)n.gpu_fail, (unsigned long long)n.gpu_code[1],
                (unsigned long long)n.gpu_code[2], (unsigned long long)n.gpu_code[3], (unsigned long long)n.gpu_code[4],
                (unsigned long long)n.gpu_code[5], (unsigned long long)n.gpu_code[0],
                (unsigned long long)n.gpu_batches);
    std::printf("big-endian: %llu decoded frames of 2- and 4-byte elements also decoded with swap_bytes and compared "
                "with the host frame byte-swapped (differences count as batch disagreements)\n",
                (unsigned long long)n.swapped_checked);
    std::printf("agree: both decoded identical bytes %llu, both failed %llu\n", (unsigned long long)n.both_ok,
                (unsigned long long)n.both_fail);
    std::printf("disagreements %llu: host decodes/GPU fails %llu, host fails/GPU decodes %llu, bytes differ %llu, "
                "batched launch differs %llu, error word names another chunk %llu\n",
                (unsigned long long)n.disagreements(), (unsigned long long)n.host_ok_gpu_fail,
                (unsigned long long)n.host_fail_gpu_ok, (unsigned long long)n.bytes_differ,
                (unsigned long long)n.batch_differs, (unsigned long long)n.wrong_chunk_id);
  }
  return n.disagreements() || n.valid_wrong ? 1 : 0;
}
