#include "io/hdf5/file_info_wire.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"

namespace qgpu::io {

namespace {

using nlohmann::json;

constexpr int kVersion = 2;

// The raw sections after the CBOR part, in order: every chunk table's locations, the bad pixels (4 bytes each), the
// sparse positions (8 bytes each); the CBOR part holds their counts (and each table's block bytes).
// A chunk location is three LEB128 varints: its offset's distance from where the previous chunk of its block ended
// (zigzag: it may lie before), its size, its filter mask. Chunks written in order one after another take 3 or 4
// bytes each, not the 20 they hold.

std::uint64_t zigzag(std::uint64_t delta) {
  const std::int64_t d = std::int64_t(delta);  // modular (C++20)
  return (std::uint64_t(d) << 1) ^ std::uint64_t(d >> 63);
}

std::uint64_t unzigzag(std::uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

// The chunk locations go in blocks of kBlockChunks (the last shorter), each block's first offset taken from 0 rather
// than from the previous chunk's end, so that the blocks are written and read on every core; the CBOR part holds each
// block's bytes.
constexpr std::size_t kBlockChunks = std::size_t{1} << 16;
constexpr std::size_t kMaxVarint = 10;  // bytes of a 64-bit LEB128 number

// The chunk locations coded block by block on every core (joined into the result by encode_file_info).
std::vector<std::string> code_chunks(const ChunkLocations& chunks) {
  const std::size_t blocks = (chunks.size() + kBlockChunks - 1) / kBlockChunks;
  std::vector<std::string> coded(blocks);
  parallel_for(blocks, [&](std::size_t b) {
    const std::size_t c0 = b * kBlockChunks, c1 = std::min(chunks.size(), c0 + kBlockChunks);
    thread_local std::vector<std::uint8_t> buffer;  // one per thread, for the blocks it codes
    buffer.resize(std::max(buffer.size(), (c1 - c0) * 3 * kMaxVarint));
    std::uint8_t* p = buffer.data();
    auto put = [&p](std::uint64_t v) {
      while (v >= 0x80) {
        *p++ = std::uint8_t(v) | 0x80;
        v >>= 7;
      }
      *p++ = std::uint8_t(v);
    };
    std::uint64_t end = 0;  // where the previous chunk ended (unsigned arithmetic wraps: both sides agree)
    for (std::size_t c = c0; c < c1; ++c) {
      put(zigzag(chunks[c].offset - end));
      put(chunks[c].size);
      put(chunks[c].filter_mask);
      end = chunks[c].offset + chunks[c].size;
    }
    coded[b].assign(reinterpret_cast<const char*>(buffer.data()), std::size_t(p - buffer.data()));
  });
  return coded;
}

json chunk_table_json(const std::shared_ptr<const ChunkTable>& t, const std::vector<std::uint64_t>& block_bytes) {
  if (!t) return json();
  return {{"file", t->file}, {"dataset_path", t->dataset_path}, {"dims", t->dims}, {"chunk_dims", t->chunk_dims},
          {"chunks", t->chunks.size()}, {"block_bytes", block_bytes}, {"method", t->method}};
}

// The raw sections, read in order with checked sizes.
struct Raw {
  std::string_view bytes;
  std::string where;
  const char* take(std::uint64_t count, std::size_t elem, const std::string& what) {
    const std::uint64_t n = checked_mul(count, std::uint64_t(elem), where + what + " bytes");
    if (n > bytes.size())
      throw Error(where + what + " needs " + std::to_string(n) + " bytes but " + std::to_string(bytes.size()) +
                  " are left (short)");
    const char* p = bytes.data();
    bytes.remove_prefix(std::size_t(n));
    return p;
  }
};

// Reads fields of one object, every failure an Error naming the field.
struct Fields {
  const json& j;
  std::string where;  // "malformed FileInfo from the child process parsing '<file>': " + path of the object

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw Error(where + (key.empty() ? "" : "." + key) + " " + why);
  }
  const json& at(const std::string& key) const {
    if (!j.is_object()) fail("", "is not an object");
    const auto it = j.find(key);
    if (it == j.end()) fail(key, "is missing");
    return *it;
  }
  std::string str(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "is not a string");
    return v.get<std::string>();
  }
  std::uint64_t u64(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_unsigned()) fail(key, "is not an unsigned integer");
    return v.get<std::uint64_t>();
  }
  std::size_t size(const std::string& key) const {
    const std::uint64_t v = u64(key);
    if (v > std::uint64_t(SIZE_MAX)) fail(key, "does not fit a size");
    return std::size_t(v);
  }
  long long i64(const std::string& key) const {
    const json& v = at(key);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= std::uint64_t(INT64_MAX)) return v.get<long long>();
    if (!v.is_number_integer() || v.is_number_unsigned()) fail(key, "is not an integer");
    return v.get<long long>();
  }
  int i32(const std::string& key) const {
    const long long v = i64(key);
    if (v < INT32_MIN || v > INT32_MAX) fail(key, "does not fit an int");
    return int(v);
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "is not a boolean");
    return v.get<bool>();
  }
  double number(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_float()) fail(key, "is not a float");
    return v.get<double>();
  }
  const json& array(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "is not an array");
    return v;
  }
  const json& object(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_object()) fail(key, "is not an object");
    return v;
  }
  std::vector<std::string> strings(const std::string& key) const {
    std::vector<std::string> out;
    for (const json& v : array(key)) {
      if (!v.is_string()) fail(key, "holds a value that is not a string");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  template <class T> std::vector<T> unsigneds(const std::string& key) const {
    std::vector<T> out;
    for (const json& v : array(key)) {
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<T>::max()))
        fail(key, "holds a value that is not an unsigned integer of its size");
      out.push_back(T(v.get<std::uint64_t>()));
    }
    return out;
  }
  Fields sub(const json& v, const std::string& name) const { return {v, where + "." + name}; }
};

