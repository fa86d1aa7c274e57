#pragma once
// The GPU side of a live acquisition (backend cuda): the ring in pinned host memory, a zero-filled resident on the
// GPU, and each batch of received records copied to the GPU and decoded there by the load pipeline's own kernels
// (bitshuffle+LZ4, plain, Merlin) into a staging buffer that the queries read as a 1 x n dataset, then scattered
// into the resident at the frames' scan positions.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/cuda/device_buffer.hpp"
#include "io/hdf5/file_info.hpp"

namespace qgpu::live::cuda {

// Pinned host memory of `bytes` (freed with the pointer).
std::shared_ptr<std::uint8_t> pinned_bytes(std::size_t bytes);
// A zero-filled device buffer of `bytes`.
std::shared_ptr<DeviceBuffer> zeroed_device(std::size_t bytes);

class BatchDecoder {
 public:
  // codec: the series' codec as the host decoders see it (dtype, frame shape, codec, bitshuffle block size).
  BatchDecoder(const io::FileInfo& codec, std::size_t max_frames, std::size_t max_record_bytes,
               const std::vector<std::uint32_t>& bad_pixels);
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  // Decodes records i = 0..n-1 (ring + offsets[i], sizes[i] bytes; offsets in FIFO order around the ring) into
  // frames 0..n-1 of staging(). Returns the records that do not decode (index, reason): their frames are zero.
  // zero_bad_pixels: the bad pixels given at construction set to 0 in every frame.
  std::vector<std::pair<std::size_t, std::string>> decode(const std::uint8_t* ring, const std::uint64_t* offsets,
                                                          const std::uint64_t* sizes, std::size_t n,
                                                          bool zero_bad_pixels);
  std::shared_ptr<DeviceBuffer> staging() const { return staging_; }
  // Copies frame i of staging() to frame positions[i] of `resident` for every i with good[i]; waits until done.
  void scatter(void* resident, const std::uint64_t* positions, const std::uint8_t* good, std::size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<DeviceBuffer> staging_;
};

}  // namespace qgpu::live::cuda
