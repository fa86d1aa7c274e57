#pragma once
// The vulkan backend's context: the loader opened at run time (dlopen of libvulkan.so.1 / libvulkan.so, so the
// library has no link-time Vulkan dependency and an Android build uses the NDK's loader the same way), one instance,
// one physical device, one compute queue; storage buffers; compute pipelines made from embedded SPIR-V; a command
// recorder that runs dispatches and copies and waits. Plain Vulkan 1.1 C API only (no desktop-only libraries).
// Only src/*/vulkan/ code includes this header.
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/vulkan/spirv.hpp"
#include "device/vulkan/vk_probe.hpp"

namespace qgpu::vulkan {

// The entry points the backend uses, loaded from the loader (instance and device level).
#define QGPU_VK_INSTANCE_FNS(X)                                                                                  \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                              \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceQueueFamilyProperties)                                    \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)                                  \
  X(vkEnumerateDeviceExtensionProperties) X(vkGetPhysicalDeviceFeatures)
#define QGPU_VK_DEVICE_FNS(X)                                                                                    \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)     \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory)                        \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)            \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets)       \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers)               \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets)                    \
  X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer)             \
  X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences)

struct Functions {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
  PFN_vkEnumerateInstanceExtensionProperties vkEnumerateInstanceExtensionProperties = nullptr;
#define QGPU_VK_MEMBER(name) PFN_##name name = nullptr;
  QGPU_VK_INSTANCE_FNS(QGPU_VK_MEMBER)
  QGPU_VK_DEVICE_FNS(QGPU_VK_MEMBER)
#undef QGPU_VK_MEMBER
};

// DeviceError (OutOfMemory for the out-of-memory results) naming the call, for any result but VK_SUCCESS.
void check(VkResult r, const char* call);

class Pipeline;

class Context {
 public:
  // The process's context; BackendUnavailable with probe().reason when there is none.
  static Context& get();

  const Functions& fn() const { return fn_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  const VkPhysicalDeviceLimits& limits() const { return props_.limits; }
  // Largest buffer one binding may cover and one allocation may hold, whichever is smaller, capped at 1 GiB (so
  // element indices of 8-bit data stay below 2^32).
  std::size_t max_buffer_bytes() const { return max_buffer_bytes_; }
  // shaderFloat64 (enabled when the device has it): the display shaders' exact double arithmetic needs it.
  bool float64() const { return float64_; }
  // A compute pipeline made once per shader (bindings: storage buffers 0..n-1; push constants of push_bytes).
  const Pipeline& pipeline(const Spirv& spirv, std::uint32_t bindings, std::uint32_t push_bytes);

  // Memory type index with all `required` flags (and the `preferred` ones when some type has them).
  std::uint32_t memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                            VkMemoryPropertyFlags preferred) const;
  VkMemoryPropertyFlags memory_flags(std::uint32_t type) const;

  std::mutex& queue_mutex() { return queue_mutex_; }
  VkQueue queue() const { return queue_; }
  std::uint32_t family() const { return family_; }

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

 private:
  Context() = default;
  friend const Probe& probe();
  // Fills the report; true when the context is usable.
  bool init(Probe& report);

  void* lib_ = nullptr;
  Functions fn_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties mem_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::uint32_t family_ = 0;
  std::size_t max_buffer_bytes_ = 0;
  bool float64_ = false;
  std::mutex queue_mutex_;
  std::mutex pipelines_mutex_;
  std::vector<std::unique_ptr<Pipeline>> pipelines_;
};

// A storage buffer (also a transfer source and destination). Device memory (device-local when there is some) or,
// for staging, host-visible coherent memory kept mapped.
class Buffer {
 public:
  enum class Kind { device, staging };
  Buffer(std::size_t bytes, Kind kind = Kind::device);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  std::size_t bytes() const { return bytes_; }
  // The mapped memory when the buffer's memory is host-visible and coherent (staging always; device buffers on
  // lavapipe, integrated GPUs, resizable BAR), else nullptr.
  void* mapped() const { return mapped_; }

  // Host <-> buffer bytes: through the mapping when there is one, else through a staging buffer in pieces.
  void upload(const void* src, std::size_t bytes, std::size_t offset = 0);
  void download(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  void fill_zero();

 private:
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  std::size_t bytes_ = 0;
  void* mapped_ = nullptr;
};

class Pipeline {
 public:
  Pipeline(Context& c, const Spirv& spirv, std::uint32_t bindings, std::uint32_t push_bytes);
  ~Pipeline();
  const Spirv* spirv = nullptr;
  std::uint32_t bindings = 0, push_bytes = 0;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  const Functions* fn_ = nullptr;
};

// A range of a buffer bound to one storage binding (the whole buffer by default).
struct Binding {
  const Buffer* buffer = nullptr;
  std::size_t offset = 0;
  std::size_t range = VK_WHOLE_SIZE;
};

// Records dispatches and copies into one command buffer (a compute barrier after each), then run() submits it and
// waits. Work groups beyond the device's x limit are spread over y: shaders take their linear group index as
// gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x and return past the total they are given.
class Commands {
 public:
  Commands();
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  void dispatch(const Pipeline& p, const std::vector<Binding>& bindings, const void* push, std::uint32_t push_bytes,
                std::uint64_t groups);
  void copy(const Buffer& src, std::size_t src_offset, const Buffer& dst, std::size_t dst_offset, std::size_t bytes);
  void fill_zero(const Buffer& dst);
  // Records what `f(VkCommandBuffer)` appends (a library's commands, e.g. VkFFTAppend), then the compute barrier.
  template <class F>
  void record(F&& f) {
    f(cmd_);
    barrier();
  }
  void run();

 private:
  void barrier();
  VkDescriptorSet allocate_set(const Pipeline& p);
  Context& c_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools_;
  std::uint32_t sets_in_pool_ = 0;
  bool ran_ = false;
};

}  // namespace qgpu::vulkan
