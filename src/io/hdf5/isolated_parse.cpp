#include "io/hdf5/isolated_parse.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "core/error.hpp"

namespace qgpu::io {

namespace {

constexpr double kDefaultTimeoutSeconds = 60;

struct Settings {
  std::mutex mutex;
  std::set<std::string> validated;  // identities of files whose parse completed in a child
  double timeout_override = 0;      // > 0: set by a test
  bool hang_override = false;
};

Settings& settings() {
  static Settings s;
  return s;
}

bool isolation_enabled() {
  const char* v = std::getenv("QGPU_PARSE_ISOLATION");
  return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0));
}

double timeout_seconds() {
  {
    std::lock_guard lock(settings().mutex);
    if (settings().timeout_override > 0) return settings().timeout_override;
  }
  if (const char* v = std::getenv("QGPU_PARSE_TIMEOUT_S")) {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    if (end != v && std::isfinite(t) && t > 0) return t;
  }
  return kDefaultTimeoutSeconds;
}

bool simulate_hang() {
  {
    std::lock_guard lock(settings().mutex);
    if (settings().hang_override) return true;
  }
  const char* v = std::getenv("QGPU_TEST_PARSE_HANG");
  return v && std::strcmp(v, "1") == 0;
}

// What identifies one version of a file: a rewritten or replaced file is checked again.
std::string identity(const std::string& file, const std::string& key) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return {};
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
         std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec) + ":" + key;
}

// How the child's parse ended, as the first byte it writes: 'k' completed (a result, or an exception that is not a
// qgpu error: the caller's own call reproduces it), else the type of the qgpu error, its message following.
constexpr std::size_t kMaxMessage = 16384;  // well inside a pipe's buffer: the child never blocks writing it

[[noreturn]] void rethrow(char code, const std::string& msg) {
  switch (code) {
    case 'I': throw IoError(msg);
    case 'F': throw FormatError(msg);
    case 'D': throw DTypeError(msg);
    case 'R': throw RegionError(msg);
    case 'A': throw InvalidArgument(msg);
    case 'B': throw BackendUnavailable(msg);
    case 'O': throw OutOfMemory(msg);
    case 'V': throw DeviceError(msg);
    default: throw Error(msg);
  }
}

// The child: parse, report how it ended, leave without running the parent's exit handlers.
[[noreturn]] void run_child(int write_fd, const std::function<void()>& parse, bool hang) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);  // plain death, no handler
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // no core file per damaged input
  if (hang)
    for (;;) ::pause();
  std::string out = "k";
  auto typed = [&](char code, const Error& e) {
    out = std::string(1, code) + std::string(e.what()).substr(0, kMaxMessage);
  };
  try {
    parse();
  } catch (const IoError& e) {
    typed('I', e);
  } catch (const FormatError& e) {
    typed('F', e);
  } catch (const DTypeError& e) {
    typed('D', e);
  } catch (const RegionError& e) {
    typed('R', e);
  } catch (const InvalidArgument& e) {
    typed('A', e);
  } catch (const BackendUnavailable& e) {
    typed('B', e);
  } catch (const OutOfMemory& e) {
    typed('O', e);
  } catch (const DeviceError& e) {
    typed('V', e);
  } catch (const Error& e) {
    typed('E', e);
  } catch (...) {
  }
  const char* p = out.data();
  std::size_t left = out.size();
  while (left > 0) {
    const ssize_t n = ::write(write_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= std::size_t(n);
  }
  ::_exit(0);
}

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (name ? std::string(", SIG") + name : std::string());
}

std::string seconds_text(double s) {
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t;
}

// Reads what the child reports until it closes the pipe. Returns it ("" when the pipe closed without a report: the
// child died). Throws FormatError (after killing the child) when the deadline passes first.
std::string wait_for_report(int read_fd, pid_t child, const std::string& file, double timeout) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  std::string got;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
      throw FormatError("HDF5 library did not finish parsing the metadata of '" + file + "' within " +
                        seconds_text(timeout) + " s (damaged file? QGPU_PARSE_TIMEOUT_S sets the limit)");
    }
    pollfd p{read_fd, POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left.count(), 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(read_fd, buf, sizeof buf)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return got;  // the child closed the pipe (it left, or died)
    got.append(buf, std::size_t(n));
    if (got.size() > kMaxMessage + 1) return got;
  }
}

}  // namespace

void validate_in_child(const std::string& file, const std::string& key, const std::function<void()>& parse) {
  if (!isolation_enabled()) return;
  const std::string id = identity(file, key);
  if (!id.empty()) {
    std::lock_guard lock(settings().mutex);
    if (settings().validated.count(id)) return;
  }
  const double timeout = timeout_seconds();
  const bool hang = simulate_hang();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // no isolation possible (out of descriptors): parse in-process
  const pid_t child = ::fork();
  if (child < 0) {  // no process left: parse in-process as before
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(fds[1], parse, hang);
  }
  ::close(fds[1]);
  std::string report;
  try {
    report = wait_for_report(fds[0], child, file, timeout);
  } catch (...) {
    ::close(fds[0]);
    throw;
  }
  ::close(fds[0]);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (report == "k") {
    if (!id.empty()) {
      std::lock_guard lock(settings().mutex);
      settings().validated.insert(id);
    }
    return;
  }
  // The parse failed with a qgpu error: raised here as it was there, and the file is not handed to HDF5 in this
  // process (on a damaged file HDF5 1.10 keeps state of its failed calls, loops closing the library at exit and
  // prints its "infinite loop closing library" dump; issue 25). Never remembered: the next call checks again.
  if (!report.empty()) rethrow(report[0], report.substr(1));
  if (w == child && WIFSIGNALED(status))
    throw FormatError("HDF5 library crashed parsing '" + file + "' (" + signal_text(WTERMSIG(status)) +
                      "): its metadata is damaged");
  if (w == child && WIFEXITED(status))
    throw FormatError("HDF5 library crashed parsing '" + file + "' (the parse exited with status " +
                      std::to_string(WEXITSTATUS(status)) + "): its metadata is damaged");
  throw FormatError("HDF5 library crashed parsing '" + file + "': its metadata is damaged");
}

namespace testing {

void set_parse_timeout_seconds(double seconds) {
  std::lock_guard lock(settings().mutex);
  settings().timeout_override = seconds;
}

void simulate_parse_hang(bool on) {
  std::lock_guard lock(settings().mutex);
  settings().hang_override = on;
}

void reset_parse_isolation() {
  std::lock_guard lock(settings().mutex);
  settings().timeout_override = 0;
  settings().hang_override = false;
  settings().validated.clear();
}

}  // namespace testing

}  // namespace qgpu::io
