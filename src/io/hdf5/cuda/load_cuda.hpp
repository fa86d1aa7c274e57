#pragma once
#include <functional>

#include "io/hdf5/load.hpp"

namespace qgpu::io {

// Production load: compressed chunks are read straight from the file (no HDF5 filter pipeline), copied to the
// GPU and decoded there; crop and binning run on the GPU; the dataset stays resident in device memory.
Dataset load_cuda(const LoadPlan& plan, const std::function<void(double)>& progress);

}  // namespace qgpu::io
