// The sample as a multi-file EIGER/ARINA acquisition: master file with external links to data files.
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/atomic_output.hpp"
#include "core/error.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "io/sample/sample.hpp"

namespace qgpu::sample {

namespace {

namespace fs = std::filesystem;

h5::Handle group(hid_t parent, const char* name) {
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  return h5::Handle(H5Gcreate2(parent, name, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
}

void write_scalar(hid_t parent, const char* name, long long v) {
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle ds(H5Dcreate2(parent, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  H5Dwrite(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
}

// One data file: /entry/data/data holding frames [first, first + count), bitshuffle+LZ4 chunks written directly.
void write_data_file(const std::string& path, const SampleSpec& s, std::size_t first, std::size_t count) {
  io::DectrisLayout l;
  l.det_rows = s.det_rows;
  l.det_cols = s.det_cols;
  l.dtype = s.dtype;
  l.frames = count;
  l.big_endian = s.big_endian;
  l.threads = s.threads;
  io::DectrisWriter w;
  w.open(path, l, "sample data file");
  // Batches of at most 256 MiB of frames bound the memory for large samples.
  const std::size_t frame_bytes = s.det_rows * s.det_cols * dtype_size(s.dtype);
  const std::size_t batch = std::max<std::size_t>(1, (std::size_t(256) << 20) / frame_bytes);
  std::vector<std::uint8_t> buf(std::min(batch, count) * frame_bytes);
  for (std::size_t f0 = 0; f0 < count; f0 += batch) {
    const std::size_t n = std::min(batch, count - f0);
    simulate_frames(s, first + f0, n, buf.data());
    w.write_frames(f0, n, buf.data());  // encoded before it returns: buf may be refilled
  }
  w.close();
}

std::string data_file_name(const std::string& master, std::size_t k) {
  std::string stem = fs::path(master).stem().string();
  const std::string tail = "_master";
  if (stem.size() > tail.size() && stem.compare(stem.size() - tail.size(), tail.size(), tail) == 0)
    stem.resize(stem.size() - tail.size());
  char num[32];
  std::snprintf(num, sizeof(num), "_data_%06zu.h5", k);
  return stem + num;
}

}  // namespace

std::vector<std::uint32_t> sample_bad_pixels(const SampleSpec& s) {
  const std::size_t r = s.det_rows, c = s.det_cols;
  auto at = [c](std::size_t row, std::size_t col) { return std::uint32_t(row * c + col); };
  const std::set<std::uint32_t> px = {at(r / 2, c / 2), at(r / 2, (c / 2 + 1) % c), at(1 % r, 2 % c),
                                      at(r / 3, 2 * c / 3), at(r - 1, c - 1)};
  return {px.begin(), px.end()};
}

std::vector<std::string> write_sample_acquisition(const std::string& path, const SampleSpec& s, std::size_t files,
                                                  const std::function<void(double)>& progress) {
  sampling(s);  // validates the spec (sizes checked) before any file is created
  const std::size_t frames = s.scan_rows * s.scan_cols;
  if (files == 0 || files > frames)
    throw InvalidArgument("files must be between 1 and the " + std::to_string(frames) + " frames of the scan");
  h5::ensure_bitshuffle_filter();
  const std::size_t per_file = (frames + files - 1) / files;
  const std::size_t used_files = (frames + per_file - 1) / per_file;  // ceil split may need fewer files
  const fs::path dir = fs::path(path).parent_path();
  std::vector<std::string> written;
  AtomicOutput out(path, "sample output");  // the master: absent or a regular file, never a device node or FIFO
  {
    h5::Handle master(H5Fcreate(out.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!master.valid()) throw IoError("cannot create '" + path + "'");
    h5::Handle data = group(master, "/entry/data");
    for (std::size_t k = 0; k < used_files; ++k) {
      const std::size_t first = k * per_file, count = std::min(per_file, frames - first);
      const std::string name = data_file_name(path, k + 1);
      const std::string full = (dir / name).string();
      write_data_file(full, s, first, count);
      char link[32];
      std::snprintf(link, sizeof(link), "data_%06zu", k + 1);
      if (H5Lcreate_external(name.c_str(), "/entry/data/data", data, link, H5P_DEFAULT, H5P_DEFAULT) < 0)
        throw IoError("cannot link " + name + " from '" + path + "'");
      written.push_back(full);
      if (progress) progress(double(k + 1) / double(used_files));
    }
    h5::Handle spec = group(master, "/entry/instrument/detector/detectorSpecific");
    write_scalar(spec, "ntrigger", (long long)s.scan_rows);
    write_scalar(spec, "nimages", (long long)s.scan_cols);
    std::vector<std::uint32_t> mask(s.det_rows * s.det_cols, 0);
    const std::uint32_t flags[] = {1, 2, 4, 8, 16};
    const std::vector<std::uint32_t> bad = sample_bad_pixels(s);
    for (std::size_t i = 0; i < bad.size(); ++i) mask[bad[i]] = flags[i % 5];
    const hsize_t md[2] = {s.det_rows, s.det_cols};
    h5::Handle msp(H5Screate_simple(2, md, nullptr), H5Sclose);
    h5::Handle mds(H5Dcreate2(spec, "pixel_mask", H5T_STD_U32LE, msp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    H5Dwrite(mds, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, mask.data());

    // /entry exists already (created with /entry/data): open it, as H5Gcreate2 would fail and leave the master
    // without its calibration.
    h5::Handle entry(H5Gopen2(master, "/entry", H5P_DEFAULT), H5Gclose);
    if (!entry.valid()) throw IoError("cannot open /entry in '" + path + "'");
    write_calibration_and_truth(entry, s);
  }  // every handle of the master closed before the rename
  out.commit();
  return written;
}

}  // namespace qgpu::sample
