#pragma once
// Reader of headerless frames (as LiberTEM's raw reader): the user says the dtype (and byte order), the detector
// shape, the bytes before the first frame and around each frame; the scan shape is given or square.
#include <string>

#include "io/source/readers.hpp"

namespace qgpu::io::raw {

// "uint16", "uint16le", "uint16be", "<u2", ">u2", "u2", "|u1", ...: the count dtype and whether it is big-endian.
// InvalidArgument naming the spelling for anything else.
DType parse_dtype(const std::string& spelling, bool& big_endian);

FileInfo inspect_raw(const std::string& path, const SourceOptions& options);

}  // namespace qgpu::io::raw
