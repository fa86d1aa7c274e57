#include "io/hdf5/cpu/load_cpu.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "io/hdf5/binning.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/hdf5/pixel_mask.hpp"

namespace qgpu::io {

namespace {

hid_t native_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    default: return H5T_NATIVE_UINT32;
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
  const std::vector<OpenPart> parts = open_parts(fi);
  // Dense: the output array; encoded: one output row at a time, appended to the encoded resident.
  const bool encoded = p.representation == "encoded";
  auto enc = encoded ? std::make_shared<EncodedResident>(p.out_shape, p.out_dtype, Backend::cpu) : nullptr;
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
      apply_pixel_mask_cpu(block.data(), fi.dtype, row_frames, fi.shape.frame_pixels(), fi.bad_pixels.data(),
                           fi.bad_pixels.size());
    std::uint8_t* dst = out.bytes.data() + (encoded ? 0 : orow * out_row_bytes);
    dispatch_count_dtype(fi.dtype, [&](auto t) {
      using T = decltype(t);
      const T* in = reinterpret_cast<const T*>(block.data());
      if (p.binned()) {
        bin_scan_row<T, std::uint32_t>(in, p.scan.cols, fi.shape.det_rows, fi.shape.det_cols, p.detector.row0,
                                       p.detector.col0, p.out_shape.scan_cols, p.out_shape.det_rows,
                                       p.out_shape.det_cols, p.bin_scan, p.bin_detector,
                                       reinterpret_cast<std::uint32_t*>(dst));
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
  return Dataset::from_host(std::move(out), load_metadata(p), load_provenance(p, "cpu", "hdf5 filter plugin"));
}

}  // namespace qgpu::io
