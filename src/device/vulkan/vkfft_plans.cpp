// VkFFT behind device/vulkan/vkfft_plans.hpp. VkFFT calls the Vulkan API by its prototypes: here each is a macro onto
// the backend's function table (the loader stays opened at run time, nothing links libvulkan). Its header comes from
// the build tree (CMakeLists.txt adapts VkFFT 1.2.26's glslang resource table to glslang 12) and glslang is linked
// statically.
#define VKFFT_BACKEND 0
#include "device/vulkan/vkfft_plans.hpp"

#include "device/vulkan/vk_context.hpp"

// VkFFT's Vulkan calls -> the context's function table (loaded from the run-time loader).
#define QGPU_VKFFT_FN(name) (::qgpu::vulkan::Context::get().fn().name)
#define vkAllocateCommandBuffers QGPU_VKFFT_FN(vkAllocateCommandBuffers)
#define vkAllocateDescriptorSets QGPU_VKFFT_FN(vkAllocateDescriptorSets)
#define vkAllocateMemory QGPU_VKFFT_FN(vkAllocateMemory)
#define vkBeginCommandBuffer QGPU_VKFFT_FN(vkBeginCommandBuffer)
#define vkBindBufferMemory QGPU_VKFFT_FN(vkBindBufferMemory)
#define vkCmdBindDescriptorSets QGPU_VKFFT_FN(vkCmdBindDescriptorSets)
#define vkCmdBindPipeline QGPU_VKFFT_FN(vkCmdBindPipeline)
#define vkCmdCopyBuffer QGPU_VKFFT_FN(vkCmdCopyBuffer)
#define vkCmdDispatch QGPU_VKFFT_FN(vkCmdDispatch)
#define vkCmdPipelineBarrier QGPU_VKFFT_FN(vkCmdPipelineBarrier)
#define vkCmdPushConstants QGPU_VKFFT_FN(vkCmdPushConstants)
#define vkCreateBuffer QGPU_VKFFT_FN(vkCreateBuffer)
#define vkCreateComputePipelines QGPU_VKFFT_FN(vkCreateComputePipelines)
#define vkCreateDescriptorPool QGPU_VKFFT_FN(vkCreateDescriptorPool)
#define vkCreateDescriptorSetLayout QGPU_VKFFT_FN(vkCreateDescriptorSetLayout)
#define vkCreatePipelineLayout QGPU_VKFFT_FN(vkCreatePipelineLayout)
#define vkCreateShaderModule QGPU_VKFFT_FN(vkCreateShaderModule)
#define vkDestroyBuffer QGPU_VKFFT_FN(vkDestroyBuffer)
#define vkDestroyDescriptorPool QGPU_VKFFT_FN(vkDestroyDescriptorPool)
#define vkDestroyDescriptorSetLayout QGPU_VKFFT_FN(vkDestroyDescriptorSetLayout)
#define vkDestroyPipeline QGPU_VKFFT_FN(vkDestroyPipeline)
#define vkDestroyPipelineLayout QGPU_VKFFT_FN(vkDestroyPipelineLayout)
#define vkDestroyShaderModule QGPU_VKFFT_FN(vkDestroyShaderModule)
#define vkEndCommandBuffer QGPU_VKFFT_FN(vkEndCommandBuffer)
#define vkFreeCommandBuffers QGPU_VKFFT_FN(vkFreeCommandBuffers)
#define vkFreeMemory QGPU_VKFFT_FN(vkFreeMemory)
#define vkGetBufferMemoryRequirements QGPU_VKFFT_FN(vkGetBufferMemoryRequirements)
#define vkGetPhysicalDeviceMemoryProperties QGPU_VKFFT_FN(vkGetPhysicalDeviceMemoryProperties)
#define vkGetPhysicalDeviceProperties QGPU_VKFFT_FN(vkGetPhysicalDeviceProperties)
#define vkMapMemory QGPU_VKFFT_FN(vkMapMemory)
#define vkQueueSubmit QGPU_VKFFT_FN(vkQueueSubmit)
#define vkResetFences QGPU_VKFFT_FN(vkResetFences)
#define vkUnmapMemory QGPU_VKFFT_FN(vkUnmapMemory)
#define vkUpdateDescriptorSets QGPU_VKFFT_FN(vkUpdateDescriptorSets)
#define vkWaitForFences QGPU_VKFFT_FN(vkWaitForFences)
#include <vkFFT.h>

#include <algorithm>
#include <list>
#include <mutex>
#include <string>

#include "core/error.hpp"

namespace qgpu::vulkan {

namespace {
constexpr std::size_t kCachedPlans = 4;
}  // namespace

// One VkFFT 2D C2C plan over its own complex buffer; VkFFT keeps pointers to the handles below, so a plan never moves.
struct FftPlan {
  std::size_t nr = 0, nc = 0, nb = 1;
  std::unique_ptr<Buffer> buffer;
  VkBuffer handle = VK_NULL_HANDLE;
  std::uint64_t bytes = 0;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkFFTApplication app{};
  bool initialised = false;
  bool identity = false;  // 1 x 1: the transform is the identity (no plan)

