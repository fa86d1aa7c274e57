#pragma once
// Metadata and readiness of an HDF5 4D-STEM file, read without touching the frame data.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "io/hdf5/index/chunk_table.hpp"
#include "io/source/frame_codec.hpp"
#include "io/source/frame_records.hpp"
#include "io/source/sparse_source.hpp"
#include "io/source/transposed_layout.hpp"
#include "resident/shape.hpp"

namespace qgpu::io {

// Where datasets are looked for when no path is given (EIGER/ARINA layout first).
inline const std::vector<std::string> kDefaultDatasetPaths = {"/entry/data/data", "/entry/data/data_000001",
                                                              "/data", "/4DSTEM/data"};

struct FilterInfo {
  int id = 0;
  std::string name;
  std::vector<unsigned> cd_values;
};

// One block of consecutive frames stored in one dataset of one file. A single-file dataset is one part; a
// multi-file acquisition (EIGER/ARINA master with data_000001, data_000002, ... links) has one per data file.
struct SourcePart {
  std::string file;                // the file holding the dataset (links followed)
  std::string dataset_path;        // (frames, det_r, det_c) or (scan_r, scan_c, det_r, det_c) inside it
  std::uint64_t first_frame = 0;   // flat scan index of its first frame
  std::uint64_t frames = 0;
};

// What a format reader of the source layer (io/source/readers.hpp) hands the load pipeline: the frames' shape, dtype
// and where they lie (an HDF5 dataset's chunk index, or the record runs of a format without one), how each record
// decodes, and the metadata (scan shape and its source, calibration, pixel mask).
// For HDF5 it describes the acquisition as a whole: for a multi-part one (linked data files, virtual dataset) dims are
// (total frames, det_r, det_c), chunk_dims/filters are those every part shares, chunk counts are summed over the
// parts and ready means every part's chunks are written.
struct FileInfo {
  std::string path;
  std::string reader = "hdf5";          // the reader that recognised the file: hdf5, merlin, npy, raw
  FrameCodec codec;                     // how a frame's stored bytes decode
  FrameRecords records;                 // readers without a chunk index: where every frame lies (flat scan order)
  SparseSource sparse;                  // present: electron events (stempy, LiberTEM CSR), scattered by the load
  TransposedLayout transposed;          // present: the file is stored detector-pixel-slowest (Fortran-order .npy);
                                        // records then name the file and hold no runs
  std::vector<std::string> warnings;    // said by the reader (e.g. an interrupted scan cut to whole rows)
  nlohmann::json metadata = nlohmann::json::object();  // the reader's own metadata (headers, sources of values)
  std::string dataset_path;             // in `path`; for linked data files the first link (/entry/data/data_000001)
  std::string source_kind;              // "dataset", "external link", "linked files", "virtual dataset"
  DType dtype = DType::u16;
  // The stored datatype's byte order ("little" or "big"; decoders swap big-endian elements to the host's order),
  // and its bits: precision (significant bits) at bit_offset. Plain counts use every bit: precision 8 x size,
  // offset 0; others are read only by HDF5's conversion (decoder hdf5; plain_bits() says which).
  std::string byte_order = "little";
  std::size_t precision = 16, bit_offset = 0;
  std::vector<std::size_t> dims;        // as stored: (frames, det_r, det_c) or (scan_r, scan_c, det_r, det_c)
  std::vector<std::size_t> chunk_dims;  // empty when not chunked
  std::vector<FilterInfo> filters;
  Shape4D shape;                        // scan shape resolved (scan 0 x 0 when not known, see scan_shape_known)
  std::string scan_shape_source;        // "given", "dataset dims", "attribute scan_shape", "ARINA sidecar ...",
                                        // "metadata ntrigger x nimages", "square frame count"
  std::uint64_t frames = 0;             // frames of all parts together
  bool scan_shape_known = true;         // false only from inspect(..., ScanShapeNeed::optional) without one
  std::string scan_shape_needed;        // then: why not, and what to give (the FormatError a load raises)
  long long ntrigger = 0, nimages = 0;  // detectorSpecific metadata of an EIGER/ARINA master (0 = absent)
  bool has_pixel_mask = false;          // detectorSpecific/pixel_mask present (shape checked against the detector)
  std::vector<std::uint32_t> bad_pixels;  // flat indices (row * det_cols + col) where pixel_mask > 0, ascending
  bool one_frame_per_chunk = false;
  bool bitshuffle_lz4 = false;
  std::size_t bitshuffle_block_elems = 0;  // resolved block size when bitshuffle_lz4
  std::size_t chunks_expected = 0;
  std::size_t chunks_written = 0;
  bool ready = false;  // every chunk written (and the chunk index intact)
  std::string index_error;  // the chunk index is damaged: why (the file is corrupt, not unfinished); "" when intact
  nlohmann::json calibration = nlohmann::json::object();         // {key: value} (io/calibration.hpp keys)
  nlohmann::json calibration_detail = nlohmann::json::object();  // {key: {value, unit, source}}
  std::vector<std::string> metadata_warnings;  // metadata values seen but not used, and why
  std::string sidecar;                         // the ARINA sidecar <stem>.h5 that was read ("" when none)
  std::vector<SourcePart> parts;
  std::vector<std::shared_ptr<const ChunkTable>> part_tables;  // each part's parsed chunk index (null: not parsed)
  double index_seconds = 0;                                    // time spent reading them  // where the frames are, in scan order (covers every frame)

