#include "io/hdf5/isolated_parse.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>

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

// How the child's parse ended, as the first byte it writes: 'k' completed (validate_in_child: a result, or an
// exception that is not a qgpu error: the caller's own call reproduces it), 'r' a result (parse_in_child: 8 bytes of
// its length in host order; the result is in the result file), 'x' another exception (parse_in_child; its message follows), else the
// type of the qgpu error, its message following.
constexpr std::size_t kMaxMessage = 16384;               // an error message (cut to this)
constexpr std::uint64_t kMaxResult = std::uint64_t(1) << 30;  // a result
constexpr std::size_t kResultHeader = 1 + sizeof(std::uint64_t);

std::atomic<std::size_t> g_children{0};

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

// Runs `produce` (the parse, returning the report to send) and turns a qgpu error into its report; another exception
// reports `other` ("x": with its message).
std::string report_of(const std::function<std::string()>& produce, const std::string& other) {
  auto typed = [&](char code, const Error& e) { return std::string(1, code) + std::string(e.what()).substr(0, kMaxMessage); };
  try {
    return produce();
  } catch (const IoError& e) {
    return typed('I', e);
  } catch (const FormatError& e) {
    return typed('F', e);
  } catch (const DTypeError& e) {
    return typed('D', e);
  } catch (const RegionError& e) {
    return typed('R', e);
  } catch (const InvalidArgument& e) {
    return typed('A', e);
  } catch (const BackendUnavailable& e) {
    return typed('B', e);
  } catch (const OutOfMemory& e) {
    return typed('O', e);
  } catch (const DeviceError& e) {
    return typed('V', e);
  } catch (const Error& e) {
    return typed('E', e);
  } catch (const std::exception& e) {
    return other == "x" ? other + std::string(e.what()).substr(0, kMaxMessage) : other;
  } catch (...) {
    return other;
  }
}

// The child: parse, report how it ended, leave without running the parent's exit handlers.
[[noreturn]] void run_child(int write_fd, const std::function<std::string()>& produce, const std::string& other,
                            bool hang) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);  // plain death, no handler
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // no core file per damaged input
  if (hang)
    for (;;) ::pause();
  const std::string out = report_of(produce, other);
  const char* p = out.data();
  std::size_t left = out.size();
  while (left > 0) {
    const ssize_t n = ::write(write_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= std::size_t(n);
  }
  // The parent reads the report once the pipe closes; closed here, not by the exit, which first unmaps this
  // process's memory (a tenth of a second and more after a parse of millions of chunks).
  ::close(write_fd);
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

// Reads what the child reports until it closes the pipe (or sent more than `max` bytes). Returns it ("" when the pipe
// closed without a report: the child died). Throws FormatError (after killing the child) when the deadline passes
// first.
std::string wait_for_report(int read_fd, pid_t child, const std::string& file, double timeout, std::size_t max) {
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
    char buf[65536];
    ssize_t n;
    while ((n = ::read(read_fd, buf, sizeof buf)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return got;  // the child closed the pipe (it left, or died)
    got.append(buf, std::size_t(n));
    if (got.size() > max) {  // more than any report: stop it (the caller finds the report malformed)
      ::kill(child, SIGKILL);
      return got;
    }
  }
}

// A report of success sent whole: "k" (validated) or a result's header ('r' and its 8-byte length).
bool complete(const std::string& report) {
  return report == "k" || (report.size() == kResultHeader && report[0] == 'r');
}

// How a child ended: its report and its wait status.
struct ChildEnd {
  std::string report;
  bool waited = false;
  int status = 0;
};

// Forks a child running `produce` (see run_child) and waits for its report. nullopt: no child could be started.
std::optional<ChildEnd> run_in_child(const std::string& file, const std::function<std::string()>& produce,
                                     const std::string& other, std::size_t max) {
  const double timeout = timeout_seconds();
  const bool hang = simulate_hang();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;  // no isolation possible (out of descriptors)
  const pid_t child = ::fork();
  if (child < 0) {  // no process left
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(fds[1], produce, other, hang);
  }
  g_children.fetch_add(1);
  ::close(fds[1]);
  ChildEnd end;
  try {
    end.report = wait_for_report(fds[0], child, file, timeout, max);
  } catch (...) {
    ::close(fds[0]);
    throw;
  }
  ::close(fds[0]);
  if (complete(end.report)) {
    // A whole report of success: nothing the child does after it changes the outcome. Its exit (unmapping its
    // memory) is waited for on another thread, not before the caller goes on.
    try {
      std::thread([child] {
        while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
        }
      }).detach();
      return end;
    } catch (const std::system_error&) {  // no thread to be had: waited for here
    }
  }
  pid_t w;
  while ((w = ::waitpid(child, &end.status, 0)) < 0 && errno == EINTR) {
  }
  end.waited = w == child;
  return end;
}

// The child died without a complete report.
[[noreturn]] void throw_crashed(const ChildEnd& end, const std::string& file) {
  if (end.waited && WIFSIGNALED(end.status))
    throw FormatError("HDF5 library crashed parsing '" + file + "' (" + signal_text(WTERMSIG(end.status)) +
                      "): its metadata is damaged");
  if (end.waited && WIFEXITED(end.status))
    throw FormatError("HDF5 library crashed parsing '" + file + "' (the parse exited with status " +
                      std::to_string(WEXITSTATUS(end.status)) + "): its metadata is damaged");
  throw FormatError("HDF5 library crashed parsing '" + file + "': its metadata is damaged");
}

bool died(const ChildEnd& end) {
  return end.waited && (WIFSIGNALED(end.status) || (WIFEXITED(end.status) && WEXITSTATUS(end.status) != 0));
}

}  // namespace

