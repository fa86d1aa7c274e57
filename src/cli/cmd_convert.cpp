// qgpu convert IN OUT.h5: any readable acquisition (with the load flags: regions, bins, pixel mask) written as a
// DECTRIS-style bitshuffle+LZ4 HDF5 file that every HDF5 tool reads (io/convert.hpp), or --to npy.
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "cli/load_flags.hpp"
#include "cli/progress.hpp"
#include "io/convert.hpp"

namespace qgpu::cli {

void add_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert",
                                 "Write any readable acquisition (with regions, bins, pixel mask) as a "
                                 "DECTRIS-style bitshuffle+LZ4 HDF5 file (or --to npy): exact counts");
  struct Args {
    std::string in, out, backend = "auto", dataset, to = "h5";
    unsigned threads = 0;
    std::size_t block = 0;
    LoadFlags load;
  };
  auto a = std::make_shared<Args>();
  add_input_flags(cmd, a->in, a->backend, a->dataset, a->load);
  cmd->add_option("out", a->out,
                  "output file: OUT.h5 (/entry/data/data, one frame per chunk, filter 32008), or "
                  "OUT.npy (4D, with OUT.json: calibration, pixel mask, provenance) with --to npy, or OUT.emd (py4DSTEM "
                  "EMD 1.0) with --to emd")
      ->required();
  cmd->add_option("--to", a->to, "h5 | npy | emd (py4DSTEM EMD 1.0: datacube + Calibration)")->check(CLI::IsMember({"h5", "npy", "emd"}))->capture_default_str();
  cmd->add_option("--threads", a->threads, "encoder threads (0: one per core)")->capture_default_str();
  cmd->add_option("--block", a->block,
                  "h5: bitshuffle block size in elements, a multiple of 8 (0: the plugin's "
                  "default)")
      ->capture_default_str();
  cmd->callback([a] {
    io::LoadOptions lo = load_options(a->backend, a->dataset, a->load);
    io::ConvertOptions co;
    co.to = a->to;
    co.threads = a->threads;
    co.block_elems = a->block;
    co.progress = progress_bar("writing");
    const io::ConvertResult r = io::convert(a->in, a->out, lo, co);
    end_progress_line();
    const Shape4D& s = r.shape;
    const auto size = [](double bytes) {
      char b[32];
      std::snprintf(b, sizeof b, bytes >= 1e9 ? "%.2f GB" : "%.2f MB", bytes >= 1e9 ? bytes / 1e9 : bytes / 1e6);
      return std::string(b);
    };
    std::printf(
        "wrote %s: %zu x %zu x %zu x %zu %s, %s of counts in %s (%.1fx smaller) [load %.2f s, write %.2f s, "
        "%.2f GB/s]\n",
        r.path.c_str(), s.scan_rows, s.scan_cols, s.det_rows, s.det_cols, dtype_name(r.dtype).c_str(),
        size(double(r.dense_bytes)).c_str(), size(double(r.file_bytes)).c_str(),
        r.file_bytes ? double(r.dense_bytes) / double(r.file_bytes) : 0.0, r.load_seconds, r.write_seconds,
        r.write_seconds > 0 ? double(r.dense_bytes) / 1e9 / r.write_seconds : 0.0);
    if (!r.sidecar.empty()) std::printf("wrote %s\n", r.sidecar.c_str());
  });
}

}  // namespace qgpu::cli
