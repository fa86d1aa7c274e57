// libFuzzer harness for file inspection: the input bytes are written to a file and io::inspect reads it (as
// `qgpu info` does), then the result is rendered to JSON text. Any input must end in a FileInfo or a qgpu typed
// error (IoError, FormatError, DTypeError, ...): never a crash, a hang, another exception type, or an HDF5
// object left open (a leaked file id would make HDF5 hand the stale file to the next open of the same path).
// It calls inspect_in_process: the child process of io::inspect would hide crashes from the fuzzer.
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "core/error.hpp"
#include "io/hdf5/file_info.hpp"

namespace {

// One file per process in /dev/shm when it exists (tmpfs: no disk writes per input), else $TMPDIR or /tmp.
const std::string& input_path() {
  static const std::string path = [] {
    std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    return dir + "/qgpu_fuzz_inspect_" + std::to_string(getpid()) + ".h5";
  }();
  return path;
}

// QGPU_FUZZ_VERBOSE=1 prints each input's outcome (FileInfo JSON or the error).
bool verbose() {
  static const bool v = std::getenv("QGPU_FUZZ_VERBOSE") != nullptr;
  return v;
}

void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_inspect: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) fail("cannot write the input", path);
  try {
    // As `qgpu info` reads it: the scan shape may stay open (the metadata and calibration are read either way).
    const qgpu::io::FileInfo info = qgpu::io::inspect_in_process(path, "", 0, 0, qgpu::io::ScanShapeNeed::optional);
    const std::string json = info.to_json().dump();  // as `qgpu info --json` prints it
    if (verbose()) std::fprintf(stderr, "fuzz_inspect: ok %s\n", json.c_str());
  } catch (const qgpu::Error& e) {
    if (verbose()) std::fprintf(stderr, "fuzz_inspect: %s: %s\n", typeid(e).name(), e.what());
  } catch (const std::exception& e) {
    fail((std::string("untyped error ") + typeid(e).name()).c_str(), e.what());
  } catch (...) {
    fail("unknown exception", "");
  }
  const ssize_t open_ids = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open_ids != 0) fail("HDF5 ids left open after inspect", std::to_string(open_ids));
  std::remove(path.c_str());
  return 0;
}
