#pragma once
// Special files made in the test folder (never the system's own /dev nodes): a FIFO, a bound Unix socket and,
// where the test may create one (root), a character device node with the null device's numbers. Plus a way to
// run a call that might block on a FIFO with a bound on the wait.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace qgpu::test {

inline void remove_path(const std::string& p) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

inline bool make_fifo(const std::string& p) {
  remove_path(p);
  return ::mkfifo(p.c_str(), 0600) == 0;
}

// A Unix socket bound at p (closed again: the socket file stays). A socket address holds 107 bytes, so the
// folder is named through /proc/self/fd (test folders are deep).
inline bool make_socket(const std::string& p) {
  remove_path(p);
  const std::filesystem::path path(p);
  const int dir = ::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  const std::string name = "/proc/self/fd/" + std::to_string(dir) + "/" + path.filename().string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const int fd = name.size() < sizeof(addr.sun_path) ? ::socket(AF_UNIX, SOCK_STREAM, 0) : -1;
  bool ok = false;
  if (fd >= 0) {
    std::memcpy(addr.sun_path, name.c_str(), name.size() + 1);
    ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
  }
  ::close(dir);
  return ok;
}

// A character device node with the null device's numbers (1, 3) at p, in the test folder. False where the test
// may not create device nodes (not root, or a container without CAP_MKNOD): then skip.
inline bool make_null_device_node(const std::string& p) {
  remove_path(p);
  return ::mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
}

inline std::filesystem::file_type type_at(const std::string& p) {
  std::error_code ec;
  return std::filesystem::symlink_status(p, ec).type();
}

// Runs f on a thread and waits at most `seconds`. When it has not returned by then (blocked opening a FIFO),
// the FIFO is opened from the other end once, without blocking, so that the blocked open returns; the thread is
// then joined. Returns whether f finished within the bound by itself.
inline bool finishes_within(double seconds, const std::function<void()>& f, const std::string& fifo = "") {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread t([&] {
    try {
      f();
    } catch (...) {
    }
    done.set_value();
  });
  const bool in_time =
      finished.wait_for(std::chrono::milliseconds(static_cast<long>(seconds * 1000))) == std::future_status::ready;
  while (!in_time && !fifo.empty() &&
         finished.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    for (const int flags : {O_WRONLY | O_NONBLOCK, O_RDONLY | O_NONBLOCK}) {  // whichever end it waits for
      const int fd = ::open(fifo.c_str(), flags);
      if (fd >= 0) ::close(fd);
    }
  }
  t.join();
  return in_time;
}

}  // namespace qgpu::test
