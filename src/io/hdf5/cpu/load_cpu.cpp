#include "io/hdf5/cpu/load_cpu.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "io/hdf5/binning.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/codec/parallel_chunks.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/index/byte_source.hpp"
#include "io/hdf5/index/chunk_table.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/source/nonfinite.hpp"
#include "io/hdf5/pixel_mask.hpp"
#include "io/hdf5/read/read_plan.hpp"

namespace qgpu::io {

namespace {

// The memory type HDF5 converts the stored elements to (float64 files: float32, FileInfo::stored_as).
hid_t native_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    case DType::u32: return H5T_NATIVE_UINT32;
    case DType::i8: return H5T_NATIVE_INT8;
    case DType::i16: return H5T_NATIVE_INT16;
    case DType::i32: return H5T_NATIVE_INT32;
    case DType::f32: return H5T_NATIVE_FLOAT;
    default: throw DTypeError("no HDF5 memory type for " + dtype_name(t));
  }
}

struct OpenPart {
  const SourcePart* part = nullptr;
  h5::Handle file, ds;
};

std::vector<OpenPart> open_parts(const FileInfo& fi) {
  std::vector<OpenPart> open(fi.parts.size());
  for (std::size_t i = 0; i < fi.parts.size(); ++i) {
    open[i].part = &fi.parts[i];
    open[i].file = h5::open_file(fi.parts[i].file);
    open[i].ds = h5::open_dataset(open[i].file, fi.parts[i].dataset_path, fi.parts[i].file);
  }
  return open;
}

// The chunks of a part's table that the load reads: those holding frames of the scan region (every chunk along
// the detector dims). Table order is row-major over the chunk grid.
std::vector<std::size_t> chunks_read(const LoadPlan& p, const SourcePart& part, const ChunkTable& t) {
  const std::size_t rank = t.dims.size();
  std::vector<std::uint64_t> grid(rank);
  for (std::size_t i = 0; i < rank; ++i) grid[i] = t.dims[i] / t.chunk_dims[i] + (t.dims[i] % t.chunk_dims[i] != 0);
  const std::uint64_t per_lead = rank == 4 ? grid[2] * grid[3] : grid[1] * grid[2];  // chunks per leading coordinate
  const std::uint64_t leads = rank == 4 ? grid[0] * grid[1] : grid[0];
  if (per_lead == 0 || leads == 0) return {};
  std::vector<bool> need(static_cast<std::size_t>(leads), false);
  if (rank == 4) {
    for (std::uint64_t g0 = p.scan.row0 / t.chunk_dims[0]; g0 <= (p.scan.row0 + p.scan.rows - 1) / t.chunk_dims[0]; ++g0)
      for (std::uint64_t g1 = p.scan.col0 / t.chunk_dims[1]; g1 <= (p.scan.col0 + p.scan.cols - 1) / t.chunk_dims[1];
           ++g1)
        need[g0 * grid[1] + g1] = true;
  } else {
    const std::uint64_t first = part.first_frame, end = first + part.frames;
    for (std::size_t r = p.scan.row0; r < p.scan.row0 + p.scan.rows; ++r) {
      const std::uint64_t a = std::uint64_t(r) * p.info.shape.scan_cols + p.scan.col0, b = a + p.scan.cols;
      const std::uint64_t lo = std::max(a, first), hi = std::min(b, end);
      if (lo >= hi) continue;
      for (std::uint64_t g = (lo - first) / t.chunk_dims[0]; g <= (hi - 1 - first) / t.chunk_dims[0]; ++g) need[g] = true;
    }
  }
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < t.chunks.size(); ++i)
    if (need[i / per_lead] && t.chunks[i].size > 0) out.push_back(i);
  return out;
}

