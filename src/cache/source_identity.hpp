#pragma once
// Identity of a source file, recorded in a cache to detect a stale one: path, size, mtime and a SHA-256 over the
// first and last MiB plus the size (cheap on a 20 GB file, yet catches rewritten headers and appended frames).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgpu::cache {

inline constexpr const char* kHashMethod = "sha256(first 1 MiB + last 1 MiB + size as uint64 little-endian)";

struct FileIdentity {
  std::string path;  // absolute
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string hash;  // hex, kHashMethod
  nlohmann::json to_json() const;
};

// IoError when the file cannot be opened or read.
FileIdentity identify_file(const std::string& path);

// Identity of a dataset's sources: the file it was loaded from and every distinct data file of its parts.
nlohmann::json identify_sources(const std::string& main_path, const std::vector<std::string>& part_files);

// What changed between the recorded identity and the files now: one line per change naming the file and the
// field ("size 100 -> 120", "mtime ...", "content hash differs", "missing"). Empty when fresh.
// present is set to whether the main file exists (nothing is checked when it does not).
std::vector<std::string> compare_sources(const nlohmann::json& recorded, bool& present);

}  // namespace qgpu::cache
