#pragma once
// Contains crashes and hangs of the HDF5 library on damaged metadata. HDF5 1.10.8 itself segfaults on some damaged
// files (tests/fuzz/known_hdf5_crashes/); a segfault cannot be caught in-process. So the first parse of a file's
// metadata runs in a forked child process with a timeout: when the child dies by a signal or does not finish, the
// caller gets a FormatError naming the file instead of crashing or hanging. A parse that completes in the child
// marks the file validated for this process, and the caller then parses it itself; later parses of the same
// unchanged file (same device, inode, size, mtime, ctime, dataset) skip the child. A parse that fails in the child
// with a qgpu error is raised in the caller with the same type and message, the caller not parsing the file.
// parse_in_child goes further: the child sends its result back, and the caller uses it instead of parsing the file
// itself (inspect_hdf5: the FileInfo, io/hdf5/file_info_wire.hpp), so that HDF5 never reads the metadata of such a
// file in the caller's process.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace qgpu::io {

// Runs `parse` (HDF5 metadata reads of `file`) first in a child process unless this file and `key` were validated
// before. Raises FormatError "HDF5 library crashed parsing '<file>' (signal N, NAME)" when the child is killed by a
// signal, and FormatError "... did not finish parsing ..." after the timeout. A qgpu error (IoError, FormatError,
// ...) thrown by `parse` in the child is raised here with its type and message, so that the caller never hands a
// file HDF5 failed on to HDF5 in its own process (HDF5 1.10 keeps state of such failed calls and prints its
// "infinite loop closing library" dump at exit). Any other outcome (a result, another exception) counts as
// validated: the caller's own call reproduces it.
// Settings (read at each call): QGPU_PARSE_ISOLATION=0 turns the child off (trusted files only);
// QGPU_PARSE_TIMEOUT_S (default 60) bounds the child; QGPU_TEST_PARSE_HANG=1 makes the child sleep instead of
// parsing (test hook for the timeout path).
void validate_in_child(const std::string& file, const std::string& key, const std::function<void()>& parse);

// Runs `parse` in a child process every time and returns the bytes it returned there (its result, serialised by the
// caller; the child writes them to a memory file and reports their length on the pipe), with the crash, timeout and typed-error handling of validate_in_child. Any other exception in the child
// is raised here as Error naming the file and its message. Returns nullopt when isolation is off
// (QGPU_PARSE_ISOLATION=0) or no child process can be started (no descriptors or processes left): the caller then
// parses in-process. Results up to 1 GiB.
class ChildResult;
std::optional<ChildResult> parse_in_child(const std::string& file, const std::function<std::string()>& parse);

// The bytes a child process returned: its memory file mapped read-only (no copy of the tens of megabytes of a
// chunk table), unmapped with this object.
class ChildResult {
 public:
  ChildResult(const void* data, std::size_t size) : data_(data), size_(size) {}  // a mapping this object owns
  ChildResult(ChildResult&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  ChildResult& operator=(ChildResult&&) = delete;
  ChildResult(const ChildResult&) = delete;
  ~ChildResult();
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  const void* data_;
  std::size_t size_;
};

// Whether parsing runs in a child (QGPU_PARSE_ISOLATION, read at each call).
bool parse_isolation_enabled();

// What identifies one version of a file: device, inode, size, mtime, ctime ("" when it cannot be stat'ed). A file
// rewritten, replaced or touched gets another identity.
std::string file_identity(const std::string& file);

// The parent's side of parse_in_child's messages (exposed for tests). The pipe's report: the length of the result
// it announces, the child's typed error raised for an error report, Error naming `file` for a short or malformed one.
std::uint64_t read_child_report(std::string_view report, const std::string& file);
// The result itself, `n` bytes of the memory file `fd` the child wrote: Error naming `file` when it holds another
// count.
ChildResult read_child_result(int fd, std::uint64_t n, const std::string& file);

namespace testing {
// Test hooks, equivalent to the environment settings above; reset() restores the defaults and forgets the
// validated files.
void set_parse_timeout_seconds(double seconds);
void simulate_parse_hang(bool on);
void reset_parse_isolation();
// Child processes started by validate_in_child and parse_in_child in this process (not reset).
std::size_t children_started();
}  // namespace testing

}  // namespace qgpu::io
