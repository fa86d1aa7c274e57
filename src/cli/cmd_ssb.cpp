// qgpu ssb FILE: single-side-band ptychography (optionally fitting the defocus first).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <filesystem>
#include <map>

#include "core/numbers.hpp"
#include "cli/checks.hpp"
#include "cli/commands.hpp"
#include "cli/load_flags.hpp"
#include "cli/optics_flags.hpp"
#include "cli/outputs.hpp"
#include "cli/progress.hpp"
#include "detector/virtual_detector.hpp"
#include "io/hdf5/load.hpp"
#include "mpi/split_run.hpp"
#include "workflow/scan_products.hpp"
#include "ssb/params.hpp"
#include "ssb/ssb.hpp"

namespace qgpu::cli {

namespace {

struct SsbArgs {
  std::string file, out = "out", backend = "auto", dataset, weighting = "auto";
  OpticsFlags optics;
  std::optional<double> defocus, rotation;
  std::size_t preview = 0, fit_trials = 0, bin = 4;
  std::vector<double> c1_range{-500, 500};
  PngFlags png;
  bool astig = false, transpose = false;
  LoadFlags load;
};

// The flag that sets each SSB parameter (errors name what the user typed).
std::string flag_of(const std::string& key) {
  if (auto f = OpticsFlags::flag_of(key)) return *f;
  static const std::map<std::string, std::string> flags = {
      {"rotation_deg", "--rotation"}, {"C1", "--defocus"}, {"weighting", "--weighting"}};
  const auto it = flags.find(key);
  return it == flags.end() ? key : it->second;
}

ssb::ParamOverrides overrides_of(const SsbArgs& a) {
  ssb::ParamOverrides o;
  a.optics.apply_to(o);
  o.rotation_deg = a.rotation;
  if (a.transpose) o.transpose = true;
  o.C1 = a.defocus;
  o.weighting = a.weighting;
  return o;
}

// Every value a user typed, checked before the file is opened.
std::filesystem::path check(const SsbArgs& a) {
  check_backend_name(a.backend);
  a.load.check();
  ssb::check_overrides(overrides_of(a), flag_of);
  check_finite("--fit-range", a.c1_range[0]);
  check_finite("--fit-range", a.c1_range[1]);
  if (a.c1_range[0] >= a.c1_range[1]) throw InvalidArgument("--fit-range: need MIN < MAX");
  if (a.bin == 0) throw InvalidArgument("--fit-bin must be >= 1");
  return output_folder(a.out);
}

ssb::SsbParams params_for(const SsbArgs& a, const nlohmann::json& metadata) {
  return ssb::resolve_params(metadata, overrides_of(a), flag_of);
}

// The SSB workflow on a dataset holding the whole scan: the optional fit, then the reconstruction or preview.
void fit_and_reconstruct(const Dataset& ds, ssb::SsbParams p, const SsbArgs& a, const std::filesystem::path& dir) {
  if (a.fit_trials > 0) {
    ssb::FitOptions o;
    o.trials = a.fit_trials;
    o.c1_min = a.c1_range[0];
    o.c1_max = a.c1_range[1];
    o.fit_astigmatism = a.astig;
    o.detector_bin = a.bin;
    o.progress = progress_bar("fitting");
    const ssb::FitResult f = ssb::fit(ds, p, o);
    p.aberrations = f.aberrations;
    write_json(dir / "ssb_fit.json",
               nlohmann::json{{"C1", f.aberrations.C1}, {"A1", f.aberrations.A1}, {"A1_angle", f.aberrations.A1_angle},
                              {"loss", f.loss}, {"trials", a.fit_trials}, {"evaluated", f.loss_trace.size()},
                              {"loss_trace", f.loss_trace}, {"provenance", f.provenance.to_json()}});
    std::string evaluated;
    if (f.loss_trace.size() < a.fit_trials)
      evaluated = ", " + std::to_string(f.loss_trace.size()) + " evaluated: Nelder-Mead converged early";
    if (a.astig)
      std::printf("  fit            C1 = %.2f A, A1 = %.2f A at %.2f deg (loss %.4g, %zu trials%s)\n", f.aberrations.C1,
                  f.aberrations.A1, f.aberrations.A1_angle * 180.0 / kPi, f.loss, a.fit_trials,
                  evaluated.c_str());
    else
      std::printf("  fit            C1 = %.2f A (loss %.4g, %zu trials%s)\n", f.aberrations.C1, f.loss, a.fit_trials,
                  evaluated.c_str());
    if (!f.warning.empty()) std::fprintf(stderr, "qgpu: warning: %s\n", f.warning.c_str());
  }
  const ssb::SsbResult r = a.preview ? ssb::preview(ds, p, a.preview) : ssb::reconstruct(ds, p);
  display::DisplayOptions look;
  look.colormap = "gray";
  look.lower_percentile = 0.5;
  look.upper_percentile = 99.5;
  std::printf("  weighting      %s (%s)\n", r.provenance.parameters.at("weighting").get<std::string>().c_str(),
              r.provenance.parameters.at("weighting_reason").get<std::string>().c_str());
  if (r.provenance.parameters.contains("bf_disk_fit")) report_bf_disk(r.provenance.parameters.at("bf_disk_fit"));
  const nlohmann::json cal = {{"scan_step_angstrom", p.scan_step_angstrom},
                               {"detector_mrad_per_pixel", p.detector_mrad_per_pixel}};
  write_outputs(dir, a.preview ? "ssb_preview_phase" : "ssb_phase", r.phase,
                product_look(look, a.png, product_calibration(cal, "scan", 1.0, "(the step the reconstruction used)")));
}

// SSB needs the whole field: an MPI run gathers the BF disk (with a margin) of every frame at rank 0 and runs the
// same workflow there on that crop, with the disk centre (fitted on the gathered sum pattern) moved into it. The
// crop starts on a multiple of the detector binnings, so the binned K blocks are those of one process.
void gathered_ssb(workflow::ScanProducts& src, const SsbArgs& a, const std::filesystem::path& dir) {
  std::printf("%s\n", src.summary().c_str());
  ssb::SsbParams p = params_for(a, src.metadata());
  src.set_disk(p.disk_center, p.disk_radius);
  const detector::DiskFit disk = src.disk();  // the given centre / radius, the fit's for the rest
  const Shape4D& s = src.shape();
  const double cr = disk.center_row, cc = disk.center_col;
  const double radius = optics::nominal_disk_radius(p.semiangle_mrad, p.detector_mrad_per_pixel).value_or(disk.radius);
  const std::size_t align = std::lcm(std::max<std::size_t>(a.preview, 1), a.fit_trials > 0 ? a.bin : 1);
  const Region box = workflow::bf_disk_box(disk, radius, s.det_rows, s.det_cols, align);
  const Dataset crop = src.detector_crop(box);
  p.disk_center = std::pair<double, double>{cr - double(box.row0), cc - double(box.col0)};
  if (!(p.detector_mrad_per_pixel > 0) && !p.disk_radius) p.disk_radius = disk.radius;
  if (!(disk.center_given && disk.radius_given)) report_bf_disk(detector::fit_json(disk));  // the crop sees given values
  fit_and_reconstruct(crop, p, a, dir);
}

void run(const SsbArgs& a) {
  const std::filesystem::path dir = check(a);
  const io::LoadOptions lo = load_options(a.backend, a.dataset, a.load);
  if (mpi::launched_with_ranks())
    return mpi::run_split(a.file, lo, [&](workflow::ScanProducts& src) { gathered_ssb(src, a, dir); });
  const Dataset ds = io::load(a.file, lo);
  fit_and_reconstruct(ds, params_for(a, ds.metadata()), a, dir);
}

}  // namespace

void add_ssb(CLI::App& app) {
  auto* cmd = app.add_subcommand("ssb", "SSB ptychography phase image (PNG + .npy), optional aberration fit");
  auto a = std::make_shared<SsbArgs>();
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("-o,--out", a->out, "output folder (created if missing)");
  add_input_flags(cmd, a->file, a->backend, a->dataset, a->load);
  a->optics.add_to(cmd, "sets the sampling");
  cmd->add_option("--rotation", a->rotation,
                  "scan-detector rotation, degrees: the angle qgpu image reports in rotation.json (positive turns "
                  "the detector row axis towards the col axis; docs/conventions.md)")
      ->default_str("file calibration or 0");
  cmd->add_flag("--transpose", a->transpose, "swap the detector row / col axes before the rotation (as rotation.json)");
  cmd->add_option("--defocus,--c1", a->defocus,
                  "C1 in angstrom, Krivanek sign: positive = overfocus; C1 = -defocus of py4DSTEM/abTEM/Kirkland "
                  "(docs/conventions.md)")
      ->default_str("file calibration or 0");
  cmd->add_option("--weighting", a->weighting,
                  "double-overlap weighting: auto (by counts per frame: wiener below 3e5, else amplitude) | "
                  "amplitude (least squares, quantitative) | phase (py4DSTEM Gamma/|Gamma|) | wiener (noise from "
                  "the counts)");
  cmd->add_option("--preview", a->preview, "fast preview with this detector binning (0: full reconstruction)");
  cmd->add_option("--fit", a->fit_trials, "fit the defocus first with this many trials (TPE + Nelder-Mead; with --fit-astigmatism a C1 grid, an A1 grid of angles, Nelder-Mead from the 3 best; 0: no fit)");
  cmd->add_option("--fit-range", a->c1_range, "C1 search range MIN MAX, angstrom (Krivanek sign)")->expected(2);
  cmd->add_flag("--fit-astigmatism", a->astig, "also fit 2-fold astigmatism");
  cmd->add_option("--fit-bin", a->bin, "detector binning used while fitting");
  add_png_flags(cmd, a->png);
  cmd->callback([a] { run_command([&] { writing_all_or_none(a->out, [&] { run(*a); }); }); });
}

}  // namespace qgpu::cli