// Before HDF5's filter pipeline sees a chunk (issue 25). The bitshuffle plugin trusts what it reads: an element
// size of 0 in the filter's cd_values is a SIGFPE, a chunk whose header states fewer bytes than the chunk holds
// leaves HDF5 reading past the plugin's buffer (garbage frames or a SIGSEGV), and LZ4_decompress_fast reads past a
// damaged block. So the layout and every chunk's place and size are checked in the chunk table (read_chunk_table:
// chunk dims within the dataset, chunks inside the file, raw chunks of their full size), the filter parameters by
// our codec, and every bitshuffle chunk the load reads is decoded once by our host decoder (every field and block
// checked) into scratch: the plugin then only sees chunks that are whole.
void check_before_hdf5_reads(const LoadPlan& p) {
  const FileInfo& fi = p.info;
  if (fi.chunk_dims.empty()) return;  // contiguous or compact: no chunks, no filters
  std::optional<codec::BitshuffleParams> bp;
  for (const FilterInfo& f : fi.filters)
    if (f.id == h5::kBitshuffleFilter) bp = bitshuffle_params(fi);
  const bool decode_check = bp && fi.filters.size() == 1;  // chunks as stored are bitshuffle streams
  for (std::size_t k = 0; k < fi.parts.size(); ++k) {
    const SourcePart& part = fi.parts[k];
    const std::shared_ptr<const ChunkTable> table =
        k < fi.part_tables.size() && fi.part_tables[k]
            ? fi.part_tables[k]
            : std::make_shared<const ChunkTable>(read_chunk_table(part.file, part.dataset_path));
    if (!decode_check) continue;
    const ChunkTable& t = *table;
    std::uint64_t elems = 1;
    for (std::uint64_t d : t.chunk_dims) elems = checked_mul(elems, d, "elements of a chunk of '" + t.dataset_path + "'");
    const std::uint64_t chunk_bytes = checked_mul(elems, bp->elem_size, "bytes of a chunk of '" + t.dataset_path + "'");
    const std::vector<std::size_t> todo = chunks_read(p, part, t);
    // One decoded chunk of scratch per thread at a time, at most 1 GiB in all.
    const unsigned threads = unsigned(std::clamp<std::uint64_t>((std::uint64_t(1) << 30) / chunk_bytes, 1,
                                                                codec::resolve_threads(p.read_threads)));
    const h5index::FileByteSource src(t.file);
    std::mutex mu;
    std::optional<std::pair<std::size_t, std::string>> first;
    codec::parallel_indices(todo.size(), threads, [&](std::size_t j) {
      const std::size_t i = todo[j];
      const ChunkLocation& c = t.chunks[i];
      try {
        if (c.filter_mask & 1) {  // stored without bitshuffle: raw, so exactly one chunk of bytes
          if (c.size != chunk_bytes)
            throw FormatError("stored without its filter in " + std::to_string(c.size) + " bytes; a raw chunk holds " +
                              std::to_string(chunk_bytes));
          return;
        }
        const std::vector<std::uint8_t> bytes = src.read(c.offset, c.size, "chunk");
        const std::unique_ptr<std::uint8_t[]> scratch(new std::uint8_t[static_cast<std::size_t>(chunk_bytes)]);
        codec::decode_chunk(*bp, static_cast<std::size_t>(elems), bytes.data(), bytes.size(), scratch.get());
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        if (!first || i < first->first) first = {i, e.what()};
      }
    });
    if (first)
      throw FormatError("cannot decode '" + t.dataset_path + "' in '" + t.file + "': chunk " +
                        std::to_string(first->first) + " is damaged (" + first->second + ")");
  }
}

[[noreturn]] void read_failed(const SourcePart& part, std::size_t r0, std::size_t rows) {
  throw FormatError("cannot decode scan rows " + std::to_string(r0) + ".." + std::to_string(r0 + rows - 1) + " from '" +
                    part.dataset_path + "' in '" + part.file +
                    "': a chunk is corrupt, truncated or needs a missing filter");
}

// Reads `rows` whole scan rows starting at scan row r0 (frames of the scan region's columns, full detector) into
// out[rows * scan.cols][det_r][det_c]. Frames of one row may lie in two parts: each part reads its share in one call.
void read_scan_rows(const std::vector<OpenPart>& parts, const LoadPlan& p, std::size_t r0, std::size_t rows,
                    void* out) {
  const FileInfo& fi = p.info;
  const hsize_t det_r = fi.shape.det_rows, det_c = fi.shape.det_cols;
  hsize_t mcount[3] = {rows * p.scan.cols, det_r, det_c};
  h5::Handle mspace(H5Screate_simple(3, mcount, nullptr), H5Sclose);
  h5::QuietErrors quiet;
  if (fi.dims.size() == 4) {  // one 4D dataset
    const OpenPart& op = parts.front();
    h5::Handle fspace(H5Dget_space(op.ds), H5Sclose);
    const hsize_t start[4] = {r0, p.scan.col0, 0, 0}, count[4] = {rows, p.scan.cols, det_r, det_c};
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
    if (H5Dread(op.ds, native_type(fi.dtype), mspace, fspace, H5P_DEFAULT, out) < 0) read_failed(*op.part, r0, rows);
    return;
  }
  for (const OpenPart& op : parts) {
    const std::uint64_t first = op.part->first_frame, end = first + op.part->frames;
    h5::Handle fspace(H5Dget_space(op.ds), H5Sclose);
    H5Sselect_none(fspace);
    H5Sselect_none(mspace);
    bool any = false;
    for (std::size_t r = r0; r < r0 + rows; ++r) {
      const std::uint64_t a = std::uint64_t(r) * fi.shape.scan_cols + p.scan.col0, b = a + p.scan.cols;
      const std::uint64_t lo = std::max(a, first), hi = std::min(b, end);
      if (lo >= hi) continue;
      const hsize_t fst[3] = {lo - first, 0, 0}, ct[3] = {hi - lo, det_r, det_c};
      const hsize_t mst[3] = {(r - r0) * p.scan.cols + (lo - a), 0, 0};
      H5Sselect_hyperslab(fspace, H5S_SELECT_OR, fst, nullptr, ct, nullptr);
      H5Sselect_hyperslab(mspace, H5S_SELECT_OR, mst, nullptr, ct, nullptr);
      any = true;
    }
    if (any && H5Dread(op.ds, native_type(fi.dtype), mspace, fspace, H5P_DEFAULT, out) < 0)
      read_failed(*op.part, r0, rows);
  }
}

}  // namespace

