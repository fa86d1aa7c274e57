#include "io/hdf5/bitshuffle_plugin.hpp"

#include <dlfcn.h>
#include <hdf5.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace qgpu::h5 {

namespace {

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* f = std::getenv("QGPU_BSHUF_PLUGIN")) out.emplace_back(f);
  if (const char* p = std::getenv("HDF5_PLUGIN_PATH")) {
    std::stringstream ss(p);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty()) out.push_back(dir + "/libh5bshuf.so");
  }
  out.emplace_back("/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so");
  out.emplace_back("/usr/local/hdf5/lib/plugin/libh5bshuf.so");
  return out;
}

void register_from_plugin() {
  if (H5Zfilter_avail(kBitshuffleFilter) > 0) return;
  std::string tried;
  for (const std::string& path : candidates()) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      tried += "\n  " + path + ": " + dlerror();
      continue;
    }
    using InfoFn = const void* (*)();
    auto info = reinterpret_cast<InfoFn>(dlsym(lib, "H5PLget_plugin_info"));
    if (!info || H5Zregister(info()) < 0) {
      tried += "\n  " + path + ": not a usable HDF5 filter plugin";
      continue;
    }
    return;  // the library stays loaded for the life of the process
  }
  throw IoError("the HDF5 bitshuffle filter (32008) is not available: install Debian package 'bitshuffle' or set "
                "QGPU_BSHUF_PLUGIN to libh5bshuf.so. Tried:" + tried);
}

}  // namespace

void ensure_bitshuffle_filter() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    try {
      register_from_plugin();
    } catch (const IoError& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw IoError(failure);
}

}  // namespace qgpu::h5
