#pragma once
// The raw (still compressed) chunk of every frame of a load, located from the parts' chunk indexes in one pass.
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_bytes.hpp"
#include "io/hdf5/load.hpp"

namespace qgpu::io {

struct FrameChunk {  // (no default values: a load's table of them is sized unfilled, then written in full)
  std::uint32_t file;    // index into ChunkSources::files
  std::uint64_t offset;  // byte offset in that file
  std::uint64_t size;    // stored bytes
};

// Flat scan indices (not zero-filled when sized: whoever sizes one writes every entry).
using FrameList = std::vector<std::uint64_t, DefaultInitAllocator<std::uint64_t>>;

struct ChunkSources {
  std::vector<std::string> files;     // distinct files holding chunks
  FrameList frames;                   // stored frame (flat scan index) of each chunk, load order
  std::vector<FrameChunk, DefaultInitAllocator<FrameChunk>> chunks;  // the chunk of each frame, load order
  std::string index_method;           // how the chunk indexes were read
};

// Frames of the plan's scan region in load order (region rows, then columns), as flat scan indices.
FrameList load_order(const LoadPlan& p);

// Locates the chunk of every frame the plan loads. FormatError naming the frame when a chunk was never written,
// was stored with its filter skipped, or lies past the end of its file (truncated file); FormatError when the
// data is not stored one frame per chunk.
ChunkSources locate_chunks(const LoadPlan& p);

}  // namespace qgpu::io
