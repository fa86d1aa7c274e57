#pragma once
// The vulkan load with the decode in compute shaders: DECTRIS-style bitshuffle+LZ4 chunks (one frame per chunk) and
// plain frame records (NumPy, raw, MRC, EMPAD, ...) read in batches by the shared read layer (io/hdf5/read/), the
// block framing walked and checked on the host, the LZ4 blocks and bit planes decoded (records copied, byte-swapped
// when big-endian) by bitshuffle_lz4.comp straight into the dense resident's segments. No Vulkan types.
#include <functional>
#include <string>

#include "io/hdf5/load.hpp"

namespace qgpu::io {

// "" when the shader decoder serves the plan, else why not (the host decode then serves, and the provenance says
// so): Merlin records (shader decoder to come), other filters, big-endian bitshuffle or float elements,
// detector crop / binning, pixel-mask zeroing, blocks over 8 KiB, frames not a whole number of 32-bit words.
std::string vulkan_shader_decode_unsupported(const LoadPlan& p);

// Dense load decoded by the shader (vulkan_shader_decode_unsupported(p) must be ""). FormatError naming the frame
// for a damaged chunk (framing checked on the host, LZ4 streams in the shader).
Dataset load_vulkan_shaders(const LoadPlan& p, const std::function<void(double)>& progress);

}  // namespace qgpu::io
