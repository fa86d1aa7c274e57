#include "device/vulkan/vk_context.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.hpp"

namespace qgpu::vulkan {

namespace {

const char* result_name(VkResult r) {
  switch (r) {
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
  }
}

std::string version_text(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

Context*& context_ptr() {
  static Context* c = nullptr;
  return c;
}

}  // namespace

void check(VkResult r, const char* call) {
  if (r == VK_SUCCESS) return;
  const std::string msg = std::string("vulkan: ") + call + " failed: " + result_name(r) + " (" +
                          std::to_string(int(r)) + ")";
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) throw OutOfMemory(msg);
  throw DeviceError(msg);
}

bool Context::init(Probe& report) {
  report.built = true;
  for (const char* name : {"libvulkan.so.1", "libvulkan.so"}) {
    lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib_) break;
  }
  if (!lib_) {
    report.reason = "no Vulkan loader (libvulkan.so.1) on this machine: install libvulkan1 and a driver "
                    "(mesa-vulkan-drivers for the CPU driver lavapipe)";
    return false;
  }
  fn_.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib_, "vkGetInstanceProcAddr"));
  if (!fn_.vkGetInstanceProcAddr) {
    report.reason = "the Vulkan loader has no vkGetInstanceProcAddr";
    return false;
  }
  auto global = [&](const char* n) { return fn_.vkGetInstanceProcAddr(VK_NULL_HANDLE, n); };
  fn_.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(global("vkCreateInstance"));
  fn_.vkEnumerateInstanceVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(global("vkEnumerateInstanceVersion"));
  fn_.vkEnumerateInstanceExtensionProperties = reinterpret_cast<PFN_vkEnumerateInstanceExtensionProperties>(
      global("vkEnumerateInstanceExtensionProperties"));
  std::uint32_t loader_version = VK_API_VERSION_1_0;
  if (fn_.vkEnumerateInstanceVersion) fn_.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_1) {
    report.reason = "the Vulkan loader offers " + version_text(loader_version) + "; the backend needs 1.1";
    return false;
  }

  // MoltenVK (Apple) is listed only with the portability enumeration extension.
  std::vector<const char*> extensions;
  bool portability = false;
  {
    std::uint32_t n = 0;
    fn_.vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> ext(n);
    fn_.vkEnumerateInstanceExtensionProperties(nullptr, &n, ext.data());
    for (const auto& e : ext)
      if (std::strcmp(e.extensionName, "VK_KHR_portability_enumeration") == 0) portability = true;
    if (portability) extensions.push_back("VK_KHR_portability_enumeration");
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "quantem-gpu";
  app.apiVersion = std::min<std::uint32_t>(loader_version, VK_API_VERSION_1_2);
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledExtensionCount = std::uint32_t(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  if (portability) ici.flags |= 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
  VkResult r = fn_.vkCreateInstance(&ici, nullptr, &instance_);
  if (r != VK_SUCCESS) {
    report.reason = std::string("vkCreateInstance failed: ") + result_name(r);
    return false;
  }
#define QGPU_VK_LOAD_I(name) fn_.name = reinterpret_cast<PFN_##name>(fn_.vkGetInstanceProcAddr(instance_, #name));
  QGPU_VK_INSTANCE_FNS(QGPU_VK_LOAD_I)
#undef QGPU_VK_LOAD_I

  std::uint32_t n = 0;
  fn_.vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  if (n) fn_.vkEnumeratePhysicalDevices(instance_, &n, devices.data());
  report.device_count = int(n);
  if (n == 0) {
    report.reason = "the Vulkan loader lists no device (no driver installed: an ICD such as NVIDIA's, or "
                    "mesa-vulkan-drivers for lavapipe)";
    return false;
  }
  // QGPU_VULKAN_DEVICE=N, else the first discrete GPU, else integrated, else the first device.
  std::size_t pick = 0;
  if (const char* env = std::getenv("QGPU_VULKAN_DEVICE"); env && *env) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (*end != '\0' || v >= n) {
      report.reason = "QGPU_VULKAN_DEVICE=" + std::string(env) + " is not a device index below " + std::to_string(n);
      return false;
    }
    pick = v;
  } else {
    int best = -1;
    for (std::size_t i = 0; i < n; ++i) {
      VkPhysicalDeviceProperties p;
      fn_.vkGetPhysicalDeviceProperties(devices[i], &p);
      const int score = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 3
                        : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2
                                                                                 : 1;
      if (score > best) best = score, pick = i;
    }
  }
  physical_ = devices[pick];
  fn_.vkGetPhysicalDeviceProperties(physical_, &props_);
  fn_.vkGetPhysicalDeviceMemoryProperties(physical_, &mem_);
  report.name = props_.deviceName;
  report.type = type_name(props_.deviceType);
  report.api_version = version_text(props_.apiVersion);
  report.driver = "driver version " + std::to_string(props_.driverVersion);
  if (props_.apiVersion >= VK_API_VERSION_1_2 && fn_.vkGetPhysicalDeviceProperties2) {
    VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &drv;
    fn_.vkGetPhysicalDeviceProperties2(physical_, &p2);
    report.driver = std::string(drv.driverName) + (drv.driverInfo[0] ? " " + std::string(drv.driverInfo) : "");
  }
  if (props_.apiVersion < VK_API_VERSION_1_1) {
    report.reason = report.name + " offers Vulkan " + report.api_version + "; the backend needs 1.1";
    return false;
  }

  std::uint32_t nf = 0;
  fn_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> families(nf);
  fn_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nf, families.data());
  bool found = false;
  for (std::uint32_t i = 0; i < nf && !found; ++i)  // a compute-only family first (the async compute queue)
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      family_ = i, found = true;
  for (std::uint32_t i = 0; i < nf && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family_ = i, found = true;
  if (!found) {
    report.reason = report.name + " has no compute queue";
    return false;
  }
  std::vector<const char*> dev_ext;
  {
    std::uint32_t ne = 0;
    fn_.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ne, nullptr);
    std::vector<VkExtensionProperties> ext(ne);
    fn_.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ne, ext.data());
    for (const auto& e : ext)  // required by the spec wherever it is offered (MoltenVK)
      if (std::strcmp(e.extensionName, "VK_KHR_portability_subset") == 0) dev_ext.push_back("VK_KHR_portability_subset");
  }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VkPhysicalDeviceFeatures offered{}, enabled{};
  fn_.vkGetPhysicalDeviceFeatures(physical_, &offered);
  enabled.shaderFloat64 = offered.shaderFloat64;
  float64_ = offered.shaderFloat64 == VK_TRUE;
  dci.pEnabledFeatures = &enabled;
  dci.enabledExtensionCount = std::uint32_t(dev_ext.size());
  dci.ppEnabledExtensionNames = dev_ext.data();
  r = fn_.vkCreateDevice(physical_, &dci, nullptr, &device_);
  if (r != VK_SUCCESS) {
    report.reason = std::string("vkCreateDevice on ") + report.name + " failed: " + result_name(r);
    return false;
  }
