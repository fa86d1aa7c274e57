#pragma once
#include <functional>

#include "io/hdf5/load.hpp"

namespace qgpu::io {

// Reference load: HDF5 reads through the filter pipeline (bitshuffle plugin), binning on the host.
Dataset load_cpu(const LoadPlan& plan, const std::function<void(double)>& progress);

}  // namespace qgpu::io
