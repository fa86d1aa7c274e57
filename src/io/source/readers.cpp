#include "io/source/readers.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "io/dm/dm_reader.hpp"
#include "io/empad/empad_reader.hpp"
#include "io/hdf5/isolated_parse.hpp"
#include "io/merlin/merlin_reader.hpp"
#include "io/mrc/mrc_reader.hpp"
#include "io/npy/npy_reader.hpp"
#include "io/raw/raw_reader.hpp"
#include "io/sparse/sparse_reader.hpp"

namespace qgpu::io {

namespace {

// HDF5: the signature at offset 0 (a user block moves it to 512, 1024, ...: those files are found by the fallback
// below, which asks the HDF5 library).
bool is_hdf5_head(const std::uint8_t* h, std::size_t n) {
  static const std::uint8_t kSig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  return n >= 8 && std::memcmp(h, kSig, 8) == 0;
}

FileInfo inspect_hdf5_file(const std::string& path, const SourceOptions& o) {
  // stempy's electron events are HDF5 too: their reader describes them (the plain HDF5 reading has no 4D data there).
  // inspect_hdf5 (its first parse in a child process) marks them: the file is then known to parse safely.
  FileInfo fi = inspect_hdf5(path, o.dataset_path, o.scan_rows, o.scan_cols, o.need);
  if (fi.sparse.kind == "stempy" && fi.frames == 0) {
    // Its attributes and scan positions are read by HDF5 too: first in a child process (io/hdf5/isolated_parse.hpp).
    validate_in_child(path, "inspect stempy", [&] { sparse::inspect_stempy(path, o); });
    fi = sparse::inspect_stempy(path, o);
    fi.reader = "stempy";
  }
  return fi;
}

}  // namespace

const std::vector<FormatReader>& formats() {
  static const std::vector<FormatReader> all = {
      {"hdf5", "HDF5 4D-STEM datasets (EIGER/ARINA masters with linked data files, virtual datasets; bitshuffle+LZ4 "
               "decoded on the GPU)", is_hdf5_head, inspect_hdf5_file},
      {"merlin", "Quantum Detectors Merlin .mib (+ .hdr): single chip and quad, binary and raw, 1/6/12/24-bit, "
                 "several files of one acquisition", merlin::is_merlin_head, merlin::inspect_merlin},
      {"npy", "NumPy .npy (format 1/2/3, 4D or 3D + scan shape, either byte order)", npy::is_npy_head,
       npy::inspect_npy},
      {"mrc", "MRC (Velox 4D, Direct Electron movies with their _info.txt): int8, int16, float32, uint16, either byte order", mrc::is_mrc_head, mrc::inspect_mrc},
      {"empad", "EMPAD .xml + .raw (float32 130x128 frames, 2 footer rows dropped; the .raw itself with format 'empad')",
       empad::is_empad_head, empad::inspect_empad},
      {"dm", "Gatan DigitalMicrograph DM3 / DM4 (4D STEMx image, frame-contiguous order; 3D stacks)",
       dm::is_dm_head, dm::inspect_dm},
      {"stempy", "stempy sparse electron events (HDF5 electron_events/frames + scan_positions, versions 1-3; "
                 "several frames per position summed), loaded dense; found by the hdf5 reader",
       nullptr, sparse::inspect_stempy},
      {"libertem_csr", "LiberTEM raw CSR (TOML descriptor + indptr / indices / values files), loaded dense",
       sparse::is_csr_head, sparse::inspect_csr},
      {"raw", "headerless frames (dtype and detector shape given; offsets before the data and around each frame)",
       nullptr, raw::inspect_raw},
  };
  return all;
}

const FormatReader& reader_for(const std::string& path, const std::string& format) {
  const auto& all = formats();
  if (format != "auto") {
    for (const FormatReader& r : all)
      if (r.name == format) {
        require_readable_regular_file(path);
        return r;
      }
    std::string names;
    for (const FormatReader& r : all) names += ", " + r.name;
    throw InvalidArgument("format '" + format + "' is not one of auto" + names);
  }
  require_readable_regular_file(path);
  std::uint8_t head[512] = {0};
  const std::size_t n = read_head(path, head, sizeof head);
  for (const FormatReader& r : all)
    if (r.recognise && r.recognise(head, n)) return r;
  // HDF5 with a user block, or no format known here: the HDF5 reader decides and names the file
  // ("not an HDF5 file ...", extended below).
  return all.front();
}

namespace {

// A compressed archive or stream by its magic bytes (the way detector files often travel): named in the error of a
// file nothing recognises, so that the user extracts it first. "" when none.
std::string archive_kind(const std::string& path) {
  std::uint8_t h[512] = {0};
  const std::size_t n = read_head(path, h, sizeof h);
  const auto starts = [&](std::initializer_list<int> m) {
    if (n < m.size()) return false;
    std::size_t i = 0;
    for (int b : m)
      if (h[i++] != b) return false;
    return true;
  };
  if (starts({'P', 'K', 3, 4}) || starts({'P', 'K', 5, 6})) return "a ZIP archive";
  if (starts({0x1f, 0x8b})) return "gzip-compressed";
  if (starts({0xfd, '7', 'z', 'X', 'Z', 0})) return "xz-compressed";
  if (starts({0x28, 0xb5, 0x2f, 0xfd})) return "zstd-compressed";
  if (starts({'B', 'Z', 'h'})) return "bzip2-compressed";
  if (starts({'7', 'z', 0xbc, 0xaf, 0x27, 0x1c})) return "a 7-Zip archive";
  if (n >= 262 && std::memcmp(h + 257, "ustar", 5) == 0) return "a tar archive";
  return "";
}

}  // namespace

FileInfo inspect(const std::string& path, const SourceOptions& o) {
  const FormatReader& r = reader_for(path, o.format);
  if (r.name != "merlin" && (o.flip_rows || o.single_file))
    throw InvalidArgument("flip_rows and single_file apply to Merlin files; '" + path + "' is read as " + r.name);
  if (r.name != "raw" && (o.raw.det_rows || o.raw.det_cols || !o.raw.dtype.empty()))
    throw InvalidArgument("a raw layout (dtype, detector shape, offsets) is given but '" + path + "' is read as " +
                          r.name + ": give format='raw' to read it as headerless frames");
  try {
    FileInfo fi = r.inspect(path, o);
    if (!(r.name == "hdf5" && fi.reader == "stempy")) fi.reader = r.name;
    return fi;
  } catch (const IoError& e) {
    const std::string what = e.what();
    if (r.name == "hdf5" && o.format == "auto" && what.rfind("not an HDF5 file", 0) == 0) {
      std::string known;
      for (const FormatReader& f : formats())
        if (f.recognise && f.name != "hdf5") known += ", " + f.name;
      const std::string archive = archive_kind(path);
      if (!archive.empty())
        throw IoError(what + ": it is " + archive + "; extract the detector files from it and open those");
      throw IoError(what + "; nor " + known.substr(2) +
                    " (recognised by their content); for headerless frames give format 'raw' with dtype and "
                    "detector shape (an EMPAD .raw: open its .xml, or give format 'empad')");
    }
    throw;
  }
}

FileInfo inspect(const std::string& path, const std::string& dataset_path, std::size_t scan_rows,
                 std::size_t scan_cols, ScanShapeNeed need) {
  SourceOptions o;
  o.need = need;
  o.dataset_path = dataset_path;
  o.scan_rows = scan_rows;
  o.scan_cols = scan_cols;
  return inspect(path, o);
}

}  // namespace qgpu::io
