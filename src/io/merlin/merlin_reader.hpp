#pragma once
// The Merlin reader of the source layer: a .mib acquisition (or its .hdr) as FileInfo: record runs of the frames'
// payloads (headers skipped), the merlin codec with the acquisition's pixel format, the scan shape and its source,
// the .hdr and header metadata.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/source/readers.hpp"

namespace qgpu::io::merlin {

bool is_merlin_head(const std::uint8_t* head, std::size_t n);
FileInfo inspect_merlin(const std::string& path, const SourceOptions& options);

}  // namespace qgpu::io::merlin
