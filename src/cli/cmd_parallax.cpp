// qgpu parallax FILE: tilt-corrected bright field (parallax) image and the fit of the BF-pixel image shifts.
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/numbers.hpp"
#include "cli/checks.hpp"
#include "cli/commands.hpp"
#include "cli/load_flags.hpp"
#include "cli/optics_flags.hpp"
#include "cli/outputs.hpp"
#include "cli/progress.hpp"
#include "io/hdf5/load.hpp"
#include "io/npy/npy.hpp"
#include "optics/resolve.hpp"
#include "parallax/parallax.hpp"

namespace qgpu::cli {

namespace {

struct ParallaxArgs {
  std::string file, out = "out", backend = "auto", dataset;
  OpticsFlags optics;
  std::optional<double> defocus_sign;
  std::size_t upsample = 2, bin = 0, iterations = 3, search = 4;
  double edge = 1.0;
  bool measured = false;
  PngFlags png;
  LoadFlags load;
};

// The flag that sets each parallax parameter (errors name what the user typed).
std::string flag_of(const std::string& key) {
  if (auto f = OpticsFlags::flag_of(key)) return *f;
  static const std::map<std::string, std::string> flags = {
      {"edge_px", "--edge"}, {"detector_bin", "--bin"}, {"upsample", "--upsample"}, {"iterations", "--iterations"},
      {"search_px", "--search"}, {"c1_sign_hint", "--defocus-sign"}};
  const auto it = flags.find(key);
  return it == flags.end() ? key : it->second;
}

optics::Overrides overrides_of(const ParallaxArgs& a) {
  optics::Overrides o;
  a.optics.apply_to(o);
  return o;
}

// The settings a user typed on top of the optics (checked by parallax::check_settings).
void apply_settings(const ParallaxArgs& a, parallax::ParallaxParams& p) {
  if (a.defocus_sign) p.c1_sign_hint = *a.defocus_sign;
  p.upsample = a.upsample;
  p.detector_bin = a.bin;
  p.iterations = a.iterations;
  p.search_px = a.search;
  p.edge_px = a.edge;
  p.use_fitted_shifts = !a.measured;
}

// Every value a user typed, checked before the file is opened.
std::filesystem::path check(const ParallaxArgs& a) {
  check_backend_name(a.backend);
  a.load.check();
  optics::check_overrides(overrides_of(a), "parallax", flag_of);
  parallax::ParallaxParams settings;
  apply_settings(a, settings);
  parallax::check_settings(settings, flag_of);
  return output_folder(a.out);
}

void run(const ParallaxArgs& a) {
  const std::filesystem::path dir = check(a);
  const Dataset ds = io::load(a.file, load_options(a.backend, a.dataset, a.load));
  // The file's calibration (our own, or a DECTRIS master's instrument metadata), each given value replacing it.
  parallax::ParallaxParams p = parallax::resolve_params(ds.metadata(), overrides_of(a), flag_of);
  apply_settings(a, p);
  const parallax::ParallaxResult r = parallax::run(ds, p);
  const parallax::ParallaxFit& f = r.fit;
  write_json(dir / "parallax_fit.json", nlohmann::json{{"fit", parallax::fit_json(f)},
                                                       {"det_row", r.det_row},
                                                       {"det_col", r.det_col},
                                                       {"shift_row_px", r.shift_row},
                                                       {"shift_col_px", r.shift_col},
                                                       {"provenance", r.provenance.to_json()}});
  std::printf("  fit            C1 = %.2f A, A1 = %.2f A at %.1f deg, rotation %.2f deg, transpose %s\n", f.C1, f.A1,
              f.A1_angle * 180.0 / kPi, printed_angle(f.rotation_deg), f.transpose ? "yes" : "no");
  std::printf("                 residual %.3f px of %.3f px (confidence %.3f), C1 sign by %s\n", f.residual_rms_px,
              f.model_rms_px, f.confidence, f.sign_method.c_str());
  if (!f.determined()) std::fprintf(stderr, "qgpu: warning: %s\n", f.warning().c_str());
  if (r.provenance.parameters.contains("bf_disk_fit")) report_bf_disk(r.provenance.parameters.at("bf_disk_fit"));
  display::DisplayOptions look;
  look.colormap = "gray";
  look.lower_percentile = 0.5;
  look.upper_percentile = 99.5;
  const nlohmann::json cal = {{"scan_step_angstrom", p.scan_step_angstrom},
                               {"detector_mrad_per_pixel", p.detector_mrad_per_pixel}};
  write_outputs(dir, "parallax", r.image,
                product_look(look, a.png, product_calibration(cal, "scan", 1.0 / double(a.upsample),
                                                              "/ " + std::to_string(a.upsample) + " (--upsample)")));
  write_outputs(dir, "parallax_bf", r.bf, product_look(look, a.png, product_calibration(cal, "scan")));
}

}  // namespace

void add_parallax(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "parallax", "tilt-corrected bright field (PNG + .npy) and the shift fit: defocus, astigmatism, rotation, transpose");
  auto a = std::make_shared<ParallaxArgs>();
  cmd->option_defaults()->always_capture_default();  // --help shows every default
  cmd->add_option("-o,--out", a->out, "output folder (created if missing)");
  add_input_flags(cmd, a->file, a->backend, a->dataset, a->load);
  a->optics.add_to(cmd, "the BF pixels used, and the sampling");
  cmd->add_option("--defocus-sign", a->defocus_sign,
                  "known sign of C1 (chi = +pi lambda C1 k^2): > 0 or < 0; 0 = from the image (atoms positive)")
      ->default_str("sign of the file's defocus_angstrom, else 0");
  cmd->add_option("--upsample", a->upsample, "tilt-corrected image sampling: scan step / UPSAMPLE (1..8)");
  cmd->add_option("--bin", a->bin, "sum BF-disk pixels in BIN x BIN groups (0: auto: >= 10 counts per group and frame, <= 1024 groups)");
  cmd->add_option("--iterations", a->iterations, "align / re-sum passes over the whole disc after the staged ones");
  cmd->add_option("--search", a->search, "correlation peak search half-width around the predicted shift, scan px");
  cmd->add_option("--edge", a->edge, "leave out pixels closer than this to the BF disk edge, detector px");
  cmd->add_flag("--measured-shifts", a->measured, "shift-and-sum with the measured shifts instead of the linear fit");
  add_png_flags(cmd, a->png);
  cmd->callback([a] { run_command([&] { writing_all_or_none(a->out, [&] { run(*a); }); }); });
}

}  // namespace qgpu::cli