#define QGPU_VK_LOAD_D(name) fn_.name = reinterpret_cast<PFN_##name>(fn_.vkGetDeviceProcAddr(device_, #name));
  QGPU_VK_DEVICE_FNS(QGPU_VK_LOAD_D)
#undef QGPU_VK_LOAD_D
  fn_.vkGetDeviceQueue(device_, family_, 0, &queue_);

  // One binding covers at most maxStorageBufferRange; one allocation at most maintenance3's
  // maxMemoryAllocationSize (core 1.1); both capped at 1 GiB.
  std::size_t cap = std::size_t(1) << 30;
  cap = std::min<std::size_t>(cap, props_.limits.maxStorageBufferRange);
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  if (fn_.vkGetPhysicalDeviceProperties2) {
    fn_.vkGetPhysicalDeviceProperties2(physical_, &p2);
    if (m3.maxMemoryAllocationSize) cap = std::min<std::size_t>(cap, m3.maxMemoryAllocationSize);
  }
  // QGPU_VULKAN_MAX_BUFFER_BYTES lowers the cap (tests cut a small dataset into many segments with it).
  if (const char* env = std::getenv("QGPU_VULKAN_MAX_BUFFER_BYTES"); env && *env) {
    const unsigned long long v = std::strtoull(env, nullptr, 10);
    if (v >= 256) cap = std::min<std::size_t>(cap, v);
  }
  max_buffer_bytes_ = cap & ~std::size_t(255);
  report.usable = true;
  return true;
}

