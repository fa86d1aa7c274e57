#pragma once
// The load of an electron-event acquisition (FileInfo::sparse): the events of the load's scan region scattered into a
// zeroed dense resident on the host (scan / detector regions, bins and the pixel mask applied per event; integer
// sums checked for overflow), then moved to the GPU for the cuda backend, and encoded when asked.
#include "io/hdf5/load.hpp"

namespace qgpu::io {

Dataset load_sparse(const LoadPlan& plan, Backend backend, const std::string& representation,
                    const std::function<void(double)>& progress);

}  // namespace qgpu::io
