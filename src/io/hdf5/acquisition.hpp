#pragma once
// Where the frames of an acquisition are stored: one dataset, a master file's /entry/data/data_NNNNNN links
// (EIGER/ARINA: each an external link to a data file of consecutive frames), or a virtual dataset whose
// mappings each take a whole source dataset into a consecutive block of frames.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::io {

// One dataset holding a block of consecutive frames, links already followed.
struct PartRef {
  std::string name;          // what names it in the master, for messages ("/entry/data/data_000002", ...)
  std::string file;          // the file holding the dataset
  std::string dataset_path;  // inside `file`
  bool has_frame_range = false;  // virtual mappings state the frames they fill; checked against the source
  std::uint64_t first_frame = 0, frames = 0;
};

struct PartList {
  std::string dataset_path;    // the dataset (or first link) in the master that the acquisition was found at
  std::string kind;            // "dataset", "external link", "linked files", "virtual dataset"
  std::vector<PartRef> parts;  // in frame order
};

// Finds the parts of the acquisition at dataset_path ("" discovers: /entry/data/data, then the data_NNNNNN links,
// then the other default paths, then any rank 3/4 integer dataset). Raises IoError for a gap in the link numbers,
// a missing dataset or a missing data file (naming the link and the file), FormatError for a virtual dataset
// more complex than whole sources in consecutive frame blocks.
PartList find_parts(hid_t master, const std::string& master_path, const std::string& dataset_path);

// The target of a link in `file`: for an external link the data file (a relative name resolves against the
// folder of `file_path`) and the dataset inside it; otherwise file_path and link_path. IoError when an external
// link points to a missing file.
PartRef resolve_link(hid_t file, const std::string& file_path, const std::string& link_path);

}  // namespace qgpu::io
