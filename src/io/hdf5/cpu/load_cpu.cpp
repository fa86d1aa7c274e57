#include "io/hdf5/cpu/load_cpu.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5/binning.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/load_provenance.hpp"

namespace qgpu::io {

namespace {

hid_t native_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    default: return H5T_NATIVE_UINT32;
  }
}

// "frame F (scan row R, column C) in " when the failing frame is known, else "".
std::string frame_name(std::optional<std::size_t> f, std::size_t scan_cols) {
  if (!f) return "";
  return "frame " + std::to_string(*f) + " (scan row " + std::to_string(*f / scan_cols) + ", column " +
         std::to_string(*f % scan_cols) + ") in ";
}

// After a failed read of scan rows r0..: the first frame (file frame index) that does not decode on its own.
std::optional<std::size_t> first_bad_frame(hid_t ds, const LoadPlan& p, std::size_t r0, std::size_t rows) {
  const FileInfo& fi = p.info;
  const int rank = static_cast<int>(fi.dims.size());
  std::vector<std::uint8_t> frame(fi.shape.det_rows * fi.shape.det_cols * dtype_size(fi.dtype));
  hsize_t mcount[3] = {1, fi.shape.det_rows, fi.shape.det_cols};
  h5::Handle mspace(H5Screate_simple(3, mcount, nullptr), H5Sclose);
  h5::QuietErrors quiet;
  for (std::size_t r = r0; r < r0 + rows; ++r)
    for (std::size_t c = p.scan.col0; c < p.scan.col0 + p.scan.cols; ++c) {
      h5::Handle fspace(H5Dget_space(ds), H5Sclose);
      std::vector<hsize_t> start(rank, 0), count(rank, 1);
      if (rank == 4) {
        start = {r, c, 0, 0};
        count = {1, 1, fi.shape.det_rows, fi.shape.det_cols};
      } else {
        start = {r * fi.shape.scan_cols + c, 0, 0};
        count = {1, fi.shape.det_rows, fi.shape.det_cols};
      }
      H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
      if (H5Dread(ds, native_type(fi.dtype), mspace, fspace, H5P_DEFAULT, frame.data()) < 0)
        return r * fi.shape.scan_cols + c;
    }
  return std::nullopt;
}

// Reads `rows` whole scan rows starting at scan row r0 (frames of the scan region's columns, full detector).
void read_scan_rows(hid_t ds, const LoadPlan& p, std::size_t r0, std::size_t rows, void* out) {
  const FileInfo& fi = p.info;
  const int rank = static_cast<int>(fi.dims.size());
  std::vector<hsize_t> start(rank, 0), count(rank);
  h5::Handle fspace(H5Dget_space(ds), H5Sclose);
  if (rank == 4) {
    start = {r0, p.scan.col0, 0, 0};
    count = {rows, p.scan.cols, fi.shape.det_rows, fi.shape.det_cols};
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  } else {
    H5Sselect_none(fspace);
    for (std::size_t r = r0; r < r0 + rows; ++r) {
      hsize_t st[3] = {r * fi.shape.scan_cols + p.scan.col0, 0, 0};
      hsize_t ct[3] = {p.scan.cols, fi.shape.det_rows, fi.shape.det_cols};
      H5Sselect_hyperslab(fspace, H5S_SELECT_OR, st, nullptr, ct, nullptr);
    }
  }
  hsize_t mcount[3] = {rows * p.scan.cols, fi.shape.det_rows, fi.shape.det_cols};
  h5::Handle mspace(H5Screate_simple(3, mcount, nullptr), H5Sclose);
  h5::QuietErrors quiet;
  if (H5Dread(ds, native_type(fi.dtype), mspace, fspace, H5P_DEFAULT, out) < 0)
    throw FormatError("cannot decode " + frame_name(first_bad_frame(ds, p, r0, rows), fi.shape.scan_cols) +
                      "scan rows " + std::to_string(r0) + ".." + std::to_string(r0 + rows - 1) +
                      " of '" + fi.dataset_path + "' in '" + fi.path +
                      "': a chunk is corrupt, truncated or needs a missing filter");
}

}  // namespace

Dataset load_cpu(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  h5::Handle file = h5::open_file(fi.path);
  h5::Handle ds = h5::open_dataset(file, fi.dataset_path, fi.path);
  HostArray4D out;
  out.shape = p.out_shape;
  out.dtype = p.out_dtype;
  out.bytes.resize(out.shape.elements() * dtype_size(out.dtype));

  const std::size_t row_frames = p.bin_scan * p.scan.cols;
  std::vector<std::uint8_t> block(row_frames * fi.frame_bytes());
  const std::size_t out_row_bytes = p.out_shape.scan_cols * p.out_shape.frame_pixels() * dtype_size(p.out_dtype);
  for (std::size_t orow = 0; orow < p.out_shape.scan_rows; ++orow) {
    read_scan_rows(ds, p, p.scan.row0 + orow * p.bin_scan, p.bin_scan, block.data());
    std::uint8_t* dst = out.bytes.data() + orow * out_row_bytes;
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
    if (progress) progress(double(orow + 1) / double(p.out_shape.scan_rows));
  }
  return Dataset::from_host(std::move(out), load_metadata(p), load_provenance(p, "cpu", "hdf5 filter plugin"));
}

}  // namespace qgpu::io