  // The stored element type where it differs from dtype (the decoded one): float64 files are read as float32.
  std::optional<DType> stored_as;
  DType stored_dtype() const { return stored_as.value_or(dtype); }

  std::size_t frame_bytes() const { return shape.frame_pixels() * dtype_size(dtype); }  // decoded
  // Stored elements are big-endian and wider than a byte: our decoders swap their bytes.
  bool swap_bytes() const { return byte_order == "big" && dtype_size(stored_dtype()) > 1; }
  // Every bit of the element is the value (precision 8 x size, offset 0): our decoders read the stored bits as is.
  bool plain_bits() const { return bit_offset == 0 && precision == 8 * dtype_size(stored_dtype()); }
  nlohmann::json to_json() const;
};

// Whether inspect must decide the scan shape: loads need it (required: FormatError when nothing gives it);
// `qgpu info` and Python inspect do not (optional: scan_shape_known false, scan_shape_needed says why).
enum class ScanShapeNeed { required, optional };

// Reads the metadata of any file a reader of the source layer recognises (io/source/readers.hpp; the overload with
// SourceOptions is there). For HDF5: dataset_path "" discovers the dataset (see io/hdf5/acquisition.hpp:
// /entry/data/data, then the /entry/data/data_NNNNNN links of a master, ...); scan_rows/scan_cols > 0 override the
// scan shape. Calibration and the ARINA sidecar's scan shape: io/hdf5/instrument_metadata.hpp.
FileInfo inspect(const std::string& path, const std::string& dataset_path = "", std::size_t scan_rows = 0,
                 std::size_t scan_cols = 0, ScanShapeNeed need = ScanShapeNeed::required);

// The HDF5 reader. Raises IoError (missing file, dataset, link target or data file), DTypeError (non-count dtype) or
// FormatError (bad rank/shape, parts that disagree, scan shape that does not match the frames, bad pixel mask).
// The HDF5 metadata parse runs in a child process (io/hdf5/isolated_parse.hpp), which sends the FileInfo back
// (io/hdf5/file_info_wire.hpp): a crash or hang of the HDF5 library on a damaged file becomes FormatError "HDF5
// library crashed parsing ...", and this process never parses the metadata itself. The result for a finished
// acquisition is kept (16 entries at most): the next inspect of the same unchanged files with the same arguments
// reuses it without a child. QGPU_PARSE_ISOLATION=0: parsed in-process every time, nothing kept.
FileInfo inspect_hdf5(const std::string& path, const std::string& dataset_path = "", std::size_t scan_rows = 0,
                      std::size_t scan_cols = 0, ScanShapeNeed need = ScanShapeNeed::required);

// inspect without the child process: what the child runs, and for the fuzz harness (which must see crashes
// in-process).
FileInfo inspect_in_process(const std::string& path, const std::string& dataset_path = "", std::size_t scan_rows = 0,
                            std::size_t scan_cols = 0, ScanShapeNeed need = ScanShapeNeed::required);

// Every dataset of rank 3 or 4 in the file with an integer dtype, as candidate 4D-STEM data.
std::vector<std::string> discover(const std::string& path);
// The same, adding to `unreadable` the objects whose header HDF5 cannot read (damaged), in visit order.
std::vector<std::string> discover_candidates(const std::string& path, std::vector<std::string>& unreadable);

// Default bitshuffle block size in elements for an element size (0 in cd_values means this).
std::size_t bitshuffle_default_block(std::size_t elem_size);

namespace testing {
// Forgets the FileInfos inspect_hdf5 kept: the next inspect of every file runs the child again.
void forget_inspected_files();
}  // namespace testing

}  // namespace qgpu::io
