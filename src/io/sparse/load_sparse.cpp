#include "io/sparse/load_sparse.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/isolated_parse.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/raw/raw_reader.hpp"
#include "io/source/nonfinite.hpp"
#include "io/sparse/sparse_formats.hpp"

namespace qgpu::io {

namespace {

constexpr std::size_t kFramesPerRead = 4096;
constexpr std::uint64_t kEventsPerRead = std::uint64_t(1) << 24;

// Where an event of the file lands in the output, or nowhere (outside the regions, or a bad pixel).
struct Scatter {
  const LoadPlan& p;
  std::uint64_t scan_cols, det_cols, det_pixels, positions;
  std::vector<std::uint8_t> bad;
  std::vector<std::uint8_t> scanned;  // per output position: 1 when a frame of the file lies there
  HostArray4D& out;
  std::string where;
  bool overflow = false;

  Scatter(const LoadPlan& plan, HostArray4D& o)
      : p(plan),
        scan_cols(plan.info.shape.scan_cols),
        det_cols(plan.info.shape.det_cols),
        det_pixels(plan.info.shape.frame_pixels()),
        positions(std::uint64_t(plan.info.shape.scan_rows) * plan.info.shape.scan_cols),
        scanned(plan.out_shape.scan_rows * plan.out_shape.scan_cols, 0),
        out(o),
        where("'" + plan.info.path + "'") {
    if (p.zero_bad_pixels) {
      bad.assign(det_pixels, 0);
      for (std::uint32_t px : p.bad_pixels) bad.at(px) = 1;
    }
  }

  // The output position of file position pos (flat), or -1.
  std::int64_t out_position(std::uint64_t pos) const {
    const std::uint64_t r = pos / scan_cols, c = pos % scan_cols;
    if (r < p.scan.row0 || c < p.scan.col0 || r - p.scan.row0 >= p.scan.rows || c - p.scan.col0 >= p.scan.cols)
      return -1;
    return std::int64_t(((r - p.scan.row0) / p.bin_scan) * p.out_shape.scan_cols + (c - p.scan.col0) / p.bin_scan);
  }

  // The output pixel of file pixel px (flat, < det_pixels), or -1.
  std::int64_t out_pixel(std::uint64_t px) const {
    if (!bad.empty() && bad[px]) return -1;
    const std::uint64_t r = px / det_cols, c = px % det_cols;
    if (r < p.detector.row0 || c < p.detector.col0 || r - p.detector.row0 >= p.detector.rows ||
        c - p.detector.col0 >= p.detector.cols)
      return -1;
    return std::int64_t(((r - p.detector.row0) / p.bin_detector) * p.out_shape.det_cols +
                        (c - p.detector.col0) / p.bin_detector);
  }

  template <class T> void add_typed(std::uint64_t i, double v) {
    T* o = out.as<T>() + i;
    if constexpr (std::is_floating_point_v<T>) {
      *o += T(v);
    } else {
      const double s = double(*o) + v;
      if (s > double(std::numeric_limits<T>::max()) || s < double(std::numeric_limits<T>::lowest())) {
        overflow = true;
        return;
      }
      *o = T(*o + T(v));
    }
  }

  void add(std::int64_t opos, std::int64_t opx, double v) {
    const std::uint64_t i = std::uint64_t(opos) * p.out_shape.frame_pixels() + std::uint64_t(opx);
    switch (p.out_dtype) {
      case DType::u8: add_typed<std::uint8_t>(i, v); break;
      case DType::u16: add_typed<std::uint16_t>(i, v); break;
      case DType::u32: add_typed<std::uint32_t>(i, v); break;
      case DType::u64: add_typed<std::uint64_t>(i, v); break;
      case DType::i8: add_typed<std::int8_t>(i, v); break;
      case DType::i16: add_typed<std::int16_t>(i, v); break;
      case DType::i32: add_typed<std::int32_t>(i, v); break;
      case DType::i64: add_typed<std::int64_t>(i, v); break;
      case DType::f32: add_typed<float>(i, v); break;
      case DType::f64: add_typed<double>(i, v); break;
    }
  }

