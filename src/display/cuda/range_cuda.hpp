#pragma once
// Display range of pixels already on the GPU (internal to the CUDA backend).
#include <cstddef>

#include "display/options.hpp"
#include "display/range.hpp"

namespace qgpu::display::cuda {

// d_data: n floats in device memory. The percentile values are the order statistics of the scaled finite
// values, sorted on the GPU with CUB; they equal the CPU's (same values, same rank rule).
Range find_range_on_device(const float* d_data, std::size_t n, const DisplayOptions& o);

}  // namespace qgpu::display::cuda
