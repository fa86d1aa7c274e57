#pragma once
#include <functional>

#include "io/hdf5/load.hpp"

namespace qgpu::io {

// Fast host load: the same read pipeline as the GPU path (chunk indexes, coalesced parallel preads), chunks decoded
// by our bitshuffle decoder (LZ4 or zstd) on every core, crop and exact binning on the host.
Dataset load_cpu_decoded(const LoadPlan& plan, const std::function<void(double)>& progress);

}  // namespace qgpu::io
