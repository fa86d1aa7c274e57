#include "device/device.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "device/backend_request.hpp"
#include "device/cuda/cuda_probe.hpp"
#include "device/vulkan/vk_probe.hpp"

namespace qgpu {

std::string backend_name(Backend b) { return b == Backend::cuda ? "cuda" : b == Backend::vulkan ? "vulkan" : "cpu"; }

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

const DeviceReport& vulkan_report() {
  static const DeviceReport report = [] {
    DeviceReport r = detect();
    const vulkan::Probe& v = vulkan::probe();
    r.vulkan_available = v.usable;
    r.vulkan_name = v.name;
    r.vulkan_type = v.type;
    r.vulkan_driver = v.driver;
    r.vulkan_api = v.api_version;
    r.vulkan_reason = v.reason;
    return r;
  }();
  return report;
}

void not_implemented_on(Backend b, const std::string& op) {
  throw BackendUnavailable(op + " is not implemented on the " + backend_name(b) +
                           " backend yet (docs/design.md, backend table): load the data with backend 'cuda' or "
                           "'cpu' for it");
}

namespace {

std::string& cpu_backend_hint() {
  static std::string hint = "backend='cpu'";
  return hint;
}

}  // namespace

void set_cpu_backend_hint(const std::string& hint) { cpu_backend_hint() = hint; }

std::string requested_backend(const std::string& requested) {
  if (requested != "auto") return requested;
  const char* env = std::getenv("QGPU_BACKEND");
  if (env == nullptr || *env == '\0') return requested;
  const std::string v = env;
  if (v != "cpu" && v != "cuda" && v != "vulkan" && v != "auto")
    throw InvalidArgument("QGPU_BACKEND: unknown backend '" + v + "' (expected cuda, cpu, vulkan or auto)");
  static std::once_flag announced;
  if (v != "auto")
    std::call_once(announced, [&] { std::fprintf(stderr, "qgpu: backend %s (QGPU_BACKEND)\n", v.c_str()); });
  return v;
}

Backend resolve(const std::string& asked) {
  const std::string requested = requested_backend(asked);
  if (requested == "cpu") return Backend::cpu;
  if (requested == "cuda" || requested == "auto") {
    const DeviceReport& r = detect();
    const std::string from_env = asked == requested ? "" : " (QGPU_BACKEND)";
    if (!r.cuda_available)
      throw BackendUnavailable("backend '" + requested + "'" + from_env +
                               " needs a usable CUDA GPU, but none is available: " + r.reason + " (ask for " +
                               cpu_backend_hint() + " explicitly to use the CPU reference, or set QGPU_BACKEND=cpu)");
    return Backend::cuda;
  }
  if (requested == "vulkan") {  // only when asked for: auto never comes here
    const DeviceReport& r = vulkan_report();
    if (!r.vulkan_available)
      throw BackendUnavailable("backend 'vulkan'" + std::string(asked == requested ? "" : " (QGPU_BACKEND)") +
                               " needs a Vulkan device, but none is usable: " + r.vulkan_reason);
    return Backend::vulkan;
  }
  throw InvalidArgument("unknown backend '" + requested + "' (expected 'cuda', 'cpu', 'vulkan' or 'auto')");
}

Backend backend_of(const Provenance& p) {
  if (p.backend.empty() || p.backend == "cpu") return Backend::cpu;
  if (p.backend == "cuda") return Backend::cuda;
  if (p.backend == "vulkan") return Backend::vulkan;
  throw InvalidArgument("input records an unknown backend '" + p.backend + "' (expected 'cuda', 'cpu' or 'vulkan')");
}

Backend backend_of(const Provenance& a, const Provenance& b, const std::string& op) {
  const Backend ba = backend_of(a), bb = backend_of(b);
  if (ba != bb)
    throw InvalidArgument(op + ": inputs live on different backends (" + backend_name(ba) + " and " +
                          backend_name(bb) + ")");
  return ba;
}

}  // namespace qgpu
