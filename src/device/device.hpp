#pragma once
// Backend selection. `cuda` is production, `cpu` the reference and used only when asked for, `vulkan` the portable
// GPU backend (AMD, Intel, Apple through MoltenVK, Android; lavapipe in CI) used only when asked for; `auto` means
// cuda and fails (never falls back to cpu or vulkan) when no CUDA GPU is usable.
#include <string>

#include "core/provenance.hpp"

namespace qgpu {

enum class Backend { cpu, cuda, vulkan };

std::string backend_name(Backend b);

struct DeviceReport {
  bool cuda_available = false;
  int device_count = 0;
  std::string name;    // first device's name when available
  std::string reason;  // why CUDA is unavailable, when it is
  // The vulkan backend (device/vulkan/vk_probe.hpp): the adapter it uses and its driver, or why there is none.
  bool vulkan_available = false;
  std::string vulkan_name, vulkan_type, vulkan_driver, vulkan_api, vulkan_reason;
};

// Probes the machine once (cached) for a usable CUDA device; the Vulkan fields are filled on first use of
// vulkan_report() (opening the Vulkan loader and creating a device is not free, so `auto` and `cuda` never do it).
const DeviceReport& detect();
// detect() with the Vulkan fields filled.
const DeviceReport& vulkan_report();

// "cpu" | "cuda" | "vulkan" | "auto" -> a usable backend, or BackendUnavailable / InvalidArgument naming why.
Backend resolve(const std::string& requested);

// The one dispatch rule: only loading chooses a backend (resolve); every later operation runs where its input
// lives. For a result that is the backend in its provenance ("cuda" | "cpu" | "vulkan"); a result with none recorded (host
// values made by hand, a plain numpy array) is host data and runs on the cpu. InvalidArgument for any other name.
Backend backend_of(const Provenance& p);
// Two inputs of one operation must share their backend: InvalidArgument naming `op` otherwise.
Backend backend_of(const Provenance& a, const Provenance& b, const std::string& op);
// An Image<T> copy recorded as living on `b` (for tests and callers holding host values meant for a backend).
// BackendUnavailable: `op` has no implementation on backend `b` yet (the vulkan backend grows operation by
// operation; docs/design.md lists what it has). Never a silent run elsewhere.
[[noreturn]] void not_implemented_on(Backend b, const std::string& op);
template <class Img> Img on_backend(Img img, Backend b) {
  img.provenance.backend = backend_name(b);
  return img;
}

}  // namespace qgpu
