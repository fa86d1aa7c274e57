#include "io/hdf5/file_info.hpp"

#include <cmath>
#include <optional>
#include <utility>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

std::size_t bitshuffle_default_block(std::size_t elem_size) {
  std::size_t b = 8192 / elem_size / 8 * 8;
  return b < 128 ? 128 : b;
}

nlohmann::json FileInfo::to_json() const {
  nlohmann::json f = nlohmann::json::array();
  for (const FilterInfo& fi : filters) f.push_back({{"id", fi.id}, {"name", fi.name}, {"cd_values", fi.cd_values}});
  return {{"path", path},
          {"dataset_path", dataset_path},
          {"dtype", dtype_name(dtype)},
          {"stored_dims", dims},
          {"chunk_dims", chunk_dims},
          {"filters", f},
          {"shape", shape.dims()},
          {"scan_shape_source", scan_shape_source},
          {"one_frame_per_chunk", one_frame_per_chunk},
          {"bitshuffle_lz4", bitshuffle_lz4},
          {"bitshuffle_block_elems", bitshuffle_block_elems},
          {"chunks_expected", chunks_expected},
          {"chunks_written", chunks_written},
          {"ready", ready},
          {"calibration", calibration}};
}

namespace {

DType count_dtype_of(hid_t type, const std::string& where) {
  if (H5Tget_class(type) != H5T_INTEGER) throw DTypeError(where + " does not hold integer counts");
  const std::size_t size = H5Tget_size(type);
  if (H5Tget_sign(type) != H5T_SGN_NONE)
    throw DTypeError(where + " holds signed " + std::to_string(8 * size) + "-bit integers; expected uint8/16/32");
  switch (size) {
    case 1: return DType::u8;
    case 2: return DType::u16;
    case 4: return DType::u32;
    default: throw DTypeError(where + " holds " + std::to_string(8 * size) + "-bit integers; expected uint8/16/32");
  }
}

// Reads an integer attribute array if present.
[[maybe_unused]]  // kept for other readers of integer attributes
std::vector<long long> int_attribute(hid_t obj, const char* name) {
  h5::QuietErrors quiet;
  if (H5Aexists(obj, name) <= 0) return {};
  h5::Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  h5::Handle sp(H5Aget_space(a), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(sp);
  std::vector<long long> v(n > 0 ? n : 0);
  if (n > 0 && H5Aread(a, H5T_NATIVE_LLONG, v.data()) < 0) return {};
  return v;
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

// The first default dataset path that names a dataset (a group of the same name is skipped).
std::string default_dataset(hid_t file) {
  h5::QuietErrors quiet;
  for (const std::string& p : kDefaultDatasetPaths) {
    if (H5Lexists(file, p.substr(0, p.find('/', 1)).c_str(), H5P_DEFAULT) <= 0 ||
        H5Lexists(file, p.c_str(), H5P_DEFAULT) <= 0)
      continue;
    H5O_info_t oi;
    if (H5Oget_info_by_name2(file, p.c_str(), &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 && oi.type == H5O_TYPE_DATASET)
      return p;
  }
  return "";
}

nlohmann::json read_calibration(hid_t file) {
  nlohmann::json cal = nlohmann::json::object();
  h5::QuietErrors quiet;
  const char* group = "/entry/calibration";
  if (H5Lexists(file, "/entry", H5P_DEFAULT) <= 0 || H5Lexists(file, group, H5P_DEFAULT) <= 0) return cal;
  h5::Handle g(H5Gopen2(file, group, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) return cal;
  H5O_info_t info;
  if (H5Oget_info2(g, &info, H5O_INFO_NUM_ATTRS) < 0) return cal;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    h5::Handle a(H5Aopen_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!a.valid()) continue;
    char name[256] = {0};
    H5Aget_name(a, sizeof(name), name);
    h5::Handle t(H5Aget_type(a), H5Tclose);
    if (H5Tget_class(t) == H5T_FLOAT || H5Tget_class(t) == H5T_INTEGER) {
      double v = 0;
      if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) cal[name] = v;
    }
  }
  return cal;
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
  h5::Handle f = h5::open_file(path);
  std::vector<std::string> found;
  auto visit = [](hid_t obj, const char* name, const H5O_info_t* info, void* op) -> herr_t {
    if (info->type != H5O_TYPE_DATASET) return 0;
    h5::Handle d(H5Dopen2(obj, name, H5P_DEFAULT), H5Dclose);
    h5::Handle sp(H5Dget_space(d), H5Sclose);
    h5::Handle t(H5Dget_type(d), H5Tclose);
    const int rank = H5Sget_simple_extent_ndims(sp);
    if ((rank == 3 || rank == 4) && H5Tget_class(t) == H5T_INTEGER)
      static_cast<std::vector<std::string>*>(op)->push_back(std::string("/") + name);
    return 0;
  };
  h5::QuietErrors quiet;
  H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, visit, &found, H5O_INFO_BASIC);
  return found;
}

FileInfo inspect(const std::string& path, const std::string& dataset_path, std::size_t scan_rows,
                 std::size_t scan_cols) {
  h5::ensure_bitshuffle_filter();
  h5::Handle file = h5::open_file(path);
  FileInfo info;
  info.path = path;
  if (dataset_path.empty()) {
    info.dataset_path = default_dataset(file);
    if (info.dataset_path.empty()) {
      const std::vector<std::string> found = discover(path);
      if (found.empty()) throw IoError("no 4D-STEM dataset (integer, rank 3 or 4) found in '" + path + "'");
      info.dataset_path = found.front();
    }
  } else {
    info.dataset_path = dataset_path;
  }
  h5::Handle ds = h5::open_dataset(file, info.dataset_path, path);
  const std::string where = "dataset '" + info.dataset_path + "' in '" + path + "'";
  h5::Handle type(H5Dget_type(ds), H5Tclose);
  info.dtype = count_dtype_of(type, where);

  h5::Handle space(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank != 3 && rank != 4)
    throw FormatError(where + " has rank " + std::to_string(rank) + "; expected (frames, det_r, det_c) or 4D");
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  info.dims.assign(dims.begin(), dims.end());

  h5::Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    std::vector<hsize_t> cd(rank);
    H5Pget_chunk(dcpl, rank, cd.data());
    info.chunk_dims.assign(cd.begin(), cd.end());
    const int nf = H5Pget_nfilters(dcpl);
    for (int i = 0; i < nf; ++i) {
      unsigned flags = 0;
      std::size_t n = 16;
      std::vector<unsigned> cdv(16);
      char name[128];
      const int id = H5Pget_filter2(dcpl, i, &flags, &n, cdv.data(), sizeof(name), name, nullptr);
      cdv.resize(n);
      info.filters.push_back({id, filter_name(id), cdv});
    }
  }
  const std::size_t det_r = info.dims[rank - 2], det_c = info.dims[rank - 1];
  if (det_r == 0 || det_c == 0) throw FormatError(where + " has an empty detector");
  const std::size_t frames = rank == 4 ? checked_mul(info.dims[0], info.dims[1], where + " frame count") : info.dims[0];
  if (frames == 0) throw FormatError(where + " holds no frames (its scan extent is 0)");
  if (scan_rows || scan_cols) {
    if (scan_rows == 0 || scan_cols == 0 ||
        checked_mul<RegionError>(scan_rows, scan_cols, "given scan shape frame count") != frames)
      throw FormatError("given scan shape " + std::to_string(scan_rows) + "x" + std::to_string(scan_cols) +
                        " does not match the " + std::to_string(frames) + " frames of " + where);
    info.shape = {scan_rows, scan_cols, det_r, det_c};
    info.scan_shape_source = "given";
  } else if (rank == 4) {
    info.shape = {info.dims[0], info.dims[1], det_r, det_c};
    info.scan_shape_source = "dataset dims";
  } else if (const auto s = scan_shape_attribute(ds, where)) {
    if (s->first * s->second != frames)
      throw FormatError(where + " attribute scan_shape " + std::to_string(s->first) + "x" +
                        std::to_string(s->second) + " does not match its " + std::to_string(frames) + " frames");
    info.shape = {s->first, s->second, det_r, det_c};
    info.scan_shape_source = "attribute scan_shape";
  } else {
    const auto side = static_cast<std::size_t>(std::llround(std::sqrt(double(frames))));
    if (side * side != frames)
      throw FormatError(where + " has " + std::to_string(frames) +
                        " frames, no scan_shape attribute and no square scan: give scan_shape");
    info.shape = {side, side, det_r, det_c};
    info.scan_shape_source = "square frame count";
  }
  info.shape.nbytes(dtype_size(info.dtype));  // FormatError for a shape no memory holds (or whose size wraps)

  if (!info.chunk_dims.empty()) {
    bool one = true;
    for (int i = 0; i < rank - 2; ++i) one = one && info.chunk_dims[i] == 1;
    one = one && info.chunk_dims[rank - 2] == det_r && info.chunk_dims[rank - 1] == det_c;
    info.one_frame_per_chunk = one;
    std::size_t expected = 1;
    for (int i = 0; i < rank; ++i) {
      if (info.chunk_dims[i] == 0) throw FormatError(where + " has a chunk dimension of 0");
      expected = checked_mul(expected, info.dims[i] / info.chunk_dims[i] + (info.dims[i] % info.chunk_dims[i] != 0),
                             where + " chunk count");
    }
    info.chunks_expected = expected;
    hsize_t written = 0;
    h5::QuietErrors quiet;
    if (H5Dget_num_chunks(ds, space, &written) >= 0) info.chunks_written = written;
    info.ready = info.chunks_written == info.chunks_expected;
    if (info.filters.size() == 1 && info.filters[0].id == h5::kBitshuffleFilter) {
      const auto& cd = info.filters[0].cd_values;
      info.bitshuffle_lz4 = cd.size() >= 5 && cd[4] == h5::kBitshuffleLz4;
      const std::size_t es = dtype_size(info.dtype);
      info.bitshuffle_block_elems = (cd.size() >= 4 && cd[3] != 0) ? cd[3] : bitshuffle_default_block(es);
    }
  } else {
    info.chunks_expected = info.chunks_written = 0;
    info.ready = H5Dget_storage_size(ds) > 0 || info.shape.elements() == 0;
  }
  info.calibration = read_calibration(file);
  info.parts = {{path, info.dataset_path, 0, info.shape.frames()}};
  return info;
}

}  // namespace qgpu::io
