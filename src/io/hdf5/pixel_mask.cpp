#include "io/hdf5/pixel_mask.hpp"

#include "core/error.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

PixelMask read_pixel_mask(hid_t master, const std::string& master_path, std::size_t det_rows, std::size_t det_cols) {
  PixelMask m;
  {
    h5::QuietErrors quiet;
    const std::string path = kPixelMaskPath;
    std::size_t pos = 0;
    while ((pos = path.find('/', pos + 1)) != std::string::npos)
      if (H5Lexists(master, path.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return m;
    if (H5Lexists(master, kPixelMaskPath, H5P_DEFAULT) <= 0) return m;
  }
  const std::string where = "pixel mask '" + std::string(kPixelMaskPath) + "' in '" + master_path + "'";
  h5::Handle ds = h5::open_dataset(master, kPixelMaskPath, master_path);
  h5::Handle type(H5Dget_type(ds), H5Tclose);
  if (H5Tget_class(type) != H5T_INTEGER) throw FormatError(where + " is not an integer array");
  h5::Handle space(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  hsize_t dims[2] = {0, 0};
  if (rank == 2) H5Sget_simple_extent_dims(space, dims, nullptr);
  if (rank != 2 || dims[0] != det_rows || dims[1] != det_cols)
    throw FormatError(where + " has shape " +
                      (rank == 2 ? std::to_string(dims[0]) + "x" + std::to_string(dims[1])
                                 : "of rank " + std::to_string(rank)) +
                      "; the detector is " + std::to_string(det_rows) + "x" + std::to_string(det_cols));
  if (det_rows * det_cols > UINT32_MAX) throw FormatError(where + ": detector too large for 32-bit pixel indices");
  std::vector<std::uint32_t> values(det_rows * det_cols);
  h5::QuietErrors quiet;
  if (H5Dread(ds, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    throw FormatError("cannot read " + where);
  m.present = true;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] > 0) m.bad_pixels.push_back(std::uint32_t(i));
  return m;
}

void apply_pixel_mask_cpu(void* frames, DType dtype, std::size_t n_frames, std::size_t frame_pixels,
                          const std::uint32_t* pixels, std::size_t n_pixels) {
  dispatch_stored_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    apply_pixel_mask_cpu(static_cast<T*>(frames), n_frames, frame_pixels, pixels, n_pixels);
  });
}

}  // namespace qgpu::io
