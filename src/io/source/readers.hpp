#pragma once
// The source layer: every file format is a reader that recognises its files by content (magic bytes, not the name)
// and describes them as a FileInfo (frame records or an HDF5 chunk index, the codec of a record, scan shape and
// calibration with their sources, pixel mask). The one load pipeline (io/hdf5/load.hpp) serves every reader.
// Adding a format = a folder with its reader + one line in readers.cpp.
// Readers share resolve_scan_shape_or_describe (below) for the scan shape.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/file_info.hpp"

namespace qgpu::io {

// Headerless frames (format "raw", as LiberTEM's raw reader): nothing in the file says what they are.
struct RawLayout {
  std::string dtype;                 // uint8/16/32, int8/16/32, float32/64 (read as float32), with an optional byte
                                     // order: uint16be, >u2, <f4 ...
  std::size_t det_rows = 0, det_cols = 0;
  std::uint64_t offset = 0;          // bytes before the first frame
  std::uint64_t frame_header = 0;    // bytes before each frame
  std::uint64_t frame_footer = 0;    // bytes after each frame
};

struct SourceOptions {
  std::string format = "auto";       // auto (by content) | one of formats()
  std::string dataset_path;          // HDF5: "" discovers
  std::size_t scan_rows = 0, scan_cols = 0;  // override the stored scan shape (0 = from the file)
  ScanShapeNeed need = ScanShapeNeed::required;  // optional: a file without one is described (scan_shape_known)
  RawLayout raw;                     // format "raw" only
  bool flip_rows = false;            // Merlin: rows flipped (rosettasciio's orientation; docs/conventions.md)
  bool single_file = false;          // Merlin: only the named .mib, not the other files of its acquisition
};

struct FormatReader {
  std::string name;         // hdf5, merlin, npy, raw
  std::string description;  // for qgpu.io.formats() and --help
  // True when the file's first bytes (head, n of them; n may be short for small files) are this format's.
  // Nothing: the format is only read when asked for by name (raw).
  bool (*recognise)(const std::uint8_t* head, std::size_t n) = nullptr;
  FileInfo (*inspect)(const std::string& path, const SourceOptions& options) = nullptr;
};

// Reads up to `size` bytes from the start of `path` into head (non-blocking open: never waits on a FIFO); returns how
// many were read. IoError naming the file when it cannot be opened or read.
std::size_t read_head(const std::string& path, std::uint8_t* head, std::size_t size);

// Every reader, in the order they are tried.
const std::vector<FormatReader>& formats();

// The reader for a file (by content, or the one options.format names). IoError when the file is missing, not a
// regular file, unreadable or of no format known here (the message lists them); InvalidArgument for an unknown
// format name.
const FormatReader& reader_for(const std::string& path, const std::string& format = "auto");

// Describes the file through its reader. The scan shape must be resolvable (given, or from the file) unless
// options.need is optional: then FileInfo::scan_shape_known is false and scan_shape_needed says what to give.
FileInfo inspect(const std::string& path, const SourceOptions& options);

// For readers: sets fi.shape (scan x detector), scan_shape_source and frames from `frames` and the hints, or, when
// nothing decides the scan shape and options.need is optional, leaves the scan 0 x 0 with scan_shape_known false and
// the reason in scan_shape_needed (the FormatError a load raises).
struct ScanShapeHints;
void resolve_scan_shape_or_describe(FileInfo& fi, std::uint64_t frames, std::size_t det_rows, std::size_t det_cols,
                                    const ScanShapeHints& hints, const SourceOptions& options, const std::string& where);

}  // namespace qgpu::io
