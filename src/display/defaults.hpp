#pragma once
// The colormap of a real-space image when none is asked for: one name for the service's PNGs and the viewer's
// first look (GET /api/datasets answers it as defaults.colormap) and the default of `qgpu image` and `qgpu movie`.
namespace qgpu::display {

inline constexpr const char* kImageColormap = "inferno";

}  // namespace qgpu::display