DType dtype_field(const Fields& f, const std::string& key) {
  const std::string name = f.str(key);
  try {
    return dtype_from_name(name);
  } catch (const Error&) {
    f.fail(key, "names no dtype ('" + name + "')");
  }
}

std::shared_ptr<const ChunkTable> chunk_table_of(const Fields& f, Raw& raw) {
  if (f.j.is_null()) return nullptr;
  auto t = std::make_shared<ChunkTable>();
  t->file = f.str("file");
  t->dataset_path = f.str("dataset_path");
  t->dims = f.unsigneds<std::uint64_t>("dims");
  t->chunk_dims = f.unsigneds<std::uint64_t>("chunk_dims");
  t->method = f.str("method");
  if (t->dims.size() != t->chunk_dims.size())
    f.fail("chunk_dims", "has rank " + std::to_string(t->chunk_dims.size()) + " but dims rank " +
                             std::to_string(t->dims.size()));
  std::uint64_t grid = 1;
  for (std::size_t d = 0; d < t->dims.size(); ++d) {
    if (t->chunk_dims[d] == 0) f.fail("chunk_dims", "holds a zero extent");
    grid = checked_mul(grid, t->dims[d] / t->chunk_dims[d] + (t->dims[d] % t->chunk_dims[d] != 0),
                       f.where + " chunk grid");
  }
  const std::uint64_t n = f.u64("chunks");
  if (n != grid)
    f.fail("chunks", "holds " + std::to_string(n) + " chunk locations but the chunk grid has " + std::to_string(grid));
  const std::vector<std::uint64_t> block_bytes = f.unsigneds<std::uint64_t>("block_bytes");
  const std::uint64_t blocks = n / kBlockChunks + (n % kBlockChunks != 0);
  if (block_bytes.size() != blocks)
    f.fail("block_bytes", "holds " + std::to_string(block_bytes.size()) + " blocks for " + std::to_string(n) +
                              " chunks (" + std::to_string(blocks) + " blocks of " + std::to_string(kBlockChunks) + ")");
  std::vector<std::uint64_t> at(block_bytes.size() + 1, 0);
  for (std::size_t b = 0; b < block_bytes.size(); ++b) {
    const std::uint64_t chunks = std::min<std::uint64_t>(kBlockChunks, n - b * kBlockChunks);
    if (block_bytes[b] < 3 * chunks || block_bytes[b] > 3 * kMaxVarint * chunks)
      f.fail("block_bytes", "gives block " + std::to_string(b) + " of " + std::to_string(chunks) + " locations " +
                                std::to_string(block_bytes[b]) + " bytes (3 to " + std::to_string(3 * kMaxVarint) +
                                " each)");
    at[b + 1] = checked_add(at[b], block_bytes[b], f.where + " chunk location bytes");
  }
  const std::string what = "chunk locations of " + t->dataset_path;
  const auto* base = reinterpret_cast<const std::uint8_t*>(raw.take(at.back(), 1, what));
  t->chunks.resize(std::size_t(n));
  advise_huge_pages(t->chunks.data(), t->chunks.size() * sizeof(ChunkLocation));  // 512x fewer faults
  parallel_for_first_error(
      block_bytes.size(),
      [&](std::size_t b) {
        const std::uint8_t* p = base + at[b];
        const std::uint8_t* const stop = base + at[b + 1];
        const std::string in_block = " in block " + std::to_string(b);
        auto varint = [&]() {
          std::uint64_t v = 0;
          for (int shift = 0;; shift += 7) {
            if (p == stop) throw Error(raw.where + what + " end inside a location" + in_block + " (short)");
            const std::uint8_t byte = *p++;
            if (shift == 63 && byte > 1) throw Error(raw.where + what + " hold a number beyond 64 bits" + in_block);
            v |= std::uint64_t(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return v;
            if (shift == 63) throw Error(raw.where + what + " hold a number beyond 64 bits" + in_block);
          }
        };
        std::uint64_t end = 0;
        const std::size_t c0 = b * kBlockChunks, c1 = std::min(std::size_t(n), c0 + kBlockChunks);
        for (std::size_t k = c0; k < c1; ++k) {
          ChunkLocation& c = t->chunks[k];
          c.offset = end + unzigzag(varint());
          c.size = varint();
          const std::uint64_t mask = varint();
          if (mask > UINT32_MAX) throw Error(raw.where + what + " hold a filter mask beyond 32 bits" + in_block);
          c.filter_mask = std::uint32_t(mask);
          end = c.offset + c.size;
        }
        if (p != stop)
          throw Error(raw.where + what + ": " + std::to_string(stop - p) + " bytes follow the last of the " +
                      std::to_string(c1 - c0) + " locations of block " + std::to_string(b));
      },
      64);
  return t;
}

}  // namespace

