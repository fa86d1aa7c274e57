// qgpu image FILE --bf/--adf/--dpc/--idpc -o DIR: virtual images from a loaded dataset.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cache/cache.hpp"
#include "cli/checks.hpp"
#include "cli/commands.hpp"
#include "cli/image_from_cache.hpp"
#include "cli/load_flags.hpp"
#include "cli/outputs.hpp"
#include "cli/progress.hpp"
#include "detector/virtual_detector.hpp"
#include "display/defaults.hpp"
#include "display/pattern.hpp"
#include "dpc/pipeline.hpp"
#include "io/hdf5/load.hpp"
#include "mpi/split_run.hpp"
#include "workflow/scan_products.hpp"

namespace qgpu::cli {

namespace {

struct ImageArgs {
  std::string file, out = "out", backend = "auto", dataset, colormap, scale = "linear";  // colormap "": by product
  std::vector<std::string> bf;  // [] or [""]: the fitted disk; [R]: radius R
  std::vector<std::string> adf;  // [] or [""]: radii from the BF disk; [INNER, OUTER]
  std::vector<double> center, percentiles;  // empty: 0.5 99.5
  std::optional<double> radius;  // --radius: the BF disk radius (replaces the fitted one)
  bool com = false, dpc = false, idpc = false, mean = false;
  PngFlags png;
  std::vector<double> rotation;  // angle_deg [transpose 0/1]; empty = calibrate
  LoadFlags load;
};

// Everything a user typed, checked before the file is opened.
struct Checked {
  std::optional<double> bf_radius;
  std::optional<detector::AnnulusRadii> adf;  // empty: from the BF disk
  std::string colormap;                     // --colormap, or inferno
  display::DisplayOptions look, signed_look;  // signed_look: the DPC fields' (--colormap, or RdBu_r)
  bool symmetric = true;  // the DPC fields' range symmetric about 0 (given --percentiles are taken as they are)
  std::filesystem::path dir;
};

Checked check(const ImageArgs& a, bool want_bf, bool want_adf) {
  Checked c;
  check_backend_name(a.backend);
  if (want_bf && !a.bf.empty() && !a.bf[0].empty()) {
    c.bf_radius = number("--bf", a.bf[0]);
    check_positive("--bf radius", *c.bf_radius);
  }
  if (want_adf && !(a.adf.empty() || (a.adf.size() == 1 && a.adf[0].empty()))) {
    if (a.adf.size() != 2) throw InvalidArgument("--adf takes no value (radii from the BF disk) or INNER OUTER");
    c.adf = detector::AnnulusRadii{number("--adf", a.adf[0]), number("--adf", a.adf[1])};
    if (c.adf->inner < 0 || c.adf->inner >= c.adf->outer)
      throw InvalidArgument("--adf: need 0 <= INNER < OUTER, got " + a.adf[0] + " " + a.adf[1]);
  }
  for (double v : a.center) check_finite("--center", v);
  if (a.radius) check_positive("--radius", *a.radius);
  for (double v : a.rotation) check_finite("--rotation", v);
  if (a.rotation.size() > 1 && a.rotation[1] != 0 && a.rotation[1] != 1)
    throw InvalidArgument("--rotation: TRANSPOSE is 0 or 1");
  a.load.check();
  c.colormap = a.colormap.empty() ? display::kImageColormap : a.colormap;
  c.symmetric = a.percentiles.empty();
  const double lo = c.symmetric ? 0.5 : a.percentiles[0], hi = c.symmetric ? 99.5 : a.percentiles[1];
  c.look = display_options(c.colormap, a.scale, lo, hi);
  c.signed_look = display_options(a.colormap.empty() ? display::kDivergingColormap : a.colormap, a.scale, lo, hi);
  c.dir = output_folder(a.out);
  return c;
}

// The image workflow, written once: one process passes its Dataset, an MPI run its gathered row slabs (src/mpi).
void compute_and_write(workflow::ScanProducts& src, const ImageArgs& a, const Checked& checked, bool want_bf,
                       bool want_adf) {
  std::printf("%s\n", src.summary().c_str());
  const std::filesystem::path& dir = checked.dir;
  // Pixel sizes from the load's calibration (io::calibration_of_load: a binned load's pixels are bin times larger).
  const nlohmann::json cal = src.metadata().value("calibration", nlohmann::json::object());
  const std::size_t bin_scan = a.load.bin_scan, bin_det = a.load.bin_detector;
  const std::string scan_rule = bin_scan > 1 ? "(the file's x " + std::to_string(bin_scan) + ", --bin-scan)" : "";
  const std::string det_rule = bin_det > 1 ? "(the file's x " + std::to_string(bin_det) + ", --bin-detector)" : "";
  const ProductLook look =
      product_look(checked.look, a.png, product_calibration(cal, "scan", 1.0, scan_rule));
  const ProductLook signed_look =
      product_look(checked.signed_look, a.png, product_calibration(cal, "scan", 1.0, scan_rule),
                   checked.symmetric);
  std::optional<detector::Center> center;
  if (!a.center.empty()) center = detector::Center{a.center[0], a.center[1]};
  src.set_disk(center, a.radius);  // the given centre / radius replace the fit's everywhere below
  // The BF disk when a default comes from it: printed with the fit's confidence, recorded in the images' provenance,
  // and a warning naming the overrides when the fit is uncertain.
  std::optional<nlohmann::json> disk_json;
  const auto disk_used = [&]() -> const nlohmann::json& {
    if (!disk_json) {
      disk_json = detector::fit_json(src.disk());
      report_bf_disk(*disk_json);
    }
    return *disk_json;
  };

  if (a.mean) {  // .npy holds the mean counts; the PNG shows the dark-field halo too (display/pattern.hpp)
    const Image<float> mean = src.mean_pattern();
    if (std::none_of(mean.data.begin(), mean.data.end(), [](float v) { return v > 0; }))
      throw InvalidArgument("--mean: the mean diffraction pattern is zero everywhere: the data (in the loaded region) "
                            "hold no counts, so there is nothing to show");
    write_outputs(dir, "mean_pattern", mean,
                  product_look(display::pattern_display_options(checked.colormap), a.png,
                               product_calibration(cal, "detector", 1.0, det_rule)),
                  &display::pattern_log);
  }
  if (want_bf) {
    SumImage img = src.bf_with_defaults(checked.bf_radius, center);
    if (!(checked.bf_radius && center)) img.provenance().parameters["bf_disk"] = disk_used();
    write_outputs(dir, "bf", img, look);
  }
  if (want_adf) {
    const detector::AnnulusRadii radii = checked.adf ? *checked.adf : src.default_adf_radii(center);
    SumImage img = src.adf(radii.inner, radii.outer, src.center_or_fit(center));
    if (!(checked.adf && center)) img.provenance().parameters["bf_disk"] = disk_used();
    write_outputs(dir, "adf", img, look);
  }
  if (a.com || a.dpc || a.idpc) {
    dpc::ComResult com = src.center_of_mass();
    if (a.com) {
      write_outputs(dir, "com_row", com.com_row, look);
      write_outputs(dir, "com_col", com.com_col, look);
    }
    dpc::PipelineParams pp;
    if (!a.rotation.empty()) pp.rotation = dpc::Rotation{a.rotation[0], a.rotation.size() > 1 && a.rotation[1] != 0};
    pp.idpc = a.idpc;
    const dpc::PipelineResult r = src.dpc_pipeline(std::move(com), pp);  // calibrated: CoM curl, or parallax
    if (r.calibration) {
      const dpc::RotationResult& rot = *r.calibration;
      write_json(dir / "rotation.json", rot.provenance.to_json());
      if (rot.method == "parallax")
        std::printf("  rotation       %.2f deg, transpose %s (calibrated by the parallax shift field: CoM curl not "
                    "significant; confidence %.3f)\n", printed_angle(rot.angle_deg), rot.transpose ? "yes" : "no", rot.confidence);
      else
        std::printf("  rotation       %.2f +- %.2f deg, transpose %s (calibrated: RMS curl %.4g, confidence %.3f)\n",
                    printed_angle(rot.angle_deg), rot.angle_sigma_deg, rot.transpose ? "yes" : "no", rot.curl_rms,
                    rot.confidence);
      if (!rot.determined) std::fprintf(stderr, "qgpu: warning: %s (--rotation ANGLE [TRANSPOSE])\n",
                                        dpc::rotation_warning(rot).c_str());
    }
    if (a.dpc) {
      write_outputs(dir, "dpc_row", r.field_row, signed_look);
      write_outputs(dir, "dpc_col", r.field_col, signed_look);
    }
    if (a.idpc) write_outputs(dir, "idpc", *r.idpc, look);
  }
}

void run(const ImageArgs& a, bool want_bf, bool want_adf) {
  const Checked checked = check(a, want_bf, want_adf);
  const io::LoadOptions lo = load_options(a.backend, a.dataset, a.load);
  const auto pipeline = [&](workflow::ScanProducts& src) { compute_and_write(src, a, checked, want_bf, want_adf); };
  if (mpi::launched_with_ranks()) return mpi::run_split(a.file, lo, pipeline);
  workflow::DatasetProducts src(io::load(a.file, lo));
  pipeline(src);
}

}  // namespace

void write_scan_images(const Dataset& ds, const std::string& dir, const std::vector<double>& center,
                       std::optional<double> radius) {
  ImageArgs a;
  a.out = dir;
  a.center = center;
  a.radius = radius;
  a.bf = {""};
  a.adf = {""};
  a.dpc = a.idpc = true;
  const Checked checked = check(a, true, true);
  workflow::DatasetProducts src(ds);
  compute_and_write(src, a, checked, true, true);
}

namespace {

CacheImageRequest cache_request(const ImageArgs& a, bool want_bf, bool want_adf) {
  const Checked checked = check(a, want_bf, want_adf);
  CacheImageRequest r;
  r.file = a.file;
  r.colormap = checked.colormap;
  r.dir = checked.dir;
  r.look = checked.look;
  r.signed_look = checked.signed_look;
  r.symmetric = checked.symmetric;
  r.png = a.png;
  r.bf_radius = checked.bf_radius;
  if (checked.adf) r.adf = std::pair<double, double>{checked.adf->inner, checked.adf->outer};
  r.center = a.center;
  r.disk_radius = a.radius;
  r.rotation = a.rotation;
  r.want_bf = want_bf;
  r.want_adf = want_adf;
  r.com = a.com;
  r.dpc = a.dpc;
  r.idpc = a.idpc;
  r.mean = a.mean;
  if (a.load.selects_data() || !a.dataset.empty())
    r.load_only_option = "a load option (--scan-region, --detector-region, --bin-*, --dataset, --scan-shape, --pixel-mask, --pixel-mask-file)";
  return r;
}

// `qgpu image --bf scan.h5 --com`: the optional value of --bf / --adf took the file. A value that is not a number
// is the file when no other was given (a radius is always a number).
void take_file_from_values(ImageArgs& a) {
  if (!a.file.empty()) return;
  for (std::vector<std::string>* values : {&a.bf, &a.adf})
    for (auto it = values->begin(); it != values->end(); ++it) {
      std::size_t used = 0;
      try {
        (void)std::stod(*it, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (!it->empty() && used != it->size()) {
        a.file = *it;
        values->erase(it);
        if (values->empty()) values->push_back("");  // a bare --bf / --adf
        return;
      }
    }
}

}  // namespace

void add_image(CLI::App& app) {
  auto* cmd = app.add_subcommand("image", "Compute virtual images (BF, ADF, CoM, DPC, iDPC) as PNG + .npy");
  auto a = std::make_shared<ImageArgs>();
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("-o,--out", a->out, "output folder (created if missing)");
  CLI::Option* file = add_input_flags(cmd, a->file, a->backend, a->dataset, a->load);
  file->required(false);  // checked in the callback: --bf / --adf may have taken it (take_file_from_values)
  auto* bf = cmd->add_option("--bf", a->bf,
                             "bright field; optional RADIUS in pixels (default: the fitted BF disk; a word that is "
                             "no number after a bare --bf or --adf is the file)")
                 ->expected(0, 1)
                 ->default_str("");  // CLI11 passes this as the value of a bare --bf: "" = the fitted disk
  auto* adf = cmd->add_option("--adf", a->adf,
                              "annular dark field; optional INNER OUTER radii in pixels (default: 1.2 x and "
                              "min(3 x, edge) the fitted BF disk radius)")
                  ->expected(0, 2)
                  ->default_str("");  // a bare --adf gets "": radii from the BF disk
  cmd->add_option("--center", a->center, "BF disk centre ROW COL, detector pixels (replaces the fit's everywhere)")
      ->expected(2)
      ->default_str("fitted BF disk centre");
  cmd->add_option("--radius", a->radius,
                  "BF disk radius, detector pixels (replaces the fit's: the --bf default and the ADF default radii)")
      ->default_str("fitted BF disk radius");
  cmd->add_flag("--com", a->com, "centre of mass maps");
  cmd->add_flag("--dpc", a->dpc, "centred, rotation-corrected DPC maps");
  cmd->add_flag("--idpc", a->idpc, "integrated DPC (Fourier integration)");
  cmd->add_flag("--mean", a->mean, "mean diffraction pattern (log scale, clipped so the dark-field halo shows)");
  cmd->add_option("--rotation", a->rotation, "ANGLE_DEG [TRANSPOSE 0/1] instead of calibrating")
      ->expected(1, 2)
      ->default_str("calibrated");
  std::string maps;
  for (const std::string& n : display::colormap_names()) maps += (maps.empty() ? "" : " | ") + n;
  cmd->add_option("--colormap", a->colormap, maps)->default_str("inferno; DPC maps: RdBu_r, range symmetric about 0");
  cmd->add_option("--scale", a->scale, "linear | log | signed_log");
  cmd->add_option("--percentiles", a->percentiles,
                  "display clip percentiles LOW HIGH (default 0.5 99.5; DPC maps symmetric about 0 unless given)")
      ->expected(2);
  add_png_flags(cmd, a->png);
  cmd->callback([a, bf, adf] {
    take_file_from_values(*a);
    if (a->file.empty()) throw CLI::RequiredError("file");
    const bool want_bf = bf->count() > 0, want_adf = adf->count() > 0;
    if (!want_bf && !want_adf && !a->com && !a->dpc && !a->idpc && !a->mean)
      throw CLI::ValidationError("image", "choose at least one of --bf, --adf, --com, --dpc, --idpc, --mean");
    run_command([&] {
      OutputGuard outputs(a->out);  // all products or none
      if (cache::is_cache_file(a->file)) {
        if (mpi::launched_with_ranks() && mpi::launcher_rank() != 0) return outputs.keep();  // rank 0 answers alone
        image_from_cache(cache_request(*a, want_bf, want_adf));
      } else {
        run(*a, want_bf, want_adf);
      }
      outputs.keep();
    });
  });
}

}  // namespace qgpu::cli
