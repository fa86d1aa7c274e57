#pragma once
// The backend a caller asks for, with the environment's default: QGPU_BACKEND replaces "auto" (device.cpp; resolve()
// applies it, so the CLI's --backend default and Python's load(backend="auto") both follow it).
#include <string>

namespace qgpu {

// `requested`, or for "auto" the environment variable QGPU_BACKEND (cpu | cuda | vulkan | auto) when it is set, announced
// once on stderr ("qgpu: backend cpu (QGPU_BACKEND)"). InvalidArgument naming the allowed values for an unknown name.
std::string requested_backend(const std::string& requested);

// How BackendUnavailable tells the user to ask for the CPU reference, in the spelling of the interface in use
// (default: Python's "backend='cpu'"; the CLI sets "--backend cpu").
void set_cpu_backend_hint(const std::string& hint);

}  // namespace qgpu
