// The vulkan backend's entry points in a build without it (QGPU_VULKAN off, or the Vulkan headers or glslc
// missing at configure time): the probe says so, and resolve() refuses the backend, so nothing below is reached;
// they raise BackendUnavailable should a caller get there another way.
#include "core/error.hpp"
#include "detector/vulkan/sums_vulkan.hpp"
#include "display/vulkan/display_vulkan.hpp"
#include "dpc/idpc_backend.hpp"
#include "io/hdf5/vulkan/load_vulkan.hpp"
#include "ssb/ssb_backend.hpp"
#include "device/vulkan/vk_probe.hpp"
#include "device/vulkan/vk_resident.hpp"

namespace qgpu::vulkan {

namespace {
const char* kReason =
    "this build has no vulkan backend (configured without the Vulkan headers or glslc: install libvulkan-dev glslc "
    "and rebuild with -DQGPU_VULKAN=ON)";
[[noreturn]] void unavailable() { throw BackendUnavailable(std::string("the vulkan backend is unavailable: ") + kReason); }
}  // namespace

class Buffer {};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    r.reason = kReason;
    return r;
  }();
  return p;
}

Resident::Resident(const void*, const Shape4D&, DType, bool) { unavailable(); }
Resident::~Resident() = default;
void Resident::upload_frames(const void*, std::size_t, std::size_t) { unavailable(); }
void Resident::download_frames(void*, std::size_t, std::size_t) const { unavailable(); }

}  // namespace qgpu::vulkan

namespace qgpu::detector::vulkan {

std::vector<std::uint64_t> com_sums(const Dataset&, const std::uint8_t*) { qgpu::vulkan::unavailable(); }
SumImage masked_sum(const Dataset&, const SumPlan&) { qgpu::vulkan::unavailable(); }
SumImage sum_pattern(const Dataset&) { qgpu::vulkan::unavailable(); }
SumImage max_pattern(const Dataset&) { qgpu::vulkan::unavailable(); }

}  // namespace qgpu::detector::vulkan

namespace qgpu::display::vulkan {

Range render(const float*, std::size_t, const DisplayOptions&, const Lut&, std::uint8_t*) {
  qgpu::vulkan::unavailable();
}
Range histogram(const float*, std::size_t, const DisplayOptions&, std::array<std::uint64_t, 256>&) {
  qgpu::vulkan::unavailable();
}
std::vector<float> fft_log_magnitude(const float*, std::size_t, std::size_t) { qgpu::vulkan::unavailable(); }

}  // namespace qgpu::display::vulkan

namespace qgpu::io {

std::string vulkan_shader_decode_unsupported(const LoadPlan&) { return "this build has no vulkan backend"; }
Dataset load_vulkan_shaders(const LoadPlan&, const std::function<void(double)>&) { qgpu::vulkan::unavailable(); }

}  // namespace qgpu::io

namespace qgpu::dpc::detail {

std::vector<float> integrate_vkfft(const PaddedField&) { qgpu::vulkan::unavailable(); }

}  // namespace qgpu::dpc::detail

namespace qgpu::ssb::detail {

std::unique_ptr<Engine> make_vulkan_engine(const Dataset&, const Plan&) { qgpu::vulkan::unavailable(); }

}  // namespace qgpu::ssb::detail
