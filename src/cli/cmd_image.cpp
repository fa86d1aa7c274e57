// qgpu image FILE --bf/--adf/--dpc/--idpc -o DIR: virtual images from a loaded dataset.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cache/cache.hpp"
#include "cli/commands.hpp"
#include "cli/image_from_cache.hpp"
#include "cli/load_flags.hpp"
#include "cli/outputs.hpp"
#include "cli/progress.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "io/hdf5/load.hpp"

namespace qgpu::cli {

namespace {

struct ImageArgs {
  std::string file, out = "out", backend = "auto", dataset, colormap = "inferno", scale = "linear";
  std::vector<double> bf, adf, center, percentiles{0.5, 99.5};
  std::vector<std::size_t> scan_region, det_region;
  std::size_t bin_scan = 1, bin_det = 1;
  bool com = false, dpc = false, idpc = false, mean = false;
  std::vector<double> rotation;  // angle_deg [transpose 0/1]; empty = calibrate
  LoadFlags load;
};

Region region_of(const std::vector<std::size_t>& v) { return v.empty() ? Region{} : Region{v[0], v[1], v[2], v[3]}; }

void run(const ImageArgs& a, bool want_bf, bool want_adf) {
  io::LoadOptions lo;
  lo.backend = a.backend;
  lo.dataset_path = a.dataset;
  lo.scan_region = region_of(a.scan_region);
  lo.detector_region = region_of(a.det_region);
  lo.bin_scan = a.bin_scan;
  lo.bin_detector = a.bin_det;
  a.load.apply_to(lo);
  lo.progress = progress_bar("loading");
  const Dataset ds = io::load(a.file, lo);
  const Shape4D& s = ds.shape();
  std::printf("loaded %zux%zux%zux%zu %s on %s (%s)\n", s.scan_rows, s.scan_cols, s.det_rows, s.det_cols,
              dtype_name(ds.dtype()).c_str(), backend_name(ds.backend()).c_str(), ds.residency().c_str());
  const std::filesystem::path dir(a.out);
  std::filesystem::create_directories(dir);
  display::DisplayOptions look;
  look.colormap = a.colormap;
  look.scale = display::scale_from_name(a.scale);
  look.lower_percentile = a.percentiles[0];
  look.upper_percentile = a.percentiles[1];
  const Backend b = ds.backend();
  std::optional<detector::Center> center;
  if (!a.center.empty()) center = detector::Center{a.center[0], a.center[1]};

  if (a.mean) {
    display::DisplayOptions log_look = look;
    log_look.scale = display::Scale::log;
    write_outputs(dir, "mean_pattern", detector::mean_pattern(ds), log_look, b);
  }
  if (want_bf) {
    std::optional<double> radius;
    if (!a.bf.empty()) radius = a.bf[0];
    write_outputs(dir, "bf", detector::bf(ds, radius, center), look, b);
  }
  if (want_adf) write_outputs(dir, "adf", detector::adf(ds, a.adf[0], a.adf[1], center), look, b);
  if (a.com || a.dpc || a.idpc) {
    const dpc::ComResult com = dpc::center_of_mass(ds);
    if (a.com) {
      write_outputs(dir, "com_row", com.com_row, look, b);
      write_outputs(dir, "com_col", com.com_col, look, b);
    }
    const dpc::DpcResult d = dpc::centered_dpc(com);
    double angle = 0;
    bool transpose = false;
    if (a.rotation.empty()) {
      const dpc::RotationResult rot = dpc::calibrate_rotation(d);
      angle = rot.angle_deg;
      transpose = rot.transpose;
      std::ofstream((dir / "rotation.json").string()) << rot.provenance.to_json().dump(2) << "\n";
      std::printf("  rotation       %.2f deg, transpose %s (calibrated: RMS curl %.4g)\n", angle,
                  transpose ? "yes" : "no", rot.curl_rms);
    } else {
      angle = a.rotation[0];
      transpose = a.rotation.size() > 1 && a.rotation[1] != 0;
    }
    auto [gr, gc] = dpc::rotate_field(d, angle, transpose);
    if (a.dpc) {
      write_outputs(dir, "dpc_row", gr, look, b);
      write_outputs(dir, "dpc_col", gc, look, b);
    }
    if (a.idpc) write_outputs(dir, "idpc", dpc::idpc(gr, gc, b), look, b);
  }
}

CacheImageRequest cache_request(const ImageArgs& a, bool want_bf, bool want_adf) {
  CacheImageRequest r{a.file, a.out, a.backend, a.colormap, a.scale, a.bf, a.adf, a.center, a.percentiles,
                      a.rotation, want_bf, want_adf, a.com, a.dpc, a.idpc, a.mean, ""};
  if (!a.scan_region.empty() || !a.det_region.empty() || a.bin_scan != 1 || a.bin_det != 1 || !a.dataset.empty() ||
      !a.load.scan_shape.empty() || a.load.pixel_mask != "keep")
    r.load_only_option = "a load option (--scan-region, --detector-region, --bin-*, --dataset, --scan-shape, --pixel-mask)";
  return r;
}

}  // namespace

void add_image(CLI::App& app) {
  auto* cmd = app.add_subcommand("image", "Compute virtual images (BF, ADF, CoM, DPC, iDPC) as PNG + .npy");
  auto a = std::make_shared<ImageArgs>();
  cmd->add_option("file", a->file, "HDF5 file")->required();
  cmd->add_option("-o,--out", a->out, "output folder");
  cmd->add_option("--backend", a->backend, "cuda | cpu | auto (auto never falls back to cpu)");
  cmd->add_option("--dataset", a->dataset, "dataset path (default: discover)");
  add_load_flags(cmd, a->load);
  auto* bf = cmd->add_option("--bf", a->bf, "bright field; optional radius (default: fitted disk)")->expected(0, 1);
  auto* adf = cmd->add_option("--adf", a->adf, "annular dark field: INNER OUTER radii (pixels)")->expected(2);
  cmd->add_option("--center", a->center, "detector centre ROW COL (default: fitted disk centre)")->expected(2);
  cmd->add_flag("--com", a->com, "centre of mass maps");
  cmd->add_flag("--dpc", a->dpc, "centred, rotation-corrected DPC maps");
  cmd->add_flag("--idpc", a->idpc, "integrated DPC (Fourier integration)");
  cmd->add_flag("--mean", a->mean, "mean diffraction pattern");
  cmd->add_option("--rotation", a->rotation, "ANGLE_DEG [TRANSPOSE 0/1] instead of calibrating")->expected(1, 2);
  cmd->add_option("--scan-region", a->scan_region, "ROW0 COL0 ROWS COLS")->expected(4);
  cmd->add_option("--detector-region", a->det_region, "ROW0 COL0 ROWS COLS")->expected(4);
  cmd->add_option("--bin-scan", a->bin_scan, "exact integer scan binning");
  cmd->add_option("--bin-detector", a->bin_det, "exact integer detector binning");
  cmd->add_option("--colormap", a->colormap, "viridis | inferno | magma | gray");
  cmd->add_option("--scale", a->scale, "linear | log | signed_log");
  cmd->add_option("--percentiles", a->percentiles, "display clip percentiles LOW HIGH")->expected(2);
  cmd->callback([a, bf, adf] {
    const bool want_bf = bf->count() > 0, want_adf = adf->count() > 0;
    if (want_bf && bf->results() == std::vector<std::string>{""}) a->bf.clear();  // bare --bf: CLI11 stores 0
    if (!want_bf && !want_adf && !a->com && !a->dpc && !a->idpc && !a->mean)
      throw CLI::ValidationError("image", "choose at least one of --bf, --adf, --com, --dpc, --idpc, --mean");
    if (cache::is_cache_file(a->file)) return image_from_cache(cache_request(*a, want_bf, want_adf));
    run(*a, want_bf, want_adf);
  });
}

}  // namespace qgpu::cli
