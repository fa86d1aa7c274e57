#include "movie/encoder.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"

namespace qgpu::movie {

namespace {

std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot + 1);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

constexpr const char* kPluginName = "libquantem_gpu_movie.so";

// The plugin beside this library (the build tree and every installed layout keep them together), or the file
// named by QGPU_MOVIE_PLUGIN.
std::string plugin_path() {
  if (const char* f = std::getenv("QGPU_MOVIE_PLUGIN"); f && *f) return f;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plugin_path), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    const auto slash = self.find_last_of('/');
    if (slash != std::string::npos) return self.substr(0, slash + 1) + kPluginName;
  }
  return kPluginName;
}

const detail::Plugin* load_plugin(std::string& why) {
  static std::once_flag once;
  static const detail::Plugin* plugin = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    const std::string path = plugin_path();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      failure = "movies are encoded by the FFmpeg plugin, which does not load here (" + std::string(e ? e : path) +
                "): install the FFmpeg libraries (Debian: libavcodec59 libavformat59 libswscale6), or set "
                "QGPU_MOVIE_PLUGIN to " + kPluginName;
      return;
    }
    using Entry = const detail::Plugin* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(lib, "qgpu_movie_plugin"));
    const detail::Plugin* p = entry ? entry() : nullptr;
    if (!p || p->abi != detail::kPluginAbi) {
      failure = path + " is not the movie plugin of this build of quantem-gpu";
      return;
    }
    plugin = p;  // stays loaded for the life of the process
  });
  why = failure;
  return plugin;
}

}  // namespace

Container container_of(const std::string& path) {
  const std::string e = lower_extension(path);
  if (e == "mp4") return Container::mp4;
  if (e == "gif") return Container::gif;
  throw InvalidArgument("movie output '" + path + "': unknown extension (expected .mp4 or .gif)");
}

int nearest_palette_index(const display::Lut& pal, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  int best = 0;
  long best_d = -1;
  for (int i = 0; i < 256; ++i) {
    const long dr = long(pal[4 * i]) - r, dg = long(pal[4 * i + 1]) - g, db = long(pal[4 * i + 2]) - b;
    const long d = dr * dr + dg * dg + db * db;
    if (best_d < 0 || d < best_d) {
      best_d = d;
      best = i;
      if (d == 0) break;
    }
  }
  return best;
}

bool h264_nvenc_opens() {
  std::string why;
  const detail::Plugin* p = load_plugin(why);
  return p && p->nvenc_opens();
}

std::unique_ptr<Encoder> open_encoder(const std::string& path, std::size_t rows, std::size_t cols, unsigned fps,
                                      const display::Lut& palette, const std::string& encoder) {
  const Container container = container_of(path);
  if (rows == 0 || cols == 0 || rows > 16384 || cols > 16384)
    throw InvalidArgument("movie frame size " + std::to_string(cols) + "x" + std::to_string(rows) +
                          " is outside 1..16384");
  if (fps == 0 || fps > 60) throw InvalidArgument("movie fps must be 1..60");
  std::string name;
  if (container == Container::mp4) {
    if (encoder == "auto") name = h264_nvenc_opens() ? "h264_nvenc" : "libx264";
    else if (encoder == "libx264" || encoder == "h264_nvenc") name = encoder;
    else throw InvalidArgument("mp4 encoder '" + encoder + "' unknown (expected auto, libx264 or h264_nvenc)");
  } else {
    if (encoder != "auto" && encoder != "gif")
      throw InvalidArgument("gif encoder '" + encoder + "' unknown (expected auto or gif)");
    name = "gif";
  }
  std::string why;
  const detail::Plugin* p = load_plugin(why);
  if (!p) throw BackendUnavailable(why);
  return p->open(path, container, rows, cols, fps, palette, name);
}

}  // namespace qgpu::movie
