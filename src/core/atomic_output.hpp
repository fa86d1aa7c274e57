#pragma once
// Every file qgpu writes (npy, png, json, product caches, movies, samples) goes through here: the data is
// written to a temporary file beside the target (same folder, so the rename is atomic) and renamed over the
// target only when the target is absent or a regular file. An output path that names a directory, FIFO,
// socket or device is an IoError naming it and what it is: nothing is opened there (opening a FIFO blocks
// until a reader comes) and nothing replaces it (renaming over /dev/null as root destroys the device node).
// A symbolic link to a regular file is followed: the file it names is replaced, the link kept.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace qgpu {

// "a directory", "a named pipe (FIFO)", "a socket", "a character device", "a block device", ...
std::string file_type_text(std::filesystem::file_type type);
std::string file_mode_text(unsigned st_mode);  // the same, from a struct stat's st_mode

// The path a write to `path` replaces (symbolic links followed) after checking it may be written: absent with
// an existing folder, or a writable regular file. IoError otherwise, naming `what` ("cache output", ...),
// the path and what is there. Call it before a long computation so that a bad output fails first.
std::filesystem::path check_output_path(const std::string& path, const std::string& what = "output");

// A temporary file beside the target (<stem>.tmp-<pid>-<n><extension>), created empty (O_EXCL, mode 0666 less
// the umask) by the constructor, which checks the target first (check_output_path). Write it through
// temp_path() (HDF5, FFmpeg open by name; close them before commit), then commit(); without commit the
// temporary is removed.
class AtomicOutput {
 public:
  explicit AtomicOutput(const std::string& path, std::string what = "output");
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& temp_path() const { return temp_; }
  const std::string& path() const { return path_; }  // as given

  // Checks the target again (it may have changed meanwhile) and renames the temporary over it.
  void commit();

 private:
  std::string path_, what_;
  std::filesystem::path target_;
  std::string temp_;
  bool committed_ = false;
};

// Writes the whole file through `write` on a stdio stream of the temporary, then commits. A write or close
// error is an IoError naming the path; an exception from `write` leaves the target untouched.
void write_file_atomically(const std::string& path, const std::function<void(std::FILE*)>& write,
                           const std::string& what = "output");
void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what = "output");

}  // namespace qgpu