  void check_overflow() const {
    if (overflow)
      throw FormatError("the summed counts of " + where + " overflow " + dtype_name(p.out_dtype) +
                        (p.binned() ? " (binned)" : "") + ": load a smaller bin, or convert it to a wider dtype");
  }
};

// Every stored frame's events read through HDF5 and dropped: HDF5 1.10 crashes on some damaged global heaps
// (tests/fuzz/known_hdf5_crashes/), so the load reads them once in a child process first (validated files skip it).
void read_every_frame(const std::string& path, const SparseSource& s) {
  h5::Handle f = h5::open_file(path);
  h5::Handle ds(H5Dopen2(f, s.frames_dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw FormatError("'" + path + "': " + s.frames_dataset + " cannot be opened");
  h5::Handle mt(H5Tvlen_create(H5T_NATIVE_UINT32), H5Tclose);
  h5::Handle fs(H5Dget_space(ds), H5Sclose);
  std::vector<hvl_t> buf(kFramesPerRead);
  for (std::uint64_t first = 0; first < s.stored_frames; first += kFramesPerRead) {
    const hsize_t start = first, count = std::min<std::uint64_t>(kFramesPerRead, s.stored_frames - first);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    h5::Handle ms(H5Screate_simple(1, &count, nullptr), H5Sclose);
    if (H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf.data()) < 0)
      throw FormatError("'" + path + "': frames " + std::to_string(first) + ".." + std::to_string(first + count - 1) +
                        " of " + s.frames_dataset + " cannot be read (damaged file?)");
    H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, buf.data());
  }
}

void load_stempy(const LoadPlan& p, Scatter& sc, const std::function<void(double)>& progress, LoadTiming& timing) {
  const SparseSource& s = p.info.sparse;
  {
    const double t = now_s();
    validate_in_child(p.info.path, "read stempy events", [&] { read_every_frame(p.info.path, s); });
    timing.index = now_s() - t;  // the child's read of every frame (0 once validated)
  }
  h5::Handle f = h5::open_file(p.info.path);
  h5::Handle ds(H5Dopen2(f, s.frames_dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw FormatError(sc.where + ": " + s.frames_dataset + " cannot be opened");
  std::vector<std::uint64_t> pos;
  if (s.version < 3) {
    h5::Handle ps(H5Dopen2(f, s.positions_dataset.c_str(), H5P_DEFAULT), H5Dclose);
    pos.resize(s.stored_frames);
    if (!ps.valid() || (s.stored_frames &&
                        H5Dread(ps, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, pos.data()) < 0))
      throw FormatError(sc.where + ": " + s.positions_dataset + " cannot be read");
  }
  h5::Handle mt(H5Tvlen_create(H5T_NATIVE_UINT32), H5Tclose);
  h5::Handle fs(H5Dget_space(ds), H5Sclose);
  std::vector<hvl_t> buf(kFramesPerRead);
  for (std::uint64_t first = 0; first < s.stored_frames; first += kFramesPerRead) {
    const hsize_t start = first, count = std::min<std::uint64_t>(kFramesPerRead, s.stored_frames - first);
    // Frames of positions outside the scan region are skipped without reading them where whole reads allow.
    bool any = false;
    for (std::uint64_t i = first; i < first + count && !any; ++i) {
      const std::uint64_t position = s.version >= 3 ? i / s.frames_per_position : pos[i];
      any = position < sc.positions && sc.out_position(position) >= 0;
    }
    if (!any) continue;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    h5::Handle ms(H5Screate_simple(1, &count, nullptr), H5Sclose);
    double t = now_s();
    if (H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf.data()) < 0)
      throw FormatError(sc.where + ": frames " + std::to_string(first) + ".." + std::to_string(first + count - 1) +
                        " of " + s.frames_dataset + " cannot be read (damaged file?)");
    timing.read += now_s() - t;
    t = now_s();
    std::string error;
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint64_t i = first + k;
      const std::uint64_t position = s.version >= 3 ? i / s.frames_per_position : pos[i];
      if (position >= sc.positions) {
        error = "frame " + std::to_string(i) + " lies at scan position " + std::to_string(position) +
                ", outside the scan";
        break;
      }
      const std::int64_t op = sc.out_position(position);
      if (op < 0) continue;
      sc.scanned[std::size_t(op)] = 1;
      const auto* idx = static_cast<const std::uint32_t*>(buf[k].p);
      timing.bytes_read += buf[k].len * 4;
      for (std::size_t e = 0; e < buf[k].len; ++e) {
        if (idx[e] >= sc.det_pixels) {
          error = "frame " + std::to_string(i) + " holds pixel index " + std::to_string(idx[e]) + ", outside the " +
                  std::to_string(p.info.shape.det_rows) + " x " + std::to_string(p.info.shape.det_cols) + " frame";
          break;
        }
        const std::int64_t px = sc.out_pixel(idx[e]);
        if (px >= 0) sc.add(op, px, 1.0);
      }
      if (!error.empty()) break;
    }
    H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, buf.data());
    timing.decode += now_s() - t;
    if (!error.empty()) throw FormatError(sc.where + ": " + error);
    sc.check_overflow();
    if (progress) progress(double(first + count) / double(s.stored_frames));
  }
}

std::vector<std::uint8_t> read_range(int fd, const std::string& file, std::uint64_t offset, std::uint64_t bytes) {
  std::vector<std::uint8_t> b(bytes);
  std::uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, b.data() + done, bytes - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError("cannot read '" + file + "' at byte " + std::to_string(offset + done));
    done += std::uint64_t(n);
  }
  return b;
}

