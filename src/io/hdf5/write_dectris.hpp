#pragma once
// The one writer of DECTRIS EIGER/ARINA-style HDF5 files: /entry/data/data of (frames, det_r, det_c) (or
// (scan_r, scan_c, det_r, det_c)), one frame per chunk, bitshuffle + LZ4/zstd (HDF5 filter 32008 with the cd_values
// the plugin's set_local stores, so h5py + hdf5plugin and the HDF5 plugin read it) or uncompressed, a scan_shape
// attribute, our /entry/calibration group, the pixel mask where an EIGER master keeps it and the provenance as JSON.
// Chunks go in with H5Dwrite_chunk: already compressed ones verbatim (write_chunk: a live acquisition saving the
// detector's chunks) or frames encoded here by our host encoder on all cores (write_frames). The file is written to
// a temporary beside the target and renamed over it by close() (core/atomic_output.hpp): never over anything but a
// regular file, nothing left behind when the writer is destroyed without close().
// Used by `qgpu convert`, `qgpu sample` and the live acquisition's save.
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "io/hdf5/codec/bitshuffle_params.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu {
class AtomicOutput;
}

namespace qgpu::io {

struct DectrisLayout {
  std::size_t det_rows = 0, det_cols = 0;
  DType dtype = DType::u16;  // u8/u16/u32, i8/i16/i32 or f32 (stored as HDF5 integers / IEEE float)
  std::uint64_t frames = 0;
  std::size_t scan_rows = 0, scan_cols = 0;  // 0 x 0: no scan_shape attribute; else rows x cols == frames
  bool four_d = false;                       // store (scan_r, scan_c, det_r, det_c), chunks (1, 1, det_r, det_c)
  bool big_endian = false;                   // the elements' byte order in the file
  bool compress = true;                      // false: plain chunks without a filter (test layouts)
  // Filter 32008 parameters: elem_size must be the dtype's; block_elems 0 = the plugin's default; lz4 or zstd.
  codec::BitshuffleParams bitshuffle{0, 0, codec::BlockCompression::lz4, 0, false};
  unsigned threads = 0;  // encoder threads of write_frames (0 = one per core)
  // HDF5 1.10 file format (libver bounds v110..v110): the chunk index of a fixed-size dataset is a fixed array
  // (O(1) inserts, for hundreds of thousands of frames) instead of the version 1 B-tree; read by HDF5 >= 1.10.
  bool fixed_array_index = false;
  nlohmann::json calibration = nlohmann::json::object();  // {key: number}: float64 attributes of /entry/calibration
  nlohmann::json provenance;                              // not null: /entry/provenance, a JSON string dataset
  bool has_pixel_mask = false;            // /entry/instrument/detector/detectorSpecific/pixel_mask (uint32, 1 = bad)
  std::vector<std::uint32_t> bad_pixels;  // flat indices row * det_cols + col
};

// One thread calls a writer (it runs its own writer thread for write_frames); frames may come in any order.
class DectrisWriter {
 public:
  DectrisWriter();
  ~DectrisWriter();  // without close(): the temporary file is removed, the target untouched
  DectrisWriter(const DectrisWriter&) = delete;
  DectrisWriter& operator=(const DectrisWriter&) = delete;

  // Creates the file (a temporary beside `path`) with its dataset, attributes, calibration, mask and provenance.
  // InvalidArgument for a layout it cannot write (shape 0, scan shape not matching the frames, a dtype not listed,
  // element size not the dtype's); IoError naming the path when it cannot be created (a folder, FIFO, device...).
  // `what` names the output in errors ("convert output", "sample data file", ...).
  void open(const std::string& path, const DectrisLayout& layout, const std::string& what = "HDF5 output");

  // The codec parameters of the dataset (block size resolved), as chunks given to write_chunk must be encoded.
  const codec::BitshuffleParams& params() const { return params_; }
  // The dataset's filter cd_values as stored in the file ({major, minor, elem_size, block, compression[, level]}).
  std::vector<unsigned> stored_cd_values() const;

  // Stores one already compressed chunk as frame `frame` (flat scan index) verbatim. Its 12-byte bitshuffle header
  // is checked (decoded size = frame bytes, block size = the dataset's): InvalidArgument otherwise, and for a frame
  // out of range; the blocks themselves are not decoded. Uncompressed layouts take the frame's stored bytes.
  void write_chunk(std::uint64_t frame, const std::uint8_t* chunk, std::size_t bytes);
  // Encodes frames [first, first + n) (n frames of det_rows x det_cols elements in host order at `frames`) on all
  // cores and stores them; the caller may reuse `frames` on return (the chunks are written while the next call
  // encodes).
  void write_frames(std::uint64_t first, std::size_t n, const void* frames);

  std::uint64_t frames_written();  // distinct frames stored so far (waits for the pending batch)
  hid_t entry() const;             // /entry, for groups of the caller's own (the sample's truth); valid until close()
  const std::string& path() const;

  // Flushes, closes every HDF5 handle and renames the file over the target. Frames never written read as zeros
  // (HDF5's fill value) and their chunks are absent (our reader reports the file as not ready).
  void close();

 private:
  void wait_pending();
  void put_chunk(std::uint64_t frame, const void* data, std::size_t bytes);

  DectrisLayout layout_;
  codec::BitshuffleParams params_;
  std::unique_ptr<AtomicOutput> out_;
  h5::Handle file_, entry_, dataset_;  // closed in reverse order by close() or the destructor
  std::vector<bool> written_;
  std::uint64_t written_count_ = 0;
  std::vector<std::vector<std::uint8_t>> chunk_sets_[2];
  unsigned next_set_ = 0;
  std::future<void> pending_;  // the previous write_frames batch being stored
};

// The HDF5 file datatype of a dtype in a byte order (u8/u16/u32, i8/i16/i32, f32, f64); InvalidArgument otherwise.
hid_t dectris_file_type(DType t, bool big_endian);

}  // namespace qgpu::io
