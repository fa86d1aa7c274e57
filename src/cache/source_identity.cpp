#include "cache/source_identity.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include "core/atomic_output.hpp"
#include "core/error.hpp"

namespace qgpu::cache {

namespace {

constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;

std::string hex(const unsigned char* d, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += digits[d[i] >> 4];
    s += digits[d[i] & 15];
  }
  return s;
}

// Reads buf.size() bytes at offset (pread: a regular file never blocks indefinitely).
void read_at(int fd, std::uint64_t offset, std::vector<unsigned char>& buf, const std::string& path) {
  std::size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::pread(fd, buf.data() + done, buf.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw IoError("cannot read source file '" + path + "' to identify it" +
                    (n < 0 ? std::string(": ") + std::strerror(errno) : std::string(": it ended early")));
    done += static_cast<std::size_t>(n);
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

nlohmann::json FileIdentity::to_json() const {
  return {{"path", path}, {"size", size}, {"mtime_ns", mtime_ns}, {"hash", hash}};
}

FileIdentity identify_file(const std::string& path) {
  FileIdentity id;
  std::error_code ec;
  id.path = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) id.path = path;
  // Never open what is not a regular file: opening a FIFO blocks until a writer comes, a device may never end.
  // stat first; then open without blocking and check the descriptor again (the path may have changed).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError("cannot stat source file '" + path + "': " + std::strerror(errno));
  auto not_regular = [&](const struct stat& s) {
    return IoError("source file '" + path + "' is not a regular file (" + file_mode_text(s.st_mode) + ")");
  };
  if (!S_ISREG(st.st_mode)) throw not_regular(st);
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (f.fd < 0) throw IoError("cannot open source file '" + path + "': " + std::strerror(errno));
  if (::fstat(f.fd, &st) != 0) throw IoError("cannot stat source file '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw not_regular(st);
  id.size = static_cast<std::uint64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  std::vector<unsigned char> head(std::min(id.size, kMiB)), tail(std::min(id.size, kMiB));
  read_at(f.fd, 0, head, path);
  read_at(f.fd, id.size - tail.size(), tail, path);
  unsigned char size_le[8];
  for (int i = 0; i < 8; ++i) size_le[i] = static_cast<unsigned char>(id.size >> (8 * i));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), head.data(), head.size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), tail.data(), tail.size()) != 1 || EVP_DigestUpdate(ctx.get(), size_le, 8) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1)
    throw Error("SHA-256 (OpenSSL) failed while identifying '" + path + "'");
  id.hash = hex(digest, len);
  return id;
}

nlohmann::json identify_sources(const std::string& main_path, const std::vector<std::string>& part_files) {
  nlohmann::json files = nlohmann::json::array();
  files.push_back(identify_file(main_path).to_json());
  std::set<std::string> seen{files[0]["path"].get<std::string>()};
  for (const std::string& p : part_files) {
    FileIdentity id = identify_file(p);
    if (seen.insert(id.path).second) files.push_back(id.to_json());
  }
  return {{"path", files[0]["path"]}, {"hash_method", kHashMethod}, {"files", files}};
}

std::vector<std::string> compare_sources(const nlohmann::json& recorded, bool& present) {
  std::vector<std::string> changes;
  present = false;
  if (!recorded.contains("files") || !recorded["files"].is_array() || recorded["files"].empty()) return changes;
  const std::string main = recorded["files"][0].value("path", "");
  std::error_code ec;
  present = !main.empty() && std::filesystem::exists(main, ec);
  if (!present) return changes;
  for (const auto& f : recorded["files"]) {
    const std::string path = f.value("path", "");
    if (!std::filesystem::exists(path, ec)) {
      changes.push_back("source file '" + path + "' is missing");
      continue;
    }
    FileIdentity now;
    try {
      now = identify_file(path);
    } catch (const IoError& e) {
      changes.push_back(e.what());
      continue;
    }
    const auto size = f.value("size", std::uint64_t(0));
    if (now.size != size)
      changes.push_back("source file '" + path + "' size " + std::to_string(size) + " -> " + std::to_string(now.size));
    const auto mtime = f.value("mtime_ns", std::int64_t(0));
    if (now.mtime_ns != mtime)
      changes.push_back("source file '" + path + "' mtime_ns " + std::to_string(mtime) + " -> " +
                        std::to_string(now.mtime_ns));
    if (now.hash != f.value("hash", ""))
      changes.push_back("source file '" + path + "' content hash differs (" + std::string(kHashMethod) + ")");
  }
  return changes;
}

}  // namespace qgpu::cache
