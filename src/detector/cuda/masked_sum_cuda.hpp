#pragma once
// CUDA masked sums on a GPU-resident dataset.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

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

// Writes every frame's total count (frames() uint64) to d_out: one full pass over the data.
void compute_frame_totals(const Dataset& ds, std::uint64_t* d_out, cudaStream_t stream = nullptr);

// Per-frame totals of the dataset (device array of frames() uint64), computed once and cached on the dataset.
const std::uint64_t* frame_totals(const Dataset& ds, cudaStream_t stream = nullptr);

// Writes frames() uint64 sums to d_out on `stream` (asynchronous).
void masked_sum(const Dataset& ds, const DevicePlan& plan, std::uint64_t* d_out, cudaStream_t stream = nullptr);

// Convenience: plan, run, copy back.
std::vector<std::uint64_t> masked_sum(const Dataset& ds, const SumPlan& plan);

// Per-pixel sum over all frames, copied back.
std::vector<std::uint64_t> sum_pattern(const Dataset& ds);
// Per-pixel maximum over frames.
std::vector<std::uint64_t> max_pattern(const Dataset& ds);

}  // namespace qgpu::detector::cuda
