// Movies on the H200: frames per second of a 100-frame ADF sweep (inner radius from 1.1 to 3 BF radii, outer the
// whole detector) rendered on the GPU (detector + display kernels), and rendered + encoded to MP4 and GIF.
// usage: bench_movie FILE [scan det dtype]   (outputs under $BENCH_OUT or /tmp; BENCH_BACKEND=cpu for the reference)
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench_dataset.hpp"
#include "detector/virtual_detector.hpp"
#include "movie/movie.hpp"
#include "bench_guard.hpp"

using namespace qgpu;

static int bench_main(int argc, char** argv) {
  const double t_load = bench::now_s();
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_movie FILE [scan det dtype]\n");
    return 2;
  }
  bench::ensure_sample(argv[1], argc > 3 ? std::stoul(argv[2]) : 512, argc > 3 ? std::stoul(argv[3]) : 192,
                       argc > 4 ? dtype_from_name(argv[4]) : DType::u16);
  io::LoadOptions lo;
  lo.backend = std::getenv("BENCH_BACKEND") ? std::getenv("BENCH_BACKEND") : "cuda";
  const Dataset ds = io::load(argv[1], lo);
  std::fprintf(stderr, "loaded in %.2f s\n", bench::now_s() - t_load);
  const Shape4D& s = ds.shape();
  char shape[128];
  std::snprintf(shape, sizeof(shape), "%zux%zux%zux%zu %s", s.scan_rows, s.scan_cols, s.det_rows, s.det_cols,
                dtype_name(ds.dtype()).c_str());
  const detector::DiskFit fit = detector::fit_bf_disk(ds);
  movie::MovieSpec spec;
  spec.sequence = movie::Sequence::adf_sweep;
  spec.start = 1.1 * fit.radius;
  spec.stop = 3.0 * fit.radius;
  spec.frames = 100;
  spec.center = std::pair{fit.center_row, fit.center_col};
  spec.look.colormap = "inferno";
  spec.look.lower_percentile = 0.5;
  spec.look.upper_percentile = 99.5;
  spec.label = true;
  spec.fps = 25;
  const std::filesystem::path dir = std::getenv("BENCH_OUT") ? std::getenv("BENCH_OUT") : "/tmp";
  std::printf("NVENC (h264_nvenc opens through libavcodec): %s\n", movie::nvenc_available() ? "yes" : "no");

  // Rendering only (frames to host RGBA), warm: the frame totals cache is filled by a first pass.
  std::size_t n = 0;
  movie::render_frames(ds, spec, [&](const movie::Frame&) { ++n; });
  n = 0;
  const double t0 = bench::now_s();
  movie::render_frames(ds, spec, [&](const movie::Frame&) { ++n; });
  const double render_s = bench::now_s() - t0;
  std::printf("| movie frames rendered (%s, 100 ADF, label) | %s | %.1f ms | %.1f frames/s | no encoding |\n",
              backend_name(ds.backend()).c_str(), shape, render_s * 1e3, double(n) / render_s);

  std::vector<std::pair<std::string, std::string>> outs = {{"movie_adf.mp4", "libx264"}, {"movie_adf.gif", "gif"}};
  if (movie::nvenc_available()) outs.push_back({"movie_adf_nvenc.mp4", "h264_nvenc"});
  for (const auto& [name, encoder] : outs) {
    spec.encoder = encoder;
    const std::string path = (dir / name).string();
    const double t1 = bench::now_s();
    const movie::MovieResult r = movie::render(ds, path, spec);
    const double total = bench::now_s() - t1;
    std::printf("| movie render + encode (%s) | %s | %.1f ms | %.1f frames/s | %zu frames %zux%zu, render %.2f s, "
                "encode %.2f s, %.2f MB |\n",
                r.encoder.c_str(), shape, total * 1e3, double(r.frames) / total, r.frames, r.width, r.height,
                r.render_seconds, r.encode_seconds, double(std::filesystem::file_size(path)) / 1e6);
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_movie FILE [scan det dtype]   (outputs under $BENCH_OUT or /tmp; BENCH_BACKEND=cpu for the reference)")