  FftPlan(std::size_t rows, std::size_t cols, std::size_t batch) : nr(rows), nc(cols), nb(batch) {
    Context& c = Context::get();
    const Functions& f = c.fn();
    bytes = std::uint64_t(nr) * nc * nb * 8;
    buffer = std::make_unique<Buffer>(bytes);
    handle = buffer->handle();
    physical = c.physical();
    device = c.device();
    queue = c.queue();
    VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpci.queueFamilyIndex = c.family();
    check(f.vkCreateCommandPool(device, &cpci, nullptr, &pool), "vkCreateCommandPool (VkFFT)");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    const VkResult fr = f.vkCreateFence(device, &fci, nullptr, &fence);
    if (fr != VK_SUCCESS) release_handles();
    check(fr, "vkCreateFence (VkFFT)");
    if (nr == 1 && nc == 1) {
      identity = true;
      return;
    }
    VkFFTConfiguration cfg{};
    // VkFFT's first axis is the contiguous one; a single row or column is a 1D transform of its length
    cfg.FFTdim = (nr == 1 || nc == 1) ? 1 : 2;
    cfg.size[0] = cfg.FFTdim == 1 ? nr * nc : nc;
    cfg.size[1] = cfg.FFTdim == 1 ? 1 : nr;
    cfg.numberBatches = nb;
    cfg.physicalDevice = &physical;
    cfg.device = &device;
    cfg.queue = &queue;
    cfg.commandPool = &pool;
    cfg.fence = &fence;
    // No cfg.buffer: VkFFT 1.2.26 writes the plan's descriptor sets at initializeVkFFT when it has the buffer, and
    // that is before it allocates and fills the Bluestein kernels (VkFFTGeneratePhaseVectors runs last), so a
    // Bluestein axis (a prime factor above 13) bound null kernel buffers and read zeros. Given at the first append
    // instead (launchParams.buffer), the descriptors are written then, with the kernels in place.
    cfg.bufferSize = &bytes;
    VkFFTResult r;
    {
      // plan creation submits work (VkFFT's tables) to the queue
      std::lock_guard<std::mutex> lock(c.queue_mutex());
      r = initializeVkFFT(&app, cfg);
    }
    if (r != VKFFT_SUCCESS) {
      deleteVkFFT(&app);
      release_handles();
      throw DeviceError("vulkan: VkFFT cannot plan a " + std::to_string(nr) + "x" + std::to_string(nc) +
                        " C2C transform (VkFFTResult " + std::to_string(int(r)) + ")");
    }
    initialised = true;
  }
  ~FftPlan() {
    if (initialised) deleteVkFFT(&app);
    release_handles();
  }
  void release_handles() {
    const Functions& f = Context::get().fn();
    if (fence) f.vkDestroyFence(device, fence, nullptr);
    if (pool) f.vkDestroyCommandPool(device, pool, nullptr);
    fence = VK_NULL_HANDLE;
    pool = VK_NULL_HANDLE;
  }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  void append(Commands& cmd, int direction) {
    if (identity) return;
    VkFFTResult r = VKFFT_SUCCESS;
    cmd.record([&](VkCommandBuffer cb) {
      VkFFTLaunchParams lp{};
      lp.commandBuffer = &cb;
      lp.buffer = &handle;
      r = VkFFTAppend(&app, direction, &lp);
    });
    if (r != VKFFT_SUCCESS)
      throw DeviceError("vulkan: VkFFTAppend failed (VkFFTResult " + std::to_string(int(r)) + ")");
  }
};

struct FftLease::Lock {
  std::unique_lock<std::mutex> lock;
};

namespace {
std::mutex& plans_mutex() {
  static std::mutex m;
  return m;
}
std::list<std::unique_ptr<FftPlan>>& plans() {  // most recently used first
  static std::list<std::unique_ptr<FftPlan>> p;
  return p;
}
}  // namespace

FftLease::FftLease(std::size_t rows, std::size_t cols, std::size_t batch) {
  Context& c = Context::get();
  if (rows == 0 || cols == 0 || batch == 0 || rows > c.max_buffer_bytes() / 8 / cols ||
      batch > c.max_buffer_bytes() / 8 / cols / rows)
    throw InvalidArgument("vulkan FFT: " + std::to_string(batch) + " complex field(s) of " + std::to_string(rows) +
                          "x" + std::to_string(cols) + " exceed one storage buffer (" +
                          std::to_string(c.max_buffer_bytes()) + " bytes)");
  lock_ = std::make_unique<Lock>(Lock{std::unique_lock<std::mutex>(plans_mutex())});
  auto& ps = plans();
  for (auto it = ps.begin(); it != ps.end(); ++it)
    if ((*it)->nr == rows && (*it)->nc == cols && (*it)->nb == batch) {
      ps.splice(ps.begin(), ps, it);
      plan_ = ps.front().get();
      return;
    }
  ps.push_front(std::make_unique<FftPlan>(rows, cols, batch));
  while (ps.size() > kCachedPlans) ps.pop_back();
  plan_ = ps.front().get();
}

FftLease::~FftLease() = default;

Buffer& FftLease::buffer() { return *plan_->buffer; }
void FftLease::forward(Commands& cmd) { plan_->append(cmd, -1); }
void FftLease::inverse(Commands& cmd) { plan_->append(cmd, 1); }

}  // namespace qgpu::vulkan
