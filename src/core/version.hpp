#pragma once
namespace qgpu {
inline constexpr const char* kVersion = "0.1.0";
}