struct Fd {
  int fd = -1;
  explicit Fd(const std::string& p) : fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0) throw IoError("cannot open '" + p + "': " + std::strerror(errno));
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

template <class T> T load_le(const std::uint8_t* p, bool big) {
  std::uint8_t b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (big)
    for (std::size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(b[k], b[sizeof(T) - 1 - k]);
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

double value_at(const std::uint8_t* base, std::size_t i, DType t, bool big) {
  const std::uint8_t* p = base + i * dtype_size(t);
  switch (t) {
    case DType::u8: return *p;
    case DType::i8: return double(std::int8_t(*p));
    case DType::u16: return load_le<std::uint16_t>(p, big);
    case DType::i16: return load_le<std::int16_t>(p, big);
    case DType::u32: return load_le<std::uint32_t>(p, big);
    case DType::i32: return load_le<std::int32_t>(p, big);
    case DType::u64: return double(load_le<std::uint64_t>(p, big));
    case DType::i64: return double(load_le<std::int64_t>(p, big));
    case DType::f32: return load_le<float>(p, big);
    case DType::f64: return load_le<double>(p, big);
  }
  return 0;
}

void load_csr(const LoadPlan& p, Scatter& sc, const std::function<void(double)>& progress, LoadTiming& timing) {
  const SparseSource& s = p.info.sparse;
  const sparse::IndexType ip = sparse::index_type(s.indptr_dtype, "indptr_dtype");
  const sparse::IndexType ix = sparse::index_type(s.indices_dtype, "indices_dtype");
  bool big = false;
  const DType vt = raw::parse_dtype(s.values_dtype, big);
  const std::size_t vs = dtype_size(vt);
  Fd fp(s.indptr_file), fi(s.indices_file), fv(s.values_file);
  double t = now_s();
  const std::vector<std::uint8_t> indptr = read_range(fp.fd, s.indptr_file, 0, (s.rows + 1) * ip.size);
  timing.read += now_s() - t;
  timing.bytes_read += indptr.size();
  const auto ptr = [&](std::uint64_t r) -> std::uint64_t {
    const std::int64_t v = sparse::index_at(indptr.data(), r, ip);
    if (v < 0 || std::uint64_t(v) > s.nnz)
      throw FormatError("CSR indptr '" + s.indptr_file + "' [" + std::to_string(r) + "] = " + std::to_string(v) +
                        " is outside 0.." + std::to_string(s.nnz) + " (the indices file's length)");
    return std::uint64_t(v);
  };
  if (ptr(0) != 0)
    throw FormatError("CSR indptr '" + s.indptr_file + "' starts at " + std::to_string(ptr(0)) + ", not 0");
  // Rows of the scan region in bands of about kEventsPerRead events.
  std::uint64_t r = 0;
  while (r < s.rows) {
    if (sc.out_position(r) < 0) {
      ++r;
      continue;
    }
    const std::uint64_t e0 = ptr(r);
    std::uint64_t r1 = r + 1;
    while (r1 < s.rows && ptr(r1) - e0 < kEventsPerRead && sc.out_position(r1) >= 0) ++r1;
    const std::uint64_t e1 = ptr(r1);
    if (e1 < e0)
      throw FormatError("CSR indptr '" + s.indptr_file + "' decreases between rows " + std::to_string(r) + " and " +
                        std::to_string(r1));
    t = now_s();
    const std::vector<std::uint8_t> idx = read_range(fi.fd, s.indices_file, e0 * ix.size, (e1 - e0) * ix.size);
    const std::vector<std::uint8_t> val = read_range(fv.fd, s.values_file, e0 * vs, (e1 - e0) * vs);
    timing.read += now_s() - t;
    timing.bytes_read += idx.size() + val.size();
    t = now_s();
    for (std::uint64_t row = r; row < r1; ++row) {
      const std::uint64_t a = ptr(row), b = ptr(row + 1);
      if (b < a)
        throw FormatError("CSR indptr '" + s.indptr_file + "' decreases at row " + std::to_string(row));
      const std::int64_t op = sc.out_position(row);
      sc.scanned[std::size_t(op)] = 1;
      for (std::uint64_t e = a; e < b; ++e) {
        const std::int64_t col = sparse::index_at(idx.data(), e - e0, ix);
        if (col < 0 || std::uint64_t(col) >= sc.det_pixels)
          throw FormatError("CSR indices '" + s.indices_file + "' [" + std::to_string(e) + "] (row " +
                            std::to_string(row) + ") = " + std::to_string(col) + " is outside the " +
                            std::to_string(sc.det_pixels) + " detector pixels");
        const std::int64_t px = sc.out_pixel(std::uint64_t(col));
        if (px >= 0) sc.add(op, px, value_at(val.data(), e - e0, vt, big));
      }
    }
    timing.decode += now_s() - t;
    sc.check_overflow();
    r = r1;
    if (progress) progress(double(r) / double(s.rows));
  }
}

// Dense frames at listed positions (a Direct Electron custom scan): every frame read (batches of records), each
// pixel added at its frame's position.
void load_positions(const LoadPlan& p, Scatter& sc, const std::function<void(double)>& progress, LoadTiming& timing) {
  const SparseSource& s = p.info.sparse;
  const RecordRun& run = p.info.records.runs.at(0);
  const std::string& file = p.info.records.files.at(run.file);
  bool big = false;
  const DType st = raw::parse_dtype(s.values_dtype, big);
  Fd fd(file);
  const std::uint64_t per = std::max<std::uint64_t>(1, (std::uint64_t(64) << 20) / std::max<std::uint64_t>(run.stride, 1));
  for (std::uint64_t first = 0; first < run.frames; first += per) {
    const std::uint64_t n = std::min(per, run.frames - first);
    bool any = false;
    for (std::uint64_t i = first; i < first + n && !any; ++i) any = sc.out_position(s.positions[i]) >= 0;
    if (!any) continue;
    double t = now_s();
    const std::vector<std::uint8_t> b = read_range(fd.fd, file, run.offset + first * run.stride, (n - 1) * run.stride + run.bytes);
    timing.read += now_s() - t;
    timing.bytes_read += b.size();
    t = now_s();
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::int64_t op = sc.out_position(s.positions[first + k]);
      if (op < 0) continue;
      sc.scanned[std::size_t(op)] = 1;
      const std::uint8_t* frame = b.data() + k * run.stride;
      for (std::uint64_t px = 0; px < sc.det_pixels; ++px) {
        const std::int64_t o = sc.out_pixel(px);
        if (o >= 0) sc.add(op, o, value_at(frame, px, st, big));
      }
    }
    timing.decode += now_s() - t;
    sc.check_overflow();
    if (progress) progress(double(first + n) / double(run.frames));
  }
}

}  // namespace

