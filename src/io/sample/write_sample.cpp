#include <hdf5.h>

#include <algorithm>
#include <future>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

namespace {

hid_t file_type(DType t, bool big_endian) {
  if (big_endian) return t == DType::u8 ? H5T_STD_U8BE : t == DType::u16 ? H5T_STD_U16BE : H5T_STD_U32BE;
  return t == DType::u8 ? H5T_STD_U8LE : t == DType::u16 ? H5T_STD_U16LE : H5T_STD_U32LE;
}
hid_t mem_type(DType t) {
  return t == DType::u8 ? H5T_NATIVE_UINT8 : t == DType::u16 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32;
}

void write_double_attr(hid_t obj, const char* name, double v) {
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle a(H5Acreate2(obj, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
}

h5::Handle make_group(hid_t parent, const char* name) {
  return h5::Handle(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
}

}  // namespace

void write_calibration_and_truth(hid_t entry, const SampleSpec& s) {
  const Sampling sm = sampling(s);
  h5::Handle cal = make_group(entry, "calibration");
  write_double_attr(cal, "energy_kev", s.energy_kev);
  write_double_attr(cal, "semiangle_mrad", s.semiangle_mrad);
  write_double_attr(cal, "scan_step_angstrom", sm.scan_step_angstrom);
  write_double_attr(cal, "detector_mrad_per_pixel", sm.mrad_per_pixel);
  write_double_attr(cal, "disk_radius_px", sm.disk_radius_px);
  if (s.defocus_in_calibration) write_double_attr(cal, "defocus_angstrom", s.defocus_angstrom);
  write_double_attr(cal, "wavelength_angstrom", sm.wavelength_angstrom);
  write_double_attr(cal, "dose_per_frame", sm.dose_per_frame);

  h5::Handle truth = make_group(entry, "truth");
  // The aberrations and the scan-detector rotation of the simulation (not calibration: no reader takes them).
  write_double_attr(truth, "C1_angstrom", s.defocus_angstrom);
  write_double_attr(truth, "A1_angstrom", s.astigmatism_angstrom);
  write_double_attr(truth, "A1_angle_deg", s.astigmatism_angle_deg);
  write_double_attr(truth, "rotation_deg", s.rotation_deg);
  write_double_attr(truth, "transpose", s.transpose ? 1.0 : 0.0);
  const std::vector<float> phase = object_phase_at_scan(s);
  hsize_t pd[2] = {s.scan_rows, s.scan_cols};
  h5::Handle psp(H5Screate_simple(2, pd, nullptr), H5Sclose);
  h5::Handle pds(H5Dcreate2(truth, "phase", H5T_IEEE_F32LE, psp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  H5Dwrite(pds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, phase.data());
}


// Writes the sample at `path` (a temporary file of write_sample); every HDF5 handle is closed on return.
static void write_sample_to(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress) {
  if (s.compress) h5::ensure_bitshuffle_filter();
  h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw IoError("cannot create '" + path + "'");
  h5::Handle entry = make_group(file, "/entry");
  h5::Handle data = make_group(entry, "data");

  const std::size_t frames = s.scan_rows * s.scan_cols;
  const int rank = s.four_d ? 4 : 3;
  std::vector<hsize_t> dims = s.four_d ? std::vector<hsize_t>{s.scan_rows, s.scan_cols, s.det_rows, s.det_cols}
                                       : std::vector<hsize_t>{frames, s.det_rows, s.det_cols};
  std::vector<hsize_t> chunk(rank, 1);
  chunk[rank - 2] = s.det_rows;
  chunk[rank - 1] = s.det_cols;
  h5::Handle space(H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(dcpl, rank, chunk.data());
  if (s.compress) {
    // Default block size, LZ4: the same cd_values as the plugin writer had, so h5py and the plugin read the file.
    const unsigned cd[2] = {0, h5::kBitshuffleLz4};
    if (H5Pset_filter(dcpl, h5::kBitshuffleFilter, H5Z_FLAG_MANDATORY, 2, cd) < 0)
      throw IoError("cannot set the bitshuffle filter on '" + path + "'");
  }
  h5::Handle ds(H5Dcreate2(data, "data", file_type(s.dtype, s.big_endian), space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw IoError("cannot create /entry/data/data in '" + path + "'");
  {
    const long long shape[2] = {(long long)s.scan_rows, (long long)s.scan_cols};
    hsize_t two = 2;
    h5::Handle sp(H5Screate_simple(1, &two, nullptr), H5Sclose);
    h5::Handle a(H5Acreate2(ds, "scan_shape", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    H5Awrite(a, H5T_NATIVE_LLONG, shape);
  }

  // Simulate the next batch of scan rows while the current one is compressed and written.
  const std::size_t frame_elems = s.det_rows * s.det_cols;
  const std::size_t frame_bytes = frame_elems * dtype_size(s.dtype);
  // Big-endian: the encoder shuffles the elements in stored (big-endian) order, as the plugin does on H5Dwrite.
  const io::codec::BitshuffleParams codec{dtype_size(s.dtype), io::codec::default_block_elems(dtype_size(s.dtype)),
                                          io::codec::BlockCompression::lz4, 0, s.big_endian};
  std::vector<std::vector<std::uint8_t>> chunk_sets[2];  // batch k encodes into set k % 2 while k - 1 is written
  std::size_t batch = 0;
  std::future<void> writing;  // declared after what it uses: destroyed (and so joined) first
  // 1 GiB batches: each simulate_frames call first builds the object, probe and transmission on one thread
  // (~50 ms for a 512 x 512 scan), so fewer, larger batches keep the cores busy. Values do not depend on batching.
  const std::size_t rows_per_batch = std::max<std::size_t>(1, (std::size_t(1) << 30) / (frame_bytes * s.scan_cols));
  auto simulate_rows = [&](std::size_t r0) {
    const std::size_t rows = std::min(rows_per_batch, s.scan_rows - r0);
    std::vector<std::uint8_t> buf(rows * s.scan_cols * frame_bytes);
    simulate_frames(s, r0 * s.scan_cols, rows * s.scan_cols, buf.data());
    return buf;
  };
  std::future<std::vector<std::uint8_t>> next = std::async(std::launch::async, simulate_rows, 0);
  for (std::size_t r0 = 0; r0 < s.scan_rows; r0 += rows_per_batch) {
    std::vector<std::uint8_t> buf = next.get();
    if (r0 + rows_per_batch < s.scan_rows) next = std::async(std::launch::async, simulate_rows, r0 + rows_per_batch);
    const std::size_t rows = std::min(rows_per_batch, s.scan_rows - r0);
    std::vector<hsize_t> start(rank, 0), count(dims);
    if (s.four_d) {
      start[0] = r0;
      count[0] = rows;
    } else {
      start[0] = r0 * s.scan_cols;
      count[0] = rows * s.scan_cols;
    }
    if (s.compress) {
      // Our encoder on all cores, then direct chunk writes (the chunks are the plugin's bytes, filter mask 0) on
      // one writer thread while the next batch is encoded. Only that thread calls HDF5 meanwhile.
      const std::size_t n = rows * s.scan_cols, first = r0 * s.scan_cols;
      std::vector<std::vector<std::uint8_t>>& chunks = chunk_sets[batch++ % 2];
      io::codec::encode_chunks(codec, frame_elems, buf.data(), n, chunks, s.threads);
      if (writing.valid()) writing.get();  // the previous batch is on disk (rethrows its error)
      writing = std::async(std::launch::async, [&, n, first] {
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t f = first + i;
          std::vector<hsize_t> offset(rank, 0);
          if (s.four_d) {
            offset[0] = f / s.scan_cols;
            offset[1] = f % s.scan_cols;
          } else {
            offset[0] = f;
          }
          if (H5Dwrite_chunk(ds, H5P_DEFAULT, 0, offset.data(), chunks[i].size(), chunks[i].data()) < 0)
            throw IoError("cannot write frame " + std::to_string(f) + " to '" + path + "'");
        }
      });
    } else {
      h5::Handle fspace(H5Dget_space(ds), H5Sclose);
      H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
      h5::Handle mspace(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
      if (H5Dwrite(ds, mem_type(s.dtype), mspace, fspace, H5P_DEFAULT, buf.data()) < 0)
        throw IoError("cannot write frames to '" + path + "'");
    }
    if (progress) progress(double(r0 + rows) / double(s.scan_rows));
  }
  if (writing.valid()) writing.get();

  write_calibration_and_truth(entry, s);
}

void write_sample(const std::string& path, const SampleSpec& s, const std::function<void(double)>& progress) {
  sampling(s);  // validates the spec (sizes checked) before any file is created
  AtomicOutput out(path, "sample output");  // absent or a regular file: never a device node or FIFO
  write_sample_to(out.temp_path(), s, progress);
  out.commit();
}

}  // namespace qgpu::sample