Dataset load_cpu(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  check_before_hdf5_reads(p);
  const std::vector<OpenPart> parts = open_parts(fi);
  // Dense: the output array; encoded: one output row at a time, appended to the encoded resident.
  const bool encoded = p.representation == "encoded";
  auto enc = encoded ? std::make_shared<EncodedResident>(p.out_shape, p.out_dtype, Backend::cpu) : nullptr;
  if (enc) enc->request_radial_basis(p.radial_basis);
  if (enc) enc->request_scan_binned(p.scan_binned);
  HostArray4D out;
  out.shape = p.out_shape;
  out.dtype = p.out_dtype;
  const std::size_t row_out_bytes = p.out_shape.scan_cols * p.out_shape.frame_pixels() * dtype_size(p.out_dtype);
  out.bytes.resize(encoded ? row_out_bytes : out.shape.nbytes(dtype_size(out.dtype)));

  const std::size_t row_frames = p.bin_scan * p.scan.cols;
  std::vector<std::uint8_t> block(row_frames * fi.frame_bytes());
  const std::size_t out_row_bytes = p.out_shape.scan_cols * p.out_shape.frame_pixels() * dtype_size(p.out_dtype);
  for (std::size_t orow = 0; orow < p.out_shape.scan_rows; ++orow) {
    read_scan_rows(parts, p, p.scan.row0 + orow * p.bin_scan, p.bin_scan, block.data());
    if (p.zero_bad_pixels)
      apply_pixel_mask_cpu(block.data(), fi.dtype, row_frames, fi.shape.frame_pixels(), p.bad_pixels.data(),
                           p.bad_pixels.size());
    std::uint8_t* dst = out.bytes.data() + (encoded ? 0 : orow * out_row_bytes);
    dispatch_stored_dtype(fi.dtype, [&](auto t) {
      using T = decltype(t);
      const T* in = reinterpret_cast<const T*>(block.data());
      if (p.binned()) {
        bin_scan_row<T, binned_t<T>>(in, p.scan.cols, fi.shape.det_rows, fi.shape.det_cols, p.detector.row0,
                                       p.detector.col0, p.out_shape.scan_cols, p.out_shape.det_rows,
                                       p.out_shape.det_cols, p.bin_scan, p.bin_detector,
                                       reinterpret_cast<binned_t<T>*>(dst));
      } else {
        bin_scan_row<T, T>(in, p.scan.cols, fi.shape.det_rows, fi.shape.det_cols, p.detector.row0, p.detector.col0,
                           p.out_shape.scan_cols, p.out_shape.det_rows, p.out_shape.det_cols, 1, 1,
                           reinterpret_cast<T*>(dst));
      }
    });
    if (encoded) enc->append(dst, p.out_shape.scan_cols);
    if (progress) progress(double(orow + 1) / double(p.out_shape.scan_rows));
  }
  if (encoded) return encoded_dataset(p, std::move(enc), load_provenance(p, "cpu", "hdf5 filter plugin"));
  Provenance pv = load_provenance(p, "cpu", "hdf5 filter plugin");
  nlohmann::json md = load_metadata(p);
  if (is_float_dtype(p.out_dtype))
    note_nonfinite(pv, md, zero_nonfinite_host(out.as<float>(), out.shape.elements()));
  return Dataset::from_host(std::move(out), std::move(md), std::move(pv));
}

}  // namespace qgpu::io
