#pragma once
// The colormap of a real-space image when none is asked for: one name for the service's PNGs and the viewer's
// first look (GET /api/datasets answers it as defaults.colormap); the CLI's `qgpu image` default is the same.
namespace qgpu::display {

inline constexpr const char* kImageColormap = "inferno";

}  // namespace qgpu::display
