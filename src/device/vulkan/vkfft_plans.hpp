#pragma once
// 2D C2C complex64 transforms on the vulkan backend with VkFFT (Debian libvkfft-dev, header-only), the counterpart
// of device/cuda/cufft_plans.hpp: plans cached per shape and batch (the four most recent), each over its own buffer of
// batch x rows x cols complex64 (interleaved re, im). VkFFT builds its kernels with glslang when a plan is made, so the first
// request of a shape costs that compile and later ones nothing. A lease holds the cache (one FFT user at a time).
// Every size: a prime factor above 13 goes through VkFFT's Bluestein path (its kernels are bound at the first
// append, see vkfft_plans.cpp). Without VkFFT at build time (QGPU_HAVE_VKFFT off) the lease raises
// BackendUnavailable saying so.
#include <cstddef>
#include <memory>

namespace qgpu::vulkan {

class Buffer;
class Commands;
struct FftPlan;

class FftLease {
 public:
  // `batch` transforms of rows x cols, one after the other in the buffer (SSB: one per K group). InvalidArgument past
  // one storage buffer; DeviceError from VkFFT.
  FftLease(std::size_t rows, std::size_t cols, std::size_t batch = 1);
  ~FftLease();
  FftLease(const FftLease&) = delete;
  FftLease& operator=(const FftLease&) = delete;

  // The plan's complex buffer (batch * rows * cols * 8 bytes): the transforms run in place on it.
  Buffer& buffer();
  // Records the transform into `cmd` (then the compute barrier): forward exp(-2 pi i ...), as FFTW's; inverse
  // unnormalised.
  void forward(Commands& cmd);
  void inverse(Commands& cmd);

 private:
  struct Lock;
  std::unique_ptr<Lock> lock_;
  FftPlan* plan_ = nullptr;
};

}  // namespace qgpu::vulkan
