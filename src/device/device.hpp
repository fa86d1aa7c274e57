#pragma once
// Backend selection. `cuda` is production, `cpu` the reference and used only when asked for,
// `auto` means cuda and fails (never falls back to cpu) when no GPU is usable.
#include <string>

namespace qgpu {

enum class Backend { cpu, cuda };

std::string backend_name(Backend b);

struct DeviceReport {
  bool cuda_available = false;
  int device_count = 0;
  std::string name;    // first device's name when available
  std::string reason;  // why CUDA is unavailable, when it is
};

// Probes the machine once (cached) for a usable CUDA device.
const DeviceReport& detect();

// "cpu" | "cuda" | "auto" -> a usable backend, or BackendUnavailable / InvalidArgument naming why.
Backend resolve(const std::string& requested);

}  // namespace qgpu
