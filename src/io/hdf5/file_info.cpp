#include "io/hdf5/file_info.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <list>
#include <mutex>
#include <memory>
#include <optional>
#include <utility>

#include <unistd.h>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/emd/h5_layouts.hpp"
#include "io/hdf5/acquisition.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/instrument_metadata.hpp"
#include "io/hdf5/file_info_wire.hpp"
#include "io/hdf5/isolated_parse.hpp"
#include "io/hdf5/pixel_mask.hpp"
#include "io/hdf5/scan_shape.hpp"

namespace qgpu::io {

std::size_t bitshuffle_default_block(std::size_t elem_size) {
  std::size_t b = 8192 / elem_size / 8 * 8;
  return b < 128 ? 128 : b;
}

namespace {

// Names from a file or the file system are bytes; JSON text must be UTF-8. Invalid sequences become U+FFFD, so that
// dumping the metadata (qgpu info --json, provenance) never throws on a hostile name (found by fuzz_inspect).
std::string valid_utf8(const std::string& s) {
  const std::string quoted = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace

nlohmann::json FileInfo::to_json() const {
  nlohmann::json f = nlohmann::json::array();
  for (const FilterInfo& fi : filters) f.push_back({{"id", fi.id}, {"name", fi.name}, {"cd_values", fi.cd_values}});
  nlohmann::json parts_json = nlohmann::json::array();
  for (const SourcePart& p : parts)
    parts_json.push_back(
        {{"file", valid_utf8(p.file)}, {"dataset_path", valid_utf8(p.dataset_path)}, {"first_frame", p.first_frame},
         {"frames", p.frames}});
  nlohmann::json warnings_json = nlohmann::json::array();
  for (const std::string& w : warnings) warnings_json.push_back(valid_utf8(w));
  const std::size_t rank = dims.size();
  const std::vector<std::size_t> detector =
      rank >= 2 ? std::vector<std::size_t>{dims[rank - 2], dims[rank - 1]} : std::vector<std::size_t>{};
  nlohmann::json j = {{"path", valid_utf8(path)},
          {"reader", reader},
          {"codec", sparse.present() && sparse.kind != "frame_positions" ? "electron events (" + sparse.kind + ")" : codec.name()},
          {"warnings", warnings_json},
          {"metadata", metadata},
          {"dataset_path", valid_utf8(dataset_path)},
          {"dtype", dtype_name(dtype)},
          {"stored_dtype", dtype_name(stored_dtype())},
          {"byte_order", byte_order},
          {"precision", precision},
          {"bit_offset", bit_offset},
          {"stored_dims", dims},
          {"chunk_dims", chunk_dims},
          {"filters", f},
          {"shape", scan_shape_known ? nlohmann::json(shape.dims()) : nlohmann::json()},
          {"frames", frames},
          {"detector_shape", detector},
          {"scan_shape_known", scan_shape_known},
          {"scan_shape_source", valid_utf8(scan_shape_source)},
          {"one_frame_per_chunk", one_frame_per_chunk},
          {"bitshuffle_lz4", bitshuffle_lz4},
          {"bitshuffle_block_elems", bitshuffle_block_elems},
          {"source_kind", source_kind},
          {"parts", parts_json},
          {"ntrigger", ntrigger},
          {"nimages", nimages},
          {"pixel_mask", {{"present", has_pixel_mask}, {"bad_pixels", bad_pixels.size()}}},
          {"chunks_expected", chunks_expected},
          {"chunks_written", chunks_written},
          {"ready", ready},
          {"index_error", index_error.empty() ? nlohmann::json() : nlohmann::json(valid_utf8(index_error))},
          {"calibration", calibration},
          {"calibration_detail", calibration_detail},
          {"metadata_warnings", metadata_warnings},
          {"sidecar", valid_utf8(sidecar)}};
  if (!scan_shape_known) j["scan_shape_needed"] = valid_utf8(scan_shape_needed);
  return j;
}

namespace {

// The stored element type: uint8/16/32 counts, int8/16/32, IEEE float32/float64 (read as float32), in either byte
// order, with its precision and bit offset.
struct StoredType {
  DType dtype = DType::u16;
  std::optional<DType> stored_as;  // float64: decoded as float32
  std::string byte_order = "little";
  std::size_t precision = 16, bit_offset = 0;
};

StoredType stored_type_of(hid_t type, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  StoredType t;
  if (cls == H5T_FLOAT) {
    const bool ieee = H5Tequal(type, H5T_IEEE_F32LE) > 0 || H5Tequal(type, H5T_IEEE_F32BE) > 0 ||
                      H5Tequal(type, H5T_IEEE_F64LE) > 0 || H5Tequal(type, H5T_IEEE_F64BE) > 0;
    if (!ieee)
      throw DTypeError(where + " holds " + std::to_string(8 * size) + "-bit floats that are not IEEE float32/float64");
    t.dtype = DType::f32;
    if (size == 8) t.stored_as = DType::f64;
  } else if (cls == H5T_INTEGER) {
    const bool sign = H5Tget_sign(type) != H5T_SGN_NONE;
    switch (size) {
      case 1: t.dtype = sign ? DType::i8 : DType::u8; break;
      case 2: t.dtype = sign ? DType::i16 : DType::u16; break;
      case 4: t.dtype = sign ? DType::i32 : DType::u32; break;
      default:
        throw DTypeError(where + " holds " + std::to_string(8 * size) + "-bit integers; expected 8, 16 or 32 bits "
                         "(uint8/16/32 counts, int8/16/32)");
    }
  } else {
    throw DTypeError(where + " holds neither integers nor floats");
  }
  const H5T_order_t order = H5Tget_order(type);
  if (order != H5T_ORDER_LE && order != H5T_ORDER_BE)
    throw FormatError(where + " stores its " + std::to_string(8 * size) + "-bit integers in byte order " +
                      std::to_string(int(order)) + " (HDF5 H5T_order_t), neither little- nor big-endian");
  t.byte_order = order == H5T_ORDER_BE ? "big" : "little";
  const std::size_t precision = H5Tget_precision(type);
  const int offset = H5Tget_offset(type);
  if (precision == 0 || offset < 0 || std::size_t(offset) + precision > 8 * size)
    throw FormatError(where + " has a datatype with precision " + std::to_string(precision) + " bits at bit offset " +
                      std::to_string(offset) + ", which do not fit its " + std::to_string(8 * size) + "-bit elements");
  t.precision = precision;
  t.bit_offset = std::size_t(offset);
  return t;
}

// The scan_shape attribute as (rows, cols): nothing when absent; FormatError naming the problem when present
// but not two positive integers whose product fits.
std::optional<std::pair<std::size_t, std::size_t>> scan_shape_attribute(hid_t ds, const std::string& where) {
  h5::QuietErrors quiet;
  if (H5Aexists(ds, "scan_shape") <= 0) return std::nullopt;
  const std::string bad = where + " has an invalid scan_shape attribute: ";
  h5::Handle a(H5Aopen(ds, "scan_shape", H5P_DEFAULT), H5Aclose);
  h5::Handle t(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(t) != H5T_INTEGER) throw FormatError(bad + "not integers");
  h5::Handle sp(H5Aget_space(a), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(sp);
  if (n != 2) throw FormatError(bad + std::to_string(n) + " values; expected 2 (scan rows, scan cols)");
  long long v[2] = {0, 0};
  if (H5Aread(a, H5T_NATIVE_LLONG, v) < 0) throw FormatError(bad + "unreadable (values beyond 64-bit integers?)");
  if (v[0] <= 0 || v[1] <= 0)
    throw FormatError(bad + std::to_string(v[0]) + "x" + std::to_string(v[1]) + "; both must be positive");
  checked_mul(std::uint64_t(v[0]), std::uint64_t(v[1]), where + " scan_shape attribute frame count");
  return std::pair{std::size_t(v[0]), std::size_t(v[1])};
}

std::string filter_name(int id) {
  switch (id) {
    case H5Z_FILTER_DEFLATE: return "deflate";
    case H5Z_FILTER_SHUFFLE: return "shuffle";
    case H5Z_FILTER_FLETCHER32: return "fletcher32";
    case 32000: return "lzf";
    case 32001: return "blosc";
    case 32004: return "lz4";
    case 32013: return "zfp";
    case 32015: return "zstd";
    case 32017: return "sz";
    case h5::kBitshuffleFilter: return "bitshuffle";
    default: return "unknown";
  }
}

}  // namespace

std::vector<std::string> discover(const std::string& path) {
  std::vector<std::string> unreadable;
  return discover_candidates(path, unreadable);
}

std::vector<std::string> discover_candidates(const std::string& path, std::vector<std::string>& unreadable) {
  h5::Handle f = h5::open_file(path);
  std::vector<std::string> found;
  h5::QuietErrors quiet;
  h5::visit_objects(f, [&](const std::string& name, H5O_type_t type, haddr_t) {
    if (type == H5O_TYPE_UNKNOWN) unreadable.push_back(name);
    if (type != H5O_TYPE_DATASET) return false;
    h5::Handle d(H5Dopen2(f, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!d.valid()) {
      unreadable.push_back(name);
      return false;
    }
    h5::Handle sp(H5Dget_space(d), H5Sclose);
    h5::Handle t(H5Dget_type(d), H5Tclose);
    const int rank = H5Sget_simple_extent_ndims(sp);
    if ((rank == 3 || rank == 4) && (H5Tget_class(t) == H5T_INTEGER || H5Tget_class(t) == H5T_FLOAT))
      found.push_back(name);
    return false;
  });
  return found;
}

namespace {

// Storage of one dataset (one part of an acquisition).
struct Layout {
  StoredType type;
  std::vector<std::size_t> dims, chunk_dims;
  std::vector<FilterInfo> filters;
  std::size_t chunks_expected = 0, chunks_written = 0;
  bool ready = false;
  std::vector<long long> scan_attribute;
  std::shared_ptr<const ChunkTable> table;  // our parse of the chunk index, when it succeeded
  std::string index_error;                   // why the chunk index is damaged ("" when it is not)
  double index_seconds = 0;
};

// Parses the chunk index once (a few ms for 262144 chunks, against tens of ms for H5Dget_num_chunks); no table when
// it cannot be parsed (the HDF5 count is used then). A damaged index (FormatError) is remembered: the file is then
// corrupt, not unfinished, and loads say so.
std::shared_ptr<const ChunkTable> parsed_table(hid_t ds, const std::string& file, const std::string& dataset,
                                               std::string& error) {
  try {
    auto t = std::make_shared<ChunkTable>(read_chunk_table(ds, file, dataset));
    if (t->method.rfind("parsed", 0) == 0) return t;
  } catch (const FormatError& e) {
    error = e.what();
  } catch (const Error&) {
  }
  return nullptr;
}

Layout read_layout(hid_t ds, const std::string& where, const std::string& file, const std::string& dataset) {
  Layout l;
  h5::Handle type(H5Dget_type(ds), H5Tclose);
  l.type = stored_type_of(type, where);
  h5::Handle space(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank != 3 && rank != 4)
    throw FormatError(where + " has rank " + std::to_string(rank) + "; expected (frames, det_r, det_c) or 4D");
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  l.dims.assign(dims.begin(), dims.end());
  if (l.dims[rank - 2] == 0 || l.dims[rank - 1] == 0) throw FormatError(where + " has an empty detector");
  std::uint64_t elements = 1;
  for (std::size_t d : l.dims) elements = checked_mul(elements, d, "size of " + where);
  h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    std::vector<hsize_t> cd(rank);
    H5Pget_chunk(dcpl, rank, cd.data());
    l.chunk_dims.assign(cd.begin(), cd.end());
    const int nf = H5Pget_nfilters(dcpl);
    for (int i = 0; i < nf; ++i) {
      unsigned flags = 0;
      std::size_t n = 16;
      std::vector<unsigned> cdv(16);
      char name[128];
      const int id = H5Pget_filter2(dcpl, i, &flags, &n, cdv.data(), sizeof(name), name, nullptr);
      cdv.resize(std::min<std::size_t>(n, 16));
      l.filters.push_back({id, filter_name(id), cdv});
    }
    std::size_t expected = 1;
    for (int i = 0; i < rank; ++i)
      expected = checked_mul(expected, (l.dims[i] + l.chunk_dims[i] - 1) / l.chunk_dims[i], "chunks of " + where);
    l.chunks_expected = expected;
    const auto t0 = std::chrono::steady_clock::now();
    l.table = parsed_table(ds, file, dataset, l.index_error);  // the handle read_layout holds
    l.index_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (l.table) {
      for (const ChunkLocation& c : l.table->chunks) l.chunks_written += c.size > 0;
    } else if (l.index_error.empty()) {  // (a damaged index is not handed to HDF5's own walk)
      hsize_t written = 0;
      h5::QuietErrors quiet;
      if (H5Dget_num_chunks(ds, space, &written) >= 0) l.chunks_written = written;
    }
    l.ready = l.chunks_written == l.chunks_expected && l.index_error.empty();
  } else {
    l.ready = H5Dget_storage_size(ds) > 0 || elements == 0;
  }
  if (rank == 3)
    if (const auto sa = scan_shape_attribute(ds, where)) l.scan_attribute = {(long long)sa->first, (long long)sa->second};
  return l;
}

bool same_filters(const std::vector<FilterInfo>& a, const std::vector<FilterInfo>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].id != b[i].id || a[i].cd_values != b[i].cd_values) return false;
  return true;
}

std::string dims_text(const std::vector<std::size_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s.empty() ? "none" : s;
}

// An integer scalar (or first element) of a dataset in the master, 0 when absent.
long long int_scalar_dataset(hid_t file, const std::string& path) {
  h5::QuietErrors quiet;
  std::size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos)
    if (H5Lexists(file, path.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return 0;
  if (H5Lexists(file, path.c_str(), H5P_DEFAULT) <= 0) return 0;
  h5::Handle ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) return 0;
  h5::Handle sp(H5Dget_space(ds), H5Sclose);
  if (H5Sget_simple_extent_npoints(sp) != 1) return 0;
  long long v = 0;
  if (H5Dread(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) return 0;
  return v;
}

// Opens a part's file and dataset; IoError naming the part when either is missing.
Layout part_layout(const PartRef& part, const std::string& master_path, const std::string& part_name) {
  h5::Handle file;
  try {
    file = h5::open_file(part.file);
  } catch (const IoError& e) {
    throw IoError(part_name + " of '" + master_path + "' points to '" + part.file + "': " + e.what());
  }
  h5::Handle ds;
  try {
    ds = h5::open_dataset(file, part.dataset_path, part.file);
  } catch (const IoError& e) {
    throw IoError(part_name + " of '" + master_path + "': " + e.what());
  }
  return read_layout(ds, "dataset '" + part.dataset_path + "' in '" + part.file + "' (" + part_name + ")", part.file,
                     part.dataset_path);
}

// A contiguous dataset without filters (what h5py, py4DSTEM and HyperSpy write by default) is one run of plain frame
// records at its file offset: our host and GPU decoders read it like a .npy.
void add_contiguous_records(hid_t file, FileInfo& info) {
  h5::QuietErrors quiet;
  h5::Handle ds(H5Dopen2(file, info.dataset_path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) return;
  h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) != H5D_CONTIGUOUS || H5Pget_nfilters(dcpl) != 0 || !info.plain_bits()) return;
  const haddr_t offset = H5Dget_offset(ds);
  if (offset == HADDR_UNDEF || info.frames == 0) return;
  const std::uint64_t frame = checked_product({std::uint64_t(info.shape.det_rows), std::uint64_t(info.shape.det_cols),
                                               dtype_size(info.stored_dtype())}, "frame of " + info.dataset_path);
  info.codec.kind = FrameCodecKind::plain;
  info.records.files = {info.path};
  info.records.runs = {{0, 0, info.frames, std::uint64_t(offset), frame, frame}};
  info.one_frame_per_chunk = true;
  info.chunks_expected = info.chunks_written = std::size_t(info.frames);
}

}  // namespace

FileInfo inspect_in_process(const std::string& path, const std::string& dataset_path, std::size_t scan_rows,
                            std::size_t scan_cols, ScanShapeNeed need) {
  h5::ensure_bitshuffle_filter();
  h5::Handle file = h5::open_file(path);
  FileInfo info;
  info.path = path;
  if (dataset_path.empty()) {  // stempy electron events: described by their own reader (io/sparse/sparse_reader.hpp)
    h5::QuietErrors quiet;
    if (H5Lexists(file, "electron_events", H5P_DEFAULT) > 0 &&
        H5Lexists(file, "electron_events/frames", H5P_DEFAULT) > 0) {
      info.sparse.kind = "stempy";
      return info;
    }
  }
  // py4DSTEM EMD 1.0 and HyperSpy files name their datacube and calibration in their own layout.
  const std::optional<emd::H5Layout> layout = emd::detect_layout(file, path, dataset_path);
  const PartList found = find_parts(file, path, layout ? layout->dataset : dataset_path);
  info.dataset_path = found.dataset_path;
  info.source_kind = found.kind;
  const std::string where = "dataset '" + info.dataset_path + "' in '" + path + "'";
  const bool multi = found.parts.size() > 1 || found.kind == "virtual dataset";

  // Every part's storage; they must agree on everything but their frame counts.
  Layout first;
  std::uint64_t frames = 0;
  for (std::size_t i = 0; i < found.parts.size(); ++i) {
    const PartRef& ref = found.parts[i];
    const Layout l = part_layout(ref, path, ref.name);
    const std::string name = "part " + std::to_string(i + 1) + " (" + ref.name + " -> '" + ref.file + "' " +
                             ref.dataset_path + ")";
    if (multi && l.dims.size() != 3)
      throw FormatError(name + " has rank " + std::to_string(l.dims.size()) +
                        "; the parts of a multi-file acquisition hold (frames, det_r, det_c)");
    const std::uint64_t part_frames = l.dims.size() == 4 ? checked_mul(l.dims[0], l.dims[1], name) : l.dims[0];
    if (ref.has_frame_range && ref.frames != part_frames)
      throw FormatError(name + " holds " + std::to_string(part_frames) + " frames but its virtual mapping takes " +
                        std::to_string(ref.frames));
    if (i == 0) {
      first = l;
    } else {
      const std::string differs = name + " differs from part 1 (" + found.parts[0].name + ") in ";
      if (l.type.dtype != first.type.dtype || l.type.stored_as != first.type.stored_as)
        throw FormatError(differs + "dtype: " + dtype_name(l.type.dtype) + " vs " + dtype_name(first.type.dtype));
      if (l.type.byte_order != first.type.byte_order)
        throw FormatError(differs + "byte order: " + l.type.byte_order + "-endian vs " + first.type.byte_order +
                          "-endian");
      if (l.type.precision != first.type.precision || l.type.bit_offset != first.type.bit_offset)
        throw FormatError(differs + "datatype bits: precision " + std::to_string(l.type.precision) + " at offset " +
                          std::to_string(l.type.bit_offset) + " vs precision " + std::to_string(first.type.precision) +
                          " at offset " + std::to_string(first.type.bit_offset));
      if (l.dims[1] != first.dims[1] || l.dims[2] != first.dims[2])
        throw FormatError(differs + "detector shape: " + std::to_string(l.dims[1]) + "x" + std::to_string(l.dims[2]) +
                          " vs " + std::to_string(first.dims[1]) + "x" + std::to_string(first.dims[2]));
      if (l.chunk_dims != first.chunk_dims)
        throw FormatError(differs + "chunking: " + dims_text(l.chunk_dims) + " vs " + dims_text(first.chunk_dims));
      if (!same_filters(l.filters, first.filters)) throw FormatError(differs + "filters");
    }
    info.parts.push_back({ref.file, ref.dataset_path, frames, part_frames});
    info.part_tables.push_back(l.table);
    info.index_seconds += l.index_seconds;
    frames = checked_add(frames, part_frames, "total frames of " + where);
    info.chunks_expected = checked_add(info.chunks_expected, l.chunks_expected, "chunks of " + where);
    info.chunks_written += l.chunks_written;
    info.ready = (i == 0 || info.ready) && l.ready;
    if (info.index_error.empty() && !l.index_error.empty())
      info.index_error = multi ? name + ": " + l.index_error : l.index_error;
  }
  info.dtype = first.type.dtype;
  info.stored_as = first.type.stored_as;
  info.byte_order = first.type.byte_order;
  info.precision = first.type.precision;
  info.bit_offset = first.type.bit_offset;
  info.chunk_dims = first.chunk_dims;
  info.filters = first.filters;
  const int rank = static_cast<int>(first.dims.size());
  info.dims = multi ? std::vector<std::size_t>{std::size_t(frames), first.dims[1], first.dims[2]} : first.dims;
  const std::size_t det_r = info.dims[rank - 2], det_c = info.dims[rank - 1];

  info.frames = frames;
  if (frames == 0) throw FormatError(where + " holds no frames (its scan extent is 0)");
  checked_mul(checked_mul(frames, det_r, where), det_c, "elements of " + where);

  FileMetadata md = read_file_metadata(file, path, det_r, det_c);
  if (layout) {
    for (const auto& [key, v] : layout->calibration.values) {
      const bool centre = key == "beam_center_row_px" || key == "beam_center_col_px";
      const double limit = double(key == "beam_center_row_px" ? det_r : det_c) - 1;
      if (centre && !(std::isfinite(v.value) && v.value >= 0 && v.value <= limit)) {
        md.calibration.warn(v.source + " = " + std::to_string(v.value) + " px is outside the detector: not used");
        continue;
      }
      md.calibration.offer(key, v.value, v.unit, v.source);
    }
    for (const std::string& w : layout->calibration.warnings) md.calibration.warn(w);
  }
  info.calibration = md.calibration.flat();
  info.calibration_detail = md.calibration.detail();
  info.metadata_warnings = md.calibration.warnings;
  info.sidecar = md.sidecar;

  ScanShapeHints hints;
  hints.given_rows = scan_rows;
  hints.given_cols = scan_cols;
  if (rank == 4) hints.dataset_dims = {first.dims[0], first.dims[1]};
  if (!multi) hints.attribute = first.scan_attribute;
  hints.sidecar = md.sidecar_scan;
  hints.sidecar_source = md.sidecar_scan_source;
  info.ntrigger = hints.ntrigger = int_scalar_dataset(file, "/entry/instrument/detector/detectorSpecific/ntrigger");
  info.nimages = hints.nimages = int_scalar_dataset(file, "/entry/instrument/detector/detectorSpecific/nimages");
  try {
    const ScanShape ss = resolve_scan_shape(frames, hints, where);
    info.shape = {ss.rows, ss.cols, det_r, det_c};
    info.scan_shape_source = ss.source;
  } catch (const FormatError& e) {
    // Only a load needs the scan shape: without one given, inspect may report what is missing instead.
    if (need == ScanShapeNeed::required || scan_rows || scan_cols) throw;
    info.shape = {0, 0, det_r, det_c};
    info.scan_shape_known = false;
    info.scan_shape_needed = e.what();
  }
  // FormatError for a shape no memory holds (or whose size wraps), named by its scan shape where known.
  (info.scan_shape_known ? info.shape : Shape4D{1, frames, det_r, det_c}).nbytes(dtype_size(info.dtype));

  if (!info.chunk_dims.empty()) {
    bool one = true;
    for (int i = 0; i < rank - 2; ++i) one = one && info.chunk_dims[i] == 1;
    one = one && info.chunk_dims[rank - 2] == det_r && info.chunk_dims[rank - 1] == det_c;
    info.one_frame_per_chunk = one;
    if (info.filters.size() == 1 && info.filters[0].id == h5::kBitshuffleFilter) {
      const auto& cd = info.filters[0].cd_values;
      info.bitshuffle_lz4 = cd.size() >= 5 && cd[4] == h5::kBitshuffleLz4;
      const std::size_t es = dtype_size(info.dtype);
      info.bitshuffle_block_elems = (cd.size() >= 4 && cd[3] != 0) ? cd[3] : bitshuffle_default_block(es);
    }
  }
  const PixelMask mask = read_pixel_mask(file, path, det_r, det_c);
  info.has_pixel_mask = mask.present;
  info.bad_pixels = mask.bad_pixels;
  if (layout) {
    info.metadata = layout->metadata;
    info.warnings.insert(info.warnings.end(), layout->warnings.begin(), layout->warnings.end());
    info.source_kind = layout->kind + " " + info.source_kind;
    if (!multi) add_contiguous_records(file, info);
  }
  return info;
}

namespace {

// The FileInfos inspect_hdf5 received from its child processes, by file version and request: a later inspect of the
// same unchanged files reuses one without a child and without HDF5. Only finished acquisitions (ready) are kept, and
// an entry holds the identity of every file its result read (the master, each part's data file, the ARINA sidecar
// or its absence): one that changed, appeared or went away makes the entry stale. Bounded in entries and in chunk
// locations held: 4M, or as many as 1/32 of the host's memory holds (24 bytes each) where that is more (a 4096x4096
// scan has 16.7M chunks: 400 MB of locations, which a second inspect, as `plan_load` then `load` or `qgpu serve`'s
// open do, would otherwise parse again in a child, ~0.3 s on an H100 machine, s20a).
constexpr std::size_t kCacheEntries = 16;

std::size_t cache_chunks() {
  static const std::size_t n = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const std::size_t ram = pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : 0;
    return std::max<std::size_t>(std::size_t(4) << 20, ram / 32 / sizeof(ChunkLocation));
  }();
  return n;
}

struct CacheEntry {
  std::string key;                                         // request and master identity
  std::vector<std::pair<std::string, std::string>> files;  // (file, identity) of every other file read
  std::size_t chunks = 0;
  FileInfo info;
};

struct InspectCache {
  std::mutex mutex;
  std::list<CacheEntry> entries;  // most recently used first
  std::size_t chunks = 0;
};

InspectCache& inspect_cache() {
  static InspectCache c;
  return c;
}

// ScanShapeNeed is not part of it: the need changes only whether a missing scan shape raises (the FileInfo is the same
// otherwise), so one result answers both (`qgpu info` inspects with optional, then asks the admission with required).
std::string request_key(const std::string& identity, const std::string& path, const std::string& dataset_path,
                        std::size_t scan_rows, std::size_t scan_cols) {
  return identity + "|" + path + "|" + dataset_path + "|" + std::to_string(scan_rows) + "x" +
         std::to_string(scan_cols);
}

// The other files a result depends on, with their identities now.
std::vector<std::pair<std::string, std::string>> dependencies(const FileInfo& info) {
  std::vector<std::pair<std::string, std::string>> files;
  auto add = [&](const std::string& f) {
    if (f.empty() || f == info.path) return;
    for (const auto& [name, id] : files)
      if (name == f) return;
    files.emplace_back(f, file_identity(f));
  };
  for (const SourcePart& p : info.parts) add(p.file);
  for (const auto& t : info.part_tables)
    if (t) add(t->file);
  for (const std::string& f : info.records.files) add(f);
  add(arina_sidecar_path(info.path));
  add(info.sidecar);
  return files;
}

std::optional<FileInfo> cached(const std::string& key) {
  InspectCache& c = inspect_cache();
  std::lock_guard lock(c.mutex);
  for (auto it = c.entries.begin(); it != c.entries.end(); ++it) {
    if (it->key != key) continue;
    for (const auto& [file, id] : it->files)
      if (file_identity(file) != id) {
        c.chunks -= it->chunks;
        c.entries.erase(it);
        return std::nullopt;
      }
    c.entries.splice(c.entries.begin(), c.entries, it);
    return c.entries.front().info;
  }
  return std::nullopt;
}

void remember(const std::string& key, const FileInfo& info) {
  std::size_t chunks = 0;
  for (const auto& t : info.part_tables)
    if (t) chunks += t->chunks.size();
  if (chunks > cache_chunks()) return;
  CacheEntry e{key, dependencies(info), chunks, info};
  InspectCache& c = inspect_cache();
  std::lock_guard lock(c.mutex);
  for (auto it = c.entries.begin(); it != c.entries.end(); ++it)
    if (it->key == key) {
      c.chunks -= it->chunks;
      c.entries.erase(it);
      break;
    }
  while (!c.entries.empty() && (c.entries.size() >= kCacheEntries || c.chunks + chunks > cache_chunks())) {
    c.chunks -= c.entries.back().chunks;
    c.entries.pop_back();
  }
  c.chunks += chunks;
  c.entries.push_front(std::move(e));
}

}  // namespace

FileInfo inspect_hdf5(const std::string& path, const std::string& dataset_path, std::size_t scan_rows,
                      std::size_t scan_cols, ScanShapeNeed need) {
  if (!parse_isolation_enabled()) return inspect_in_process(path, dataset_path, scan_rows, scan_cols, need);
  // The HDF5 library can crash or hang on damaged metadata, and a use-after-free inside it may corrupt the heap
  // without crashing: the parse runs in a child process, which sends its FileInfo back. This process never parses
  // the metadata itself (unless no child can be started); a second inspect of the same unchanged files reuses it.
  const std::string before = file_identity(path);
  const std::string key = request_key(before, path, dataset_path, scan_rows, scan_cols);
  if (!before.empty())
    if (std::optional<FileInfo> hit = cached(key)) {
      // What inspect_in_process raises when a load needs the scan shape and nothing gives it.
      if (need == ScanShapeNeed::required && !hit->scan_shape_known) throw FormatError(hit->scan_shape_needed);
      hit->index_seconds = 0;  // nothing parsed for this inspect (a load's timing showed the first parse again)
      return std::move(*hit);
    }
  const std::optional<ChildResult> bytes = parse_in_child(
      path, [&] { return encode_file_info(inspect_in_process(path, dataset_path, scan_rows, scan_cols, need)); });
  if (!bytes) return inspect_in_process(path, dataset_path, scan_rows, scan_cols, need);  // no child possible
  FileInfo info = decode_file_info(bytes->bytes(), path);
  // Kept when the file did not change while the child read it and the acquisition is finished.
  if (!before.empty() && info.ready && file_identity(path) == before) remember(key, info);
  return info;
}

namespace testing {

void forget_inspected_files() {
  InspectCache& c = inspect_cache();
  std::lock_guard lock(c.mutex);
  c.entries.clear();
  c.chunks = 0;
}

}  // namespace testing

}  // namespace qgpu::io