std::string encode_file_info(const FileInfo& i) {
  if (i.codec.kind == FrameCodecKind::merlin)
    throw Error("FileInfo of '" + i.path + "' has a Merlin codec, which the child's report does not carry");
  json filters = json::array();
  for (const FilterInfo& fi : i.filters) filters.push_back({{"id", fi.id}, {"name", fi.name}, {"cd_values", fi.cd_values}});
  json parts = json::array();
  for (const SourcePart& p : i.parts)
    parts.push_back({{"file", p.file}, {"dataset_path", p.dataset_path}, {"first_frame", p.first_frame},
                     {"frames", p.frames}});
  std::vector<const std::string*> blocks;  // every table's coded locations, in order
  std::vector<std::vector<std::string>> coded;
  coded.reserve(i.part_tables.size());
  json tables = json::array();
  for (const auto& t : i.part_tables) {
    std::vector<std::uint64_t> block_bytes;
    if (t) {
      coded.push_back(code_chunks(t->chunks));
      for (const std::string& c : coded.back()) {
        block_bytes.push_back(c.size());
        blocks.push_back(&c);
      }
    }
    tables.push_back(chunk_table_json(t, block_bytes));
  }
  json runs = json::array();
  for (const RecordRun& r : i.records.runs)
    runs.push_back({r.file, r.first_frame, r.frames, r.offset, r.stride, r.bytes});
  const SparseSource& s = i.sparse;
  const json sparse = {{"kind", s.kind},
                       {"frames_dataset", s.frames_dataset},
                       {"positions_dataset", s.positions_dataset},
                       {"version", s.version},
                       {"stored_frames", s.stored_frames},
                       {"frames_per_position", s.frames_per_position},
                       {"indptr_file", s.indptr_file},
                       {"indices_file", s.indices_file},
                       {"values_file", s.values_file},
                       {"indptr_dtype", s.indptr_dtype},
                       {"indices_dtype", s.indices_dtype},
                       {"values_dtype", s.values_dtype},
                       {"rows", s.rows},
                       {"nnz", s.nnz},
                       {"positions", s.positions.size()}};
  const json j = {
      {"version", kVersion},
      {"path", i.path},
      {"reader", i.reader},
      {"codec", int(i.codec.kind)},
      {"records", {{"files", i.records.files}, {"runs", runs}}},
      {"sparse", sparse},
      {"transposed",
       {{"present", i.transposed.present}, {"offset", i.transposed.offset},
        {"scan_rows_fastest", i.transposed.scan_rows_fastest}, {"det_rows_fastest", i.transposed.det_rows_fastest}}},
      {"warnings", i.warnings},
      {"metadata", i.metadata},
      {"dataset_path", i.dataset_path},
      {"source_kind", i.source_kind},
      {"dtype", dtype_name(i.dtype)},
      {"stored_as", i.stored_as ? json(dtype_name(*i.stored_as)) : json()},
      {"byte_order", i.byte_order},
      {"precision", i.precision},
      {"bit_offset", i.bit_offset},
      {"dims", i.dims},
      {"chunk_dims", i.chunk_dims},
      {"filters", filters},
      {"shape", i.shape.dims()},
      {"scan_shape_source", i.scan_shape_source},
      {"frames", i.frames},
      {"scan_shape_known", i.scan_shape_known},
      {"scan_shape_needed", i.scan_shape_needed},
      {"ntrigger", i.ntrigger},
      {"nimages", i.nimages},
      {"has_pixel_mask", i.has_pixel_mask},
      {"bad_pixels", i.bad_pixels.size()},
      {"one_frame_per_chunk", i.one_frame_per_chunk},
      {"bitshuffle_lz4", i.bitshuffle_lz4},
      {"bitshuffle_block_elems", i.bitshuffle_block_elems},
      {"chunks_expected", i.chunks_expected},
      {"chunks_written", i.chunks_written},
      {"ready", i.ready},
      {"index_error", i.index_error},
      {"calibration", i.calibration},
      {"calibration_detail", i.calibration_detail},
      {"metadata_warnings", i.metadata_warnings},
      {"sidecar", i.sidecar},
      {"parts", parts},
      {"part_tables", tables},
      {"index_seconds", i.index_seconds}};
  std::string out(8, '\0');  // the CBOR part's length, then the CBOR part, then the raw sections
  json::to_cbor(j, out);
  const std::uint64_t cbor = out.size() - 8;
  std::memcpy(out.data(), &cbor, 8);
  // The raw sections: sized once, the coded blocks copied in on every core (67 MB at 4096x4096).
  std::vector<std::size_t> at(blocks.size() + 1, out.size());
  for (std::size_t b = 0; b < blocks.size(); ++b) at[b + 1] = at[b] + blocks[b]->size();
  const std::size_t bad = i.bad_pixels.size() * sizeof(std::uint32_t);
  out.resize(at.back() + bad + s.positions.size() * sizeof(std::uint64_t));
  parallel_for(blocks.size(), [&](std::size_t b) { std::memcpy(out.data() + at[b], blocks[b]->data(), blocks[b]->size()); });
  if (bad) std::memcpy(out.data() + at.back(), i.bad_pixels.data(), bad);
  if (!s.positions.empty())
    std::memcpy(out.data() + at.back() + bad, s.positions.data(), s.positions.size() * sizeof(std::uint64_t));
  return out;
}

