// qgpu movie FILE -o out.mp4|out.gif: a virtual-detector sweep, diffraction frames along a scan path or SSB over
// a defocus range, rendered on the dataset's backend and encoded with the FFmpeg libraries.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/load_flags.hpp"
#include "cli/outputs.hpp"
#include "cli/progress.hpp"
#include "display/defaults.hpp"
#include "io/hdf5/load.hpp"
#include "movie/movie.hpp"

namespace qgpu::cli {

namespace {

struct MovieArgs {
  std::string file, out, backend = "auto", dataset, colormap = display::kImageColormap, scale, resize = "area",
              encoder = "auto";
  std::vector<double> bf_sweep, adf_sweep, ssb_defocus, center, percentiles{0.5, 99.5};
  std::vector<std::size_t> path_line, size;
  std::optional<std::size_t> path_row, frames;
  std::optional<double> adf_width, adf_outer;
  unsigned fps = 10;
  bool label = false;
  LoadFlags load;
};

// Everything the command line says about the movie, checked before the file is read.
movie::MovieSpec spec_of(const MovieArgs& a) {
  const int chosen = !a.bf_sweep.empty() + !a.adf_sweep.empty() + !a.ssb_defocus.empty() + a.path_row.has_value() +
                     !a.path_line.empty();
  if (chosen != 1)
    throw InvalidArgument("qgpu movie needs exactly one sequence: --bf-sweep, --adf-sweep, --path-row, --path-line "
                          "or --ssb-defocus");
  movie::MovieSpec s;
  auto range = [&](movie::Sequence q, const std::vector<double>& v) {
    s.sequence = q;
    s.start = v[0];
    s.stop = v[1];
  };
  if (!a.bf_sweep.empty()) range(movie::Sequence::bf_sweep, a.bf_sweep);
  if (!a.adf_sweep.empty()) range(movie::Sequence::adf_sweep, a.adf_sweep);
  if (!a.ssb_defocus.empty()) range(movie::Sequence::ssb_defocus, a.ssb_defocus);
  if (a.path_row) {
    s.sequence = movie::Sequence::path_row;
    s.row = *a.path_row;
  }
  if (!a.path_line.empty()) {
    s.sequence = movie::Sequence::path_line;
    std::copy_n(a.path_line.begin(), 4, s.line);
  }
  s.frames = a.frames;
  s.adf_width = a.adf_width;
  s.adf_outer = a.adf_outer;
  if (!a.center.empty()) s.center = std::pair{a.center[0], a.center[1]};
  const bool path = s.sequence == movie::Sequence::path_row || s.sequence == movie::Sequence::path_line;
  s.look.colormap = a.colormap;
  s.look.scale = display::scale_from_name(a.scale.empty() ? (path ? "log" : "linear") : a.scale);
  s.look.lower_percentile = a.percentiles[0];
  s.look.upper_percentile = a.percentiles[1];
  if (!a.size.empty()) {
    s.width = a.size[0];
    s.height = a.size[1];
    if (s.width == 0 || s.height == 0) throw InvalidArgument("--size W H needs positive width and height");
  }
  s.resize = movie::resize_from_name(a.resize);
  s.label = a.label;
  s.fps = a.fps;
  s.encoder = a.encoder;
  return s;
}

}  // namespace

void add_movie(CLI::App& app) {
  auto* cmd = app.add_subcommand("movie", "MP4/GIF movie: detector sweep, diffraction along a path, SSB defocus");
  auto a = std::make_shared<MovieArgs>();
  cmd->add_option("-o,--out", a->out, "output movie, .mp4 (H.264) or .gif")->required();
  add_input_flags(cmd, a->file, a->backend, a->dataset, a->load);
  cmd->add_option("--bf-sweep", a->bf_sweep, "BF radius from A to B (detector pixels)")->expected(2);
  cmd->add_option("--adf-sweep", a->adf_sweep, "ADF inner radius from A to B (detector pixels)")->expected(2);
  cmd->add_option("--adf-width", a->adf_width, "adf sweep: outer = inner + WIDTH");
  cmd->add_option("--adf-outer", a->adf_outer, "adf sweep: fixed outer radius (default: the whole detector)");
  cmd->add_option("--path-row", a->path_row, "diffraction frames along scan row R");
  cmd->add_option("--path-line", a->path_line, "diffraction frames on the scan line R0 C0 R1 C1")->expected(4);
  cmd->add_option("--ssb-defocus", a->ssb_defocus, "SSB phase over C1 from A to B (angstrom; Krivanek sign, positive = overfocus, docs/conventions.md)")->expected(2);
  cmd->add_option("--frames", a->frames, "number of frames (sweeps: 30; paths: every position)");
  cmd->add_option("--center", a->center, "detector centre R C (default: fitted BF disk)")->expected(2);
  cmd->add_option("--fps", a->fps, "frames per second (1..60)");
  cmd->add_option("--colormap", a->colormap, "viridis | inferno | magma | plasma | gray");
  cmd->add_option("--scale", a->scale, "linear | log | signed_log (default: log for paths, else linear)");
  cmd->add_option("--percentiles", a->percentiles, "display range LOW HIGH per frame")->expected(2);
  cmd->add_option("--size", a->size, "output size W H (default: the frame's size)")->expected(2);
  cmd->add_option("--resize", a->resize, "nearest | area");
  cmd->add_flag("--label", a->label, "burn the parameter value into each frame");
  cmd->add_option("--encoder", a->encoder, "mp4: auto | libx264 | h264_nvenc; gif: auto | gif");
  cmd->callback([a] {
    const movie::MovieSpec spec = spec_of(*a);
    movie::validate(spec, a->out);  // before any loading
    const io::LoadOptions lo = load_options(a->backend, a->dataset, a->load);
    const Dataset ds = io::load(a->file, lo);
    const movie::MovieResult r = movie::render(ds, a->out, spec, progress_bar("frames "));
    // The provenance beside the movie, as every product's NAME.json (outputs.hpp).
    write_json(a->out + ".json", nlohmann::json{{"result", r.provenance.to_json()}});
    std::printf("movie %s: %zu frames %zux%zu, %s, %s on %s (render %.2f s, encode %.2f s); provenance %s.json\n",
                r.path.c_str(), r.frames, r.width, r.height, r.encoder.c_str(),
                movie::sequence_name(spec.sequence).c_str(), backend_name(ds.backend()).c_str(), r.render_seconds,
                r.encode_seconds, r.path.c_str());
  });
}

}  // namespace qgpu::cli
