#pragma once
// Crop and exact integer binning of decoded frames on the GPU (host reference: io/hdf5/binning.hpp).
#include <cuda_runtime.h>

#include <cstddef>

#include "core/dtype.hpp"

namespace qgpu::io::cuda {

struct BinGeometry {
  std::size_t in_cols = 0;                 // frames per input scan row (scan region cols)
  std::size_t det_rows = 0, det_cols = 0;  // stored frame
  std::size_t det_row0 = 0, det_col0 = 0;  // detector region origin
  std::size_t out_rows = 0, out_cols = 0;  // output scan rows/cols in this call
  std::size_t out_det_r = 0, out_det_c = 0;
  std::size_t bin_s = 1, bin_d = 1;
};

// in: [out_rows * bin_s][in_cols] full frames of dtype in_t; out: [out_rows][out_cols] binned frames of out_t.
// Sets *d_overflow to 1 when a sum does not fit out_t.
void bin_frames(const void* in, DType in_t, void* out, DType out_t, const BinGeometry& g, int* d_overflow,
                cudaStream_t stream);

}  // namespace qgpu::io::cuda
