// device/vulkan/vkfft_plans.hpp in a build without VkFFT or glslang (QGPU_HAVE_VKFFT off): BackendUnavailable.
#include "core/error.hpp"
#include "device/vulkan/vkfft_plans.hpp"

namespace qgpu::vulkan {

struct FftPlan {};
struct FftLease::Lock {};

FftLease::FftLease(std::size_t, std::size_t, std::size_t) {
  throw BackendUnavailable(
      "FFTs on vulkan: this build has no VkFFT (configured without libvkfft-dev + glslang-dev); install them and "
      "rebuild");
}
FftLease::~FftLease() = default;
Buffer& FftLease::buffer() { throw BackendUnavailable("FFTs on vulkan: no VkFFT in this build"); }
void FftLease::forward(Commands&) {}
void FftLease::inverse(Commands&) {}

}  // namespace qgpu::vulkan