Context::~Context() = default;  // the process's context lives until exit (drivers tear down with the process)

const Probe& probe() {
  static const Probe report = [] {
    Probe r;
    auto* c = new Context();
    try {
      if (c->init(r)) context_ptr() = c;
    } catch (const std::exception& e) {
      r.usable = false;
      r.reason = e.what();
    }
    return r;
  }();
  return report;
}

Context& Context::get() {
  const Probe& p = probe();
  if (!p.usable || !context_ptr()) throw BackendUnavailable("the vulkan backend is unavailable: " + p.reason);
  return *context_ptr();
}

std::uint32_t Context::memory_type(std::uint32_t bits, VkMemoryPropertyFlags required,
                                   VkMemoryPropertyFlags preferred) const {
  for (int pass = 0; pass < 2; ++pass) {
    const VkMemoryPropertyFlags want = pass == 0 ? (required | preferred) : required;
    for (std::uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  throw DeviceError("vulkan: no memory type with the flags " + std::to_string(required) + " for this buffer");
}

VkMemoryPropertyFlags Context::memory_flags(std::uint32_t type) const { return mem_.memoryTypes[type].propertyFlags; }

const Pipeline& Context::pipeline(const Spirv& spirv, std::uint32_t bindings, std::uint32_t push_bytes) {
  std::lock_guard<std::mutex> lock(pipelines_mutex_);
  for (const auto& p : pipelines_)
    if (p->spirv == &spirv && p->bindings == bindings && p->push_bytes == push_bytes) return *p;
  pipelines_.push_back(std::make_unique<Pipeline>(*this, spirv, bindings, push_bytes));
  return *pipelines_.back();
}

// ---- Buffer

Buffer::Buffer(std::size_t bytes, Kind kind) : bytes_(bytes) {
  Context& c = Context::get();
  const Functions& f = c.fn();
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = std::max<std::size_t>(4, (bytes + 3) & ~std::size_t(3));
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(f.vkCreateBuffer(c.device(), &bci, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements req;
  f.vkGetBufferMemoryRequirements(c.device(), buffer_, &req);
  const std::uint32_t type =
      kind == Kind::staging
          ? c.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                          VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
          : c.memory_type(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  const VkResult r = f.vkAllocateMemory(c.device(), &mai, nullptr, &memory_);
  if (r != VK_SUCCESS) {
    f.vkDestroyBuffer(c.device(), buffer_, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw OutOfMemory("vulkan: cannot allocate " + std::to_string(req.size) + " bytes of " +
                        (kind == Kind::staging ? "staging" : "device") + " memory");
    check(r, "vkAllocateMemory");
  }
  check(f.vkBindBufferMemory(c.device(), buffer_, memory_, 0), "vkBindBufferMemory");
  const VkMemoryPropertyFlags flags = c.memory_flags(type);
  const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if ((flags & mappable) == mappable) check(f.vkMapMemory(c.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
}

Buffer::~Buffer() {
  Context& c = Context::get();
  if (mapped_) c.fn().vkUnmapMemory(c.device(), memory_);
  c.fn().vkDestroyBuffer(c.device(), buffer_, nullptr);
  c.fn().vkFreeMemory(c.device(), memory_, nullptr);
}

namespace {
constexpr std::size_t kStagingPiece = std::size_t(64) << 20;

void check_range(std::size_t offset, std::size_t bytes, std::size_t size) {
  if (offset > size || bytes > size - offset)
    throw Error("vulkan buffer: bytes [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                ") outside its " + std::to_string(size));
}
}  // namespace

void Buffer::upload(const void* src, std::size_t bytes, std::size_t offset) {
  check_range(offset, bytes, bytes_);
  if (mapped_) {
    std::memcpy(static_cast<std::uint8_t*>(mapped_) + offset, src, bytes);
    return;
  }
  Buffer staging(std::min(bytes, kStagingPiece), Kind::staging);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(bytes - done, kStagingPiece);
    std::memcpy(staging.mapped(), static_cast<const std::uint8_t*>(src) + done, n);
    Commands cmd;
    cmd.copy(staging, 0, *this, offset + done, n);
    cmd.run();
    done += n;
  }
}

void Buffer::download(void* dst, std::size_t bytes, std::size_t offset) const {
  check_range(offset, bytes, bytes_);
  if (mapped_) {
    std::memcpy(dst, static_cast<const std::uint8_t*>(mapped_) + offset, bytes);
    return;
  }
  Buffer staging(std::min(bytes, kStagingPiece), Kind::staging);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(bytes - done, kStagingPiece);
    Commands cmd;
    cmd.copy(*this, offset + done, staging, 0, n);
    cmd.run();
    std::memcpy(static_cast<std::uint8_t*>(dst) + done, staging.mapped(), n);
    done += n;
  }
}

void Buffer::fill_zero() {
  if (mapped_) {
    std::memset(mapped_, 0, bytes_);
    return;
  }
  Commands cmd;
  cmd.fill_zero(*this);
  cmd.run();
}

// ---- Pipeline

Pipeline::Pipeline(Context& c, const Spirv& s, std::uint32_t n, std::uint32_t push)
    : spirv(&s), bindings(n), push_bytes(push), device_(c.device()), fn_(&c.fn()) {
  const Functions& f = c.fn();
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = s.count * 4;
  smci.pCode = s.words;
  VkShaderModule module;
  check(f.vkCreateShaderModule(device_, &smci, nullptr, &module), "vkCreateShaderModule");
  std::vector<VkDescriptorSetLayoutBinding> b(n);
  for (std::uint32_t i = 0; i < n; ++i)
    b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = n;
  dl.pBindings = b.data();
  check(f.vkCreateDescriptorSetLayout(device_, &dl, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  pl.pushConstantRangeCount = push ? 1 : 0;
  pl.pPushConstantRanges = &range;
  check(f.vkCreatePipelineLayout(device_, &pl, nullptr, &layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = "main";
  cpi.layout = layout;
  const VkResult r = f.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipeline);
  f.vkDestroyShaderModule(device_, module, nullptr);
  check(r, (std::string("vkCreateComputePipelines (") + s.name + ")").c_str());
}

Pipeline::~Pipeline() {
  fn_->vkDestroyPipeline(device_, pipeline, nullptr);
  fn_->vkDestroyPipelineLayout(device_, layout, nullptr);
  fn_->vkDestroyDescriptorSetLayout(device_, set_layout, nullptr);
}

// ---- Commands

namespace {
constexpr std::uint32_t kSetsPerPool = 64, kBindingsPerSet = 8;
}

Commands::Commands() : c_(Context::get()) {
  const Functions& f = c_.fn();
  VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpci.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  cpci.queueFamilyIndex = c_.family();
  check(f.vkCreateCommandPool(c_.device(), &cpci, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  check(f.vkAllocateCommandBuffers(c_.device(), &cai, &cmd_), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(f.vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
}

Commands::~Commands() {
  const Functions& f = c_.fn();
  for (VkDescriptorPool p : pools_) f.vkDestroyDescriptorPool(c_.device(), p, nullptr);
  f.vkDestroyCommandPool(c_.device(), pool_, nullptr);  // frees the command buffer
}

VkDescriptorSet Commands::allocate_set(const Pipeline& p) {
  const Functions& f = c_.fn();
  if (p.bindings > kBindingsPerSet) throw Error("vulkan: a pipeline with more than 8 bindings");
  if (pools_.empty() || sets_in_pool_ == kSetsPerPool) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kBindingsPerSet};
    VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpci.maxSets = kSetsPerPool;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &size;
    VkDescriptorPool pool;
    check(f.vkCreateDescriptorPool(c_.device(), &dpci, nullptr, &pool), "vkCreateDescriptorPool");
    pools_.push_back(pool);
    sets_in_pool_ = 0;
  }
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pools_.back();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &p.set_layout;
  VkDescriptorSet set;
  check(f.vkAllocateDescriptorSets(c_.device(), &ai, &set), "vkAllocateDescriptorSets");
  ++sets_in_pool_;
  return set;
}

void Commands::barrier() {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  c_.fn().vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void Commands::dispatch(const Pipeline& p, const std::vector<Binding>& bindings, const void* push,
                        std::uint32_t push_bytes, std::uint64_t groups) {
  const Functions& f = c_.fn();
  if (bindings.size() != p.bindings || push_bytes != p.push_bytes)
    throw Error(std::string("vulkan: dispatch of ") + p.spirv->name + " with the wrong bindings or push constants");
  if (groups == 0) return;
  const std::uint64_t max_x = c_.limits().maxComputeWorkGroupCount[0];
  const std::uint64_t gx = std::min<std::uint64_t>(groups, max_x), gy = (groups + gx - 1) / gx;
  if (gy > c_.limits().maxComputeWorkGroupCount[1])
    throw InvalidArgument("vulkan: " + std::to_string(groups) + " work groups exceed the device's grid");
  const VkDescriptorSet set = allocate_set(p);
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = {bindings[i].buffer->handle(), bindings[i].offset, bindings[i].range};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = std::uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  f.vkUpdateDescriptorSets(c_.device(), std::uint32_t(writes.size()), writes.data(), 0, nullptr);
  f.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  f.vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes) f.vkCmdPushConstants(cmd_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  f.vkCmdDispatch(cmd_, std::uint32_t(gx), std::uint32_t(gy), 1);
  barrier();
}

void Commands::copy(const Buffer& src, std::size_t so, const Buffer& dst, std::size_t d, std::size_t bytes) {
  if (bytes == 0) return;
  VkBufferCopy region{so, d, bytes};
  c_.fn().vkCmdCopyBuffer(cmd_, src.handle(), dst.handle(), 1, &region);
  barrier();
}

void Commands::fill_zero(const Buffer& dst) {
  c_.fn().vkCmdFillBuffer(cmd_, dst.handle(), 0, VK_WHOLE_SIZE, 0);
  barrier();
}

void Commands::run() {
  if (ran_) throw Error("vulkan: commands run twice");
  ran_ = true;
  const Functions& f = c_.fn();
  check(f.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  check(f.vkCreateFence(c_.device(), &fci, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  VkResult r;
  {
    std::lock_guard<std::mutex> lock(c_.queue_mutex());
    r = f.vkQueueSubmit(c_.queue(), 1, &si, fence);
  }
  if (r == VK_SUCCESS) r = f.vkWaitForFences(c_.device(), 1, &fence, VK_TRUE, std::numeric_limits<std::uint64_t>::max());
  f.vkDestroyFence(c_.device(), fence, nullptr);
  check(r, "vkQueueSubmit/vkWaitForFences");
}

}  // namespace qgpu::vulkan