bool parse_isolation_enabled() { return isolation_enabled(); }

std::string file_identity(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return {};
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
         std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

void validate_in_child(const std::string& file, const std::string& key, const std::function<void()>& parse) {
  if (!isolation_enabled()) return;
  const std::string fid = file_identity(file);
  const std::string id = fid.empty() ? fid : fid + ":" + key;
  if (!id.empty()) {
    std::lock_guard lock(settings().mutex);
    if (settings().validated.count(id)) return;
  }
  const std::optional<ChildEnd> end = run_in_child(
      file,
      [&] {
        parse();
        return std::string("k");
      },
      "k", kMaxMessage + 1);
  if (!end) return;  // no child: parse in-process as before
  if (end->report == "k") {
    if (!id.empty()) {
      std::lock_guard lock(settings().mutex);
      settings().validated.insert(id);
    }
    return;
  }
  // The parse failed with a qgpu error: raised here as it was there, and the file is not handed to HDF5 in this
  // process (on a damaged file HDF5 1.10 keeps state of its failed calls, loops closing the library at exit and
  // prints its "infinite loop closing library" dump; issue 25). Never remembered: the next call checks again.
  if (!end->report.empty()) rethrow(end->report[0], end->report.substr(1));
  throw_crashed(*end, file);
}

std::uint64_t read_child_report(std::string_view report, const std::string& file) {
  const std::string bad = "malformed report from the child process parsing '" + file + "': ";
  if (report.empty()) throw Error(bad + "it is empty");
  const char code = report[0];
  if (code != 'r') {
    if (std::string_view("IFDRABOVE").find(code) != std::string_view::npos)
      rethrow(code, std::string(report.substr(1)));
    if (code == 'x') throw Error("parsing '" + file + "' failed in the child process: " + std::string(report.substr(1)));
    throw Error(bad + "unknown report code " + std::to_string(int(static_cast<unsigned char>(code))));
  }
  if (report.size() != kResultHeader)
    throw Error(bad + "a result report is " + std::to_string(kResultHeader) + " bytes, this one " +
                std::to_string(report.size()) + (report.size() < kResultHeader ? " (short)" : ""));
  std::uint64_t n = 0;
  std::memcpy(&n, report.data() + 1, sizeof n);
  if (n > kMaxResult) throw Error(bad + "it announces " + std::to_string(n) + " bytes, more than a result holds");
  return n;
}

ChildResult::~ChildResult() {
  if (data_) ::munmap(const_cast<void*>(data_), size_);
}

ChildResult read_child_result(int fd, std::uint64_t n, const std::string& file) {
  const std::string bad = "malformed result from the child process parsing '" + file + "': ";
  if (n > kMaxResult) throw Error(bad + "it announces " + std::to_string(n) + " bytes, more than a result holds");
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(bad + "its file cannot be read (" + std::strerror(errno) + ")");
  if (st.st_size < 0 || std::uint64_t(st.st_size) != n)
    throw Error(bad + "the report announces " + std::to_string(n) + " bytes but the result holds " +
                std::to_string(st.st_size) + (std::uint64_t(st.st_size) < n ? " (short)" : ""));
  if (n == 0) return ChildResult(nullptr, 0);
  void* p = ::mmap(nullptr, std::size_t(n), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) throw Error(bad + "it cannot be mapped (" + std::strerror(errno) + ")");
  return ChildResult(p, std::size_t(n));
}

std::optional<ChildResult> parse_in_child(const std::string& file, const std::function<std::string()>& parse) {
  if (!isolation_enabled()) return std::nullopt;
  // The result goes through a memory file (a pipe moves megabytes of chunk tables several times slower), its length
  // through the pipe once it is written.
  const int result_fd = ::memfd_create("qgpu-parse-result", MFD_CLOEXEC);
  if (result_fd < 0) return std::nullopt;  // no descriptor left: parse in-process
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{result_fd};
  const std::optional<ChildEnd> end = run_in_child(
      file,
      [&] {
        const std::string result = parse();
        if (result.size() > kMaxResult)
          throw Error("the parse result of '" + file + "' is " + std::to_string(result.size()) +
                      " bytes, more than a child process sends (" + std::to_string(kMaxResult) + ")");
        std::size_t done = 0;
        while (done < result.size()) {
          const ssize_t w = ::write(result_fd, result.data() + done, result.size() - done);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) throw Error("the child process parsing '" + file + "' cannot write its result (" +
                                  std::strerror(errno) + ")");
          done += std::size_t(w);
        }
        std::string out(kResultHeader, 'r');
        const std::uint64_t n = result.size();
        std::memcpy(out.data() + 1, &n, sizeof n);
        return out;
      },
      "x", kMaxMessage + 1);
  if (!end) return std::nullopt;
  // A child that died (signal, or an exit status it never gives itself) crashed, whatever part of a report it sent.
  if (end->report.empty() || died(*end)) throw_crashed(*end, file);
  const std::uint64_t n = read_child_report(end->report, file);
  return read_child_result(result_fd, n, file);
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

std::size_t children_started() { return g_children.load(); }

void reset_parse_isolation() {
  std::lock_guard lock(settings().mutex);
  settings().timeout_override = 0;
  settings().hang_override = false;
  settings().validated.clear();
}

}  // namespace testing

}  // namespace qgpu::io
