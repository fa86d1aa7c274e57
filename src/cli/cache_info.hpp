#pragma once
// qgpu info on a product cache: format, source (and whether it changed), geometry and the products held.
#include <string>

namespace qgpu::cli {

void print_cache_info(const std::string& path, bool json);

}  // namespace qgpu::cli
