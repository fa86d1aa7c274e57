#include "core/atomic_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.hpp"

namespace qgpu {

namespace fs = std::filesystem;

namespace {

fs::file_type type_of(mode_t m) {
  if (S_ISREG(m)) return fs::file_type::regular;
  if (S_ISDIR(m)) return fs::file_type::directory;
  if (S_ISFIFO(m)) return fs::file_type::fifo;
  if (S_ISSOCK(m)) return fs::file_type::socket;
  if (S_ISCHR(m)) return fs::file_type::character;
  if (S_ISBLK(m)) return fs::file_type::block;
  if (S_ISLNK(m)) return fs::file_type::symlink;
  return fs::file_type::unknown;
}

std::string quoted(const std::string& what, const std::string& path) { return what + " '" + path + "'"; }

[[noreturn]] void refuse(const std::string& what, const std::string& path, const std::string& why) {
  throw IoError(quoted(what, path) + " " + why);
}

// The folder a new file at `p` goes into: it must exist and be writable. Messages name the file and the folder.
void check_folder(const fs::path& p, const std::string& what) {
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string where = quoted(what, p.string()) + ": its folder '" + dir.string() + "'";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw IoError(where + " does not exist");
    throw IoError(where + " cannot be accessed: " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) throw IoError(where + " is " + file_type_text(type_of(st.st_mode)) + ", not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw IoError(where + " is not writable");
}

std::atomic<unsigned> g_counter{0};

}  // namespace

std::string file_type_text(fs::file_type type) {
  switch (type) {
    case fs::file_type::regular: return "a regular file";
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a named pipe (FIFO)";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::symlink: return "a symbolic link";
    default: return "a special file";
  }
}

std::string file_mode_text(unsigned st_mode) { return file_type_text(type_of(static_cast<mode_t>(st_mode))); }

fs::path check_output_path(const std::string& path, const std::string& what) {
  if (path.empty()) throw IoError(what + ": the path is empty");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT) refuse(what, path, std::string("cannot be accessed: ") + std::strerror(err));
    check_folder(fs::path(path), what);
    return fs::path(path);
  }
  fs::path target(path);
  if (S_ISLNK(st.st_mode)) {
    if (::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT) refuse(what, path, "is a symbolic link to a missing file");
      refuse(what, path, std::string("is a symbolic link that cannot be followed: ") + std::strerror(err));
    }
    std::error_code ec;
    target = fs::canonical(path, ec);
    if (ec) refuse(what, path, "is a symbolic link that cannot be resolved: " + ec.message());
    if (!S_ISREG(st.st_mode))
      refuse(what, path, "is a symbolic link to " + file_type_text(type_of(st.st_mode)) + " ('" + target.string() +
                             "'), not a regular file: refusing to replace it");
  }
  if (!S_ISREG(st.st_mode))
    refuse(what, path, "is " + file_type_text(type_of(st.st_mode)) + ", not a regular file: refusing to write there");
  if (::access(target.c_str(), W_OK) != 0) refuse(what, path, "exists and is not writable");
  check_folder(target, what);
  return target;
}

AtomicOutput::AtomicOutput(const std::string& path, std::string what) : path_(path), what_(std::move(what)) {
  target_ = check_output_path(path_, what_);
  const fs::path dir = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
  // <stem>.tmp-<pid>-<n><extension>: the extension kept for writers that go by it (the movie container).
  std::string stem = target_.stem().string(), ext = target_.extension().string();
  if (ext.size() > 16) ext.clear();
  if (stem.size() > 200) stem.resize(200);  // the suffix must fit within NAME_MAX
  for (int attempt = 0;; ++attempt) {
    const std::string name = stem + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter++) + ext;
    const std::string temp = (dir / name).string();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) {
      ::close(fd);
      temp_ = temp;
      return;
    }
    const int err = errno;
    if (err != EEXIST || attempt >= 100)
      throw IoError("cannot create a temporary file in folder '" + dir.string() + "' for " + quoted(what_, path_) +
                    ": " + std::strerror(err));
  }
}

AtomicOutput::~AtomicOutput() {
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicOutput::commit() {
  if (committed_) return;
  struct stat st {};
  // The target may have been replaced since the check: never rename over anything but a regular file.
  if (::lstat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    refuse(what_, path_,
           "is now " + file_type_text(type_of(st.st_mode)) + ", not a regular file: refusing to replace it");
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    throw IoError("cannot move the written " + what_ + " into place at '" + path_ + "': " + std::strerror(err));
  }
  committed_ = true;
}

void write_file_atomically(const std::string& path, const std::function<void(std::FILE*)>& write,
                           const std::string& what) {
  AtomicOutput out(path, what);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(out.temp_path().c_str(), "wb"), &std::fclose);
  if (!f) throw IoError("cannot open '" + out.temp_path() + "' for writing: " + std::strerror(errno));
  write(f.get());
  const bool failed = std::ferror(f.get()) != 0;
  const int closed = std::fclose(f.release());
  if (failed || closed != 0) throw IoError("cannot write " + quoted(what, path) + ": " + std::strerror(errno));
  out.commit();
}

void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what) {
  write_file_atomically(path, [&](std::FILE* f) { std::fwrite(bytes.data(), 1, bytes.size(), f); }, what);
}

}  // namespace qgpu
