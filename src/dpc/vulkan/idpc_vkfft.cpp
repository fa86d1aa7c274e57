// Fourier integration on the vulkan backend: the gradients uploaded unpadded, extended by a shader into one complex
// field G_row + i G_col (idpc_pad.comp), one VkFFT forward C2C (device/vulkan/vkfft_plans.hpp), the reference's
// k-space filter on both separated spectra (idpc_filter.comp), one VkFFT inverse C2C, the real part's source region
// cropped (idpc_crop.comp) and downloaded. Single precision (complex64). C2C rather than R2C: one transform each way
// for both components, and every size (VkFFT's Bluestein path covers large primes).
#include "device/vulkan/vk_context.hpp"
#include "device/vulkan/vkfft_plans.hpp"

#include <string>

#include "core/error.hpp"
#include "core/stage_timing.hpp"
#include "dpc/idpc_backend.hpp"

namespace qgpu::vulkan::shaders {
extern const Spirv idpc_pad;
extern const Spirv idpc_filter;
extern const Spirv idpc_crop;
}  // namespace qgpu::vulkan::shaders

namespace qgpu::dpc::detail {

namespace {

namespace vk = qgpu::vulkan;

constexpr std::uint64_t kGroup = 128;  // local_size_x of the shaders

}  // namespace

std::vector<float> integrate_vkfft(const PaddedField& f) {
  const std::size_t nr = f.padded_rows, nc = f.padded_cols, n = nr * nc, src = f.rows * f.cols;
  vk::Context& c = vk::Context::get();
  vk::FftLease fft(nr, nc);
  vk::Buffer grads(2 * src * sizeof(float));
  {
    const timing::Stage stage("transfer");
    grads.upload(f.grad_row, src * sizeof(float));
    grads.upload(f.grad_col, src * sizeof(float), src * sizeof(float));
  }
  {
    const timing::Stage stage("compute");
    const vk::Pipeline& pad = c.pipeline(vk::shaders::idpc_pad, 2, 7 * 4);
    const vk::Pipeline& filter = c.pipeline(vk::shaders::idpc_filter, 1, 5 * 4);
    const vk::Pipeline& crop = c.pipeline(vk::shaders::idpc_crop, 2, 5 * 4);
    const std::uint32_t pad_push[7] = {std::uint32_t(f.rows),    std::uint32_t(f.cols), std::uint32_t(f.pad_row),
                                       std::uint32_t(f.pad_col), std::uint32_t(nr),     std::uint32_t(nc),
                                       f.mirror ? 1u : 0u};
    struct {
      std::uint32_t nr, nc;
      float step_row, step_col, scale;
    } filter_push{std::uint32_t(nr), std::uint32_t(nc), float(f.step_row), float(f.step_col), float(1.0 / double(n))};
    const std::uint32_t crop_push[5] = {std::uint32_t(f.rows), std::uint32_t(f.cols), std::uint32_t(f.pad_row),
                                        std::uint32_t(f.pad_col), std::uint32_t(nc)};
    vk::Commands cmd;
    cmd.dispatch(pad, {{&grads}, {&fft.buffer()}}, pad_push, sizeof pad_push, (n + kGroup - 1) / kGroup);
    fft.forward(cmd);  // exp(-2 pi i k x / n), as FFTW's
    cmd.dispatch(filter, {{&fft.buffer()}}, &filter_push, sizeof filter_push, (n + kGroup - 1) / kGroup);
    fft.inverse(cmd);  // unnormalised (the filter applies 1/n)
    cmd.dispatch(crop, {{&fft.buffer()}, {&grads}}, crop_push, sizeof crop_push, (src + kGroup - 1) / kGroup);
    cmd.run();
  }
  const timing::Stage stage("transfer");
  std::vector<float> phi(src);
  grads.download(phi.data(), src * sizeof(float));
  return phi;
}

}  // namespace qgpu::dpc::detail
