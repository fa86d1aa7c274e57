// qgpu info FILE: metadata and readiness without reading frames.
#include <cstdio>

#include "cache/cache.hpp"
#include "cli/cache_info.hpp"
#include "cli/commands.hpp"
#include "device/device.hpp"
#include "cli/load_flags.hpp"
#include "io/hdf5/file_info.hpp"

namespace qgpu::cli {

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the 4D-STEM dataset of an HDF5 file (shape, dtype, chunks, filter)");
  struct Args {
    std::string file, dataset;
    bool json = false;
    LoadFlags load;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("file", args->file, "HDF5 file")->required();
  cmd->add_option("--dataset", args->dataset, "dataset path (default: discover)");
  cmd->add_flag("--json", args->json, "print JSON");
  add_scan_shape_flag(cmd, args->load);
  cmd->callback([args] {
    if (cache::is_cache_file(args->file)) return print_cache_info(args->file, args->json);
    const io::FileInfo fi = io::inspect(args->file, args->dataset, args->load.rows(), args->load.cols());
    if (args->json) {
      std::printf("%s\n", fi.to_json().dump(2).c_str());
      return;
    }
    const Shape4D& s = fi.shape;
    std::printf("file        %s\n", fi.path.c_str());
    std::printf("dataset     %s\n", fi.dataset_path.c_str());
    std::printf("shape       scan %zu x %zu, detector %zu x %zu (%s)\n", s.scan_rows, s.scan_cols, s.det_rows,
                s.det_cols, fi.scan_shape_source.c_str());
    std::printf("frames      %zu in %zu part%s (%s)\n", s.frames(), fi.parts.size(), fi.parts.size() == 1 ? "" : "s",
                fi.source_kind.c_str());
    if (fi.parts.size() > 1)
      for (const auto& p : fi.parts)
        std::printf("  part      frames %llu..%llu <- %s %s\n", (unsigned long long)p.first_frame,
                    (unsigned long long)(p.first_frame + p.frames - 1), p.file.c_str(), p.dataset_path.c_str());
    if (fi.ntrigger || fi.nimages) std::printf("metadata    ntrigger %lld, nimages %lld\n", fi.ntrigger, fi.nimages);
    if (fi.has_pixel_mask)
      std::printf("pixel mask  %zu bad pixels\n", fi.bad_pixels.size());
    else
      std::printf("pixel mask  none\n");
    std::printf("dtype       %s, %.3f GB decoded\n", dtype_name(fi.dtype).c_str(),
                double(s.elements() * dtype_size(fi.dtype)) / 1e9);
    std::string chunks;
    for (auto c : fi.chunk_dims) chunks += std::to_string(c) + " ";
    std::printf("chunks      %s(%s)\n", chunks.c_str(), fi.one_frame_per_chunk ? "one frame per chunk" : "other");
    for (const auto& f : fi.filters) {
      std::string cd;
      for (auto v : f.cd_values) cd += std::to_string(v) + " ";
      std::printf("filter      %d %s [%s]\n", f.id, f.name.c_str(), cd.c_str());
    }
    std::printf("ready       %s (%zu of %zu chunks written)\n", fi.ready ? "yes" : "no", fi.chunks_written,
                fi.chunks_expected);
    for (const auto& [k, v] : fi.calibration.items()) std::printf("calibration %s = %s\n", k.c_str(), v.dump().c_str());
    const DeviceReport& d = detect();
    std::printf("gpu         %s\n", d.cuda_available ? d.name.c_str() : ("none: " + d.reason).c_str());
  });
}

}  // namespace qgpu::cli
