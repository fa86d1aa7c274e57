#pragma once
// CUDA masked sums on a GPU-resident dataset.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/image.hpp"
#include "detector/plan.hpp"
#include "device/cuda/device_buffer.hpp"
#include "resident/dataset.hpp"

namespace qgpu::detector::cuda {

// A SumPlan copied to the device once, reusable across calls.
struct DevicePlan {
  Strategy strategy = Strategy::sparse;
  DeviceBuffer offsets, weights;
  std::size_t count = 0;  // entries in offsets (sparse/complement) or weights (dense)
  std::uint32_t uniform_weight = 0;
};
DevicePlan upload(const SumPlan& plan);

// Sums are sum_t of the dataset's dtype (core/dtype.hpp): uint64 for counts, int64 for signed integers, double for
// float32 data; device arrays of them hold 8 bytes per value.

// Writes every frame's total (frames() sums) to d_out: one full pass over the data.
void compute_frame_totals(const Dataset& ds, void* d_out, cudaStream_t stream = nullptr);

// Per-frame totals of the dataset (device array of frames() sums), computed once and cached on the dataset.
const void* frame_totals(const Dataset& ds, cudaStream_t stream = nullptr);

// Writes frames() sums to d_out on `stream` (asynchronous).
void masked_sum(const Dataset& ds, const DevicePlan& plan, void* d_out, cudaStream_t stream = nullptr);

// Convenience: plan, run, copy back (values only: the caller sets shape and provenance).
SumImage masked_sum(const Dataset& ds, const SumPlan& plan);

// Per-pixel sum over all frames, copied back.
SumImage sum_pattern(const Dataset& ds);
// Per-pixel maximum over frames.
SumImage max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::cuda
