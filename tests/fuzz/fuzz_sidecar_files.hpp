#pragma once
// Fuzz inputs that are several files: the parts of one input separated by kPartSeparator, written into a private
// temporary folder under fixed names before each run (the readers take paths and find their sidecars by name).
// Shared by the harnesses fuzz_mrc, fuzz_csr_toml and their seed writers.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace qgpu::fuzz {

inline constexpr std::string_view kPartSeparator = "\n@@qgpu-part@@\n";

inline std::vector<std::string> split_parts(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t p = all.find(kPartSeparator, start);
    if (p == std::string_view::npos) {
      parts.emplace_back(all.substr(start));
      return parts;
    }
    parts.emplace_back(all.substr(start, p - start));
    start = p + kPartSeparator.size();
  }
}

inline std::string join_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += kPartSeparator;
    out += parts[i];
  }
  return out;
}

// The harness's own folder (made once per process, removed at exit is not needed: /tmp).
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/qgpu_fuzz_XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    return tmpl;
  }();
  return dir;
}

// Writes `bytes` to dir/name, or removes dir/name when `present` is false.
inline void put_file(const std::string& name, const std::string& bytes, bool present = true) {
  const std::string path = scratch_dir() + "/" + name;
  if (!present) {
    std::remove(path.c_str());
    return;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace qgpu::fuzz
