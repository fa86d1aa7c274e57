#pragma once
// The GPU load's batch buffers (an encoded load's two 2 GiB buffers of decoded frames, and every load's device
// buffers of compressed batches) kept for the next load on the same device instead of freed: cudaFree of them took
// 3-11 ms of each encoded load of the 512x512 sample on the H200 (6-9 ms for the compressed batches' after a dense
// dataset was dropped), and their cudaMalloc part of its setup. At most min(8 GiB, 1/16 of the device's memory)
// stays kept; admission counts kept bytes as free, and any device allocation that finds too little memory frees
// them first (add_memory_reclaimer, device_buffer.hpp).
#include <cstddef>

#include "device/cuda/device_buffer.hpp"

namespace qgpu::io::cuda {

// A kept buffer of exactly `bytes` on the current device, or a new one (after freeing every kept buffer when the
// device lacks the memory). bytes == 0: an empty buffer.
DeviceBuffer take_batch_buffer(std::size_t bytes);

// Keeps `b` for a later take (freed instead when the kept bytes would pass the cap).
void keep_batch_buffer(DeviceBuffer&& b);

// Bytes kept on the current device.
std::size_t kept_batch_bytes();

// Frees the kept buffers of the current device when fewer than `bytes` (+ 256 MiB) are free on it, so that an
// allocation the admission counted on fits.
void make_room(std::size_t bytes);

// Frees every kept buffer of the current device.
void release_batch_buffers();

}  // namespace qgpu::io::cuda