Dataset load_sparse(const LoadPlan& p, Backend backend, const std::string& representation,
                    const std::function<void(double)>& progress) {
  LoadTiming timing;
  const double t0 = now_s();
  HostArray4D out;
  out.shape = p.out_shape;
  out.dtype = p.out_dtype;
  out.bytes.resize(p.out_shape.nbytes(dtype_size(p.out_dtype)));
  std::memset(out.bytes.data(), 0, out.bytes.size());
  Scatter sc(p, out);
  timing.setup = now_s() - t0;
  if (progress) progress(0.0);
  if (p.info.sparse.kind == "stempy")
    load_stempy(p, sc, progress, timing);
  else if (p.info.sparse.kind == "frame_positions")
    load_positions(p, sc, progress, timing);
  else
    load_csr(p, sc, progress, timing);
  timing.total = now_s() - t0;
  const bool events = p.info.sparse.kind != "frame_positions";
  Provenance pv = load_provenance(p, "cpu", std::string("quantem-gpu host ") + (events ? "event" : "frame") +
                                                " scatter (" + p.info.sparse.kind + ")");
  if (events) pv.parameters["codec"] = "electron events";
  pv.parameters["timing"] = timing.to_json();
  nlohmann::json md = load_metadata(p);
  if (is_float_dtype(p.out_dtype))
    note_nonfinite(pv, md, zero_nonfinite_host(out.as<float>(), out.shape.elements()));
  // Positions where the file holds no frame (a stempy file before version 3 lists the positions it scanned): their
  // frames are empty, not counts of zero, and are named as the live acquisition names positions never received.
  std::vector<std::uint64_t> missing;
  for (std::size_t i = 0; i < sc.scanned.size(); ++i)
    if (!sc.scanned[i]) missing.push_back(i);
  md["missing"] = missing.size();
  md["missing_positions"] = missing.size() <= 10000 ? nlohmann::json(missing) : nlohmann::json("more than 10000");
  pv.parameters["missing_positions"] = missing.size();
  Dataset d = Dataset::from_host(std::move(out), std::move(md), std::move(pv));
  if (backend == Backend::cuda) d = d.to_device();
  return representation == "encoded" ? d.to_encoded() : d;
}

}  // namespace qgpu::io
