#pragma once
// What the vulkan backend found on this machine (no Vulkan header needed: the device report and resolve() read it).
#include <cstdint>
#include <string>

namespace qgpu::vulkan {

struct Probe {
  bool built = false;       // this build has the vulkan backend (QGPU_VULKAN, headers and glslc found)
  bool usable = false;      // a loader, an instance and a device with a compute queue were created
  int device_count = 0;     // physical devices the loader lists
  std::string name;         // the chosen adapter (VkPhysicalDeviceProperties::deviceName)
  std::string type;         // discrete | integrated | virtual | cpu | other
  std::string driver;       // driver name and info (VkPhysicalDeviceDriverProperties), else the version number
  std::string api_version;  // the device's Vulkan version, "1.3.230"
  std::string reason;       // why the backend is unusable, when it is
};

// Opens the loader and creates the context once (cached; later calls return the same report). QGPU_VULKAN_DEVICE=N
// picks the N-th physical device instead of the first discrete GPU (else integrated, else any);
// QGPU_VULKAN_MAX_BUFFER_BYTES=B caps one segment of a resident (and any one buffer) at B bytes (tests).
const Probe& probe();

}  // namespace qgpu::vulkan
