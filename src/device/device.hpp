#pragma once
// Backend selection. `cuda` is production, `cpu` the reference and used only when asked for,
// `auto` means cuda and fails (never falls back to cpu) when no GPU is usable.
#include <string>

#include "core/provenance.hpp"

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

// The one dispatch rule: only loading chooses a backend (resolve); every later operation runs where its input
// lives. For a result that is the backend in its provenance ("cuda" | "cpu"); a result with none recorded (host
// values made by hand, a plain numpy array) is host data and runs on the cpu. InvalidArgument for any other name.
Backend backend_of(const Provenance& p);
// Two inputs of one operation must share their backend: InvalidArgument naming `op` otherwise.
Backend backend_of(const Provenance& a, const Provenance& b, const std::string& op);
// An Image<T> copy recorded as living on `b` (for tests and callers holding host values meant for a backend).
template <class Img> Img on_backend(Img img, Backend b) {
  img.provenance.backend = backend_name(b);
  return img;
}

}  // namespace qgpu
