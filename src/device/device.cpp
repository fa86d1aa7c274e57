#include "device/device.hpp"

#include "core/error.hpp"
#include "device/cuda/cuda_probe.hpp"

namespace qgpu {

std::string backend_name(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

const DeviceReport& detect() {
  static const DeviceReport report = [] {
    DeviceReport r;
    const CudaProbe p = probe_cuda();
    r.cuda_available = p.usable;
    r.device_count = p.device_count;
    r.name = p.name;
    r.reason = p.reason;
    return r;
  }();
  return report;
}

Backend resolve(const std::string& requested) {
  if (requested == "cpu") return Backend::cpu;
  if (requested == "cuda" || requested == "auto") {
    const DeviceReport& r = detect();
    if (!r.cuda_available)
      throw BackendUnavailable("backend '" + requested + "' needs a usable CUDA GPU, but none is available: " +
                               r.reason + " (ask for backend='cpu' explicitly to use the CPU reference)");
    return Backend::cuda;
  }
  throw InvalidArgument("unknown backend '" + requested + "' (expected 'cuda', 'cpu' or 'auto')");
}

Backend backend_of(const Provenance& p) {
  if (p.backend.empty() || p.backend == "cpu") return Backend::cpu;
  if (p.backend == "cuda") return Backend::cuda;
  throw InvalidArgument("input records an unknown backend '" + p.backend + "' (expected 'cuda' or 'cpu')");
}

Backend backend_of(const Provenance& a, const Provenance& b, const std::string& op) {
  const Backend ba = backend_of(a), bb = backend_of(b);
  if (ba != bb)
    throw InvalidArgument(op + ": inputs live on different backends (" + backend_name(ba) + " and " +
                          backend_name(bb) + ")");
  return ba;
}

}  // namespace qgpu