FileInfo decode_file_info(std::string_view bytes, const std::string& file) {
  const std::string where = "malformed FileInfo from the child process parsing '" + file + "': ";
  if (bytes.size() < 8) throw Error(where + std::to_string(bytes.size()) + " bytes, short of its 8-byte header");
  std::uint64_t cbor = 0;
  std::memcpy(&cbor, bytes.data(), 8);
  if (cbor > bytes.size() - 8)
    throw Error(where + "its header announces " + std::to_string(cbor) + " bytes of fields but " +
                std::to_string(bytes.size() - 8) + " follow (short)");
  json j;
  try {
    j = json::from_cbor(bytes.substr(8, std::size_t(cbor)).begin(), bytes.substr(8, std::size_t(cbor)).end());
  } catch (const json::exception& e) {
    throw Error(where + e.what());
  }
  Raw raw{bytes.substr(8 + std::size_t(cbor)), where};
  const Fields f{j, where + "FileInfo"};
  if (f.i64("version") != kVersion) f.fail("version", "is " + std::to_string(f.i64("version")) + ", not " +
                                                          std::to_string(kVersion));
  FileInfo i;
  i.path = f.str("path");
  i.reader = f.str("reader");
  const std::uint64_t codec = f.u64("codec");
  if (codec != std::uint64_t(FrameCodecKind::bitshuffle) && codec != std::uint64_t(FrameCodecKind::plain))
    f.fail("codec", "is " + std::to_string(codec) + ", no codec of the HDF5 reader");
  i.codec.kind = FrameCodecKind(codec);

  const Fields rec = f.sub(f.object("records"), "records");
  i.records.files = rec.strings("files");
  for (const json& r : rec.array("runs")) {
    const Fields rf = rec.sub(r, "runs[]");
    if (!r.is_array() || r.size() != 6) rf.fail("", "is not an array of 6 values");
    std::uint64_t v[6];
    for (std::size_t k = 0; k < 6; ++k) {
      if (!r[k].is_number_unsigned()) rf.fail("", "holds a value that is not an unsigned integer");
      v[k] = r[k].get<std::uint64_t>();
    }
    if (v[0] >= i.records.files.size() || v[0] > UINT32_MAX)
      rf.fail("", "names file " + std::to_string(v[0]) + " of " + std::to_string(i.records.files.size()));
    i.records.runs.push_back({std::uint32_t(v[0]), v[1], v[2], v[3], v[4], v[5]});
  }

  const Fields sp = f.sub(f.object("sparse"), "sparse");
  SparseSource& s = i.sparse;
  s.kind = sp.str("kind");
  s.frames_dataset = sp.str("frames_dataset");
  s.positions_dataset = sp.str("positions_dataset");
  s.version = sp.i32("version");
  s.stored_frames = sp.u64("stored_frames");
  s.frames_per_position = sp.u64("frames_per_position");
  s.indptr_file = sp.str("indptr_file");
  s.indices_file = sp.str("indices_file");
  s.values_file = sp.str("values_file");
  s.indptr_dtype = sp.str("indptr_dtype");
  s.indices_dtype = sp.str("indices_dtype");
  s.values_dtype = sp.str("values_dtype");
  s.rows = sp.u64("rows");
  s.nnz = sp.u64("nnz");
  const std::uint64_t positions = sp.u64("positions");  // read after the chunk tables and bad pixels, below

  const Fields tr = f.sub(f.object("transposed"), "transposed");
  i.transposed.present = tr.boolean("present");
  i.transposed.offset = tr.u64("offset");
  i.transposed.scan_rows_fastest = tr.boolean("scan_rows_fastest");
  i.transposed.det_rows_fastest = tr.boolean("det_rows_fastest");

  i.warnings = f.strings("warnings");
  i.metadata = f.object("metadata");
  i.dataset_path = f.str("dataset_path");
  i.source_kind = f.str("source_kind");
  i.dtype = dtype_field(f, "dtype");
  if (!f.at("stored_as").is_null()) i.stored_as = dtype_field(f, "stored_as");
  i.byte_order = f.str("byte_order");
  if (i.byte_order != "little" && i.byte_order != "big") f.fail("byte_order", "is '" + i.byte_order + "'");
  i.precision = f.size("precision");
  i.bit_offset = f.size("bit_offset");
  i.dims = f.unsigneds<std::size_t>("dims");
  i.chunk_dims = f.unsigneds<std::size_t>("chunk_dims");
  for (const json& v : f.array("filters")) {
    const Fields ff = f.sub(v, "filters[]");
    FilterInfo fi;
    fi.id = ff.i32("id");
    fi.name = ff.str("name");
    fi.cd_values = ff.unsigneds<unsigned>("cd_values");
    i.filters.push_back(std::move(fi));
  }
  const std::vector<std::size_t> shape = f.unsigneds<std::size_t>("shape");
  if (shape.size() != 4) f.fail("shape", "has " + std::to_string(shape.size()) + " extents, not 4");
  i.shape = {shape[0], shape[1], shape[2], shape[3]};
  i.scan_shape_source = f.str("scan_shape_source");
  i.frames = f.u64("frames");
  i.scan_shape_known = f.boolean("scan_shape_known");
  i.scan_shape_needed = f.str("scan_shape_needed");
  i.ntrigger = f.i64("ntrigger");
  i.nimages = f.i64("nimages");
  i.has_pixel_mask = f.boolean("has_pixel_mask");
  const std::uint64_t bad_pixels = f.u64("bad_pixels");  // read after the chunk tables, below
  i.one_frame_per_chunk = f.boolean("one_frame_per_chunk");
  i.bitshuffle_lz4 = f.boolean("bitshuffle_lz4");
  i.bitshuffle_block_elems = f.size("bitshuffle_block_elems");
  i.chunks_expected = f.size("chunks_expected");
  i.chunks_written = f.size("chunks_written");
  i.ready = f.boolean("ready");
  i.index_error = f.str("index_error");
  i.calibration = f.object("calibration");
  i.calibration_detail = f.object("calibration_detail");
  i.metadata_warnings = f.strings("metadata_warnings");
  i.sidecar = f.str("sidecar");
  for (const json& v : f.array("parts")) {
    const Fields pf = f.sub(v, "parts[]");
    i.parts.push_back({pf.str("file"), pf.str("dataset_path"), pf.u64("first_frame"), pf.u64("frames")});
  }
  const json& tables = f.array("part_tables");
  if (tables.size() != i.parts.size())
    f.fail("part_tables", "holds " + std::to_string(tables.size()) + " tables for " + std::to_string(i.parts.size()) +
                              " parts");
  for (const json& t : tables) i.part_tables.push_back(chunk_table_of(f.sub(t, "part_tables[]"), raw));
  const char* bad = raw.take(bad_pixels, sizeof(std::uint32_t), "bad pixels");
  i.bad_pixels.resize(std::size_t(bad_pixels));
  if (bad_pixels) std::memcpy(i.bad_pixels.data(), bad, i.bad_pixels.size() * sizeof(std::uint32_t));
  const char* pos = raw.take(positions, sizeof(std::uint64_t), "sparse positions");
  s.positions.resize(std::size_t(positions));
  if (positions) std::memcpy(s.positions.data(), pos, s.positions.size() * sizeof(std::uint64_t));
  if (!raw.bytes.empty())
    throw Error(where + std::to_string(raw.bytes.size()) + " bytes follow the last section");
  i.index_seconds = f.number("index_seconds");
  return i;
}

}  // namespace qgpu::io
