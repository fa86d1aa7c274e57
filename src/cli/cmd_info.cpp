// qgpu info FILE: metadata and readiness without reading frames.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "cache/cache.hpp"
#include "core/checked.hpp"
#include "cli/cache_info.hpp"
#include "cli/checks.hpp"
#include "cli/commands.hpp"
#include "core/number_text.hpp"
#include "device/backend_request.hpp"
#include "device/device.hpp"
#include "cli/load_flags.hpp"
#include "io/hdf5/admission.hpp"
#include "io/hdf5/file_info.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/load_timing.hpp"

namespace qgpu::cli {

namespace {

// Loads the file once and prints where the time went (the provenance's stage timings).
template <class Args> void print_timing(const Args& a, const io::FileInfo& fi) {
  const io::LoadOptions o = load_options(a.backend, a.dataset, a.load, "");
  const double t0 = io::now_s();
  const Dataset ds = io::load(a.file, o);
  const double wall = io::now_s() - t0;
  const nlohmann::json& p = ds.provenance().parameters;
  const double gb = double(ds.nbytes()) / 1e9;
  std::printf("loaded      %s, %s decoder: %.1f ms wall (inspect included), %.3f GB decoded, %.1f GB/s\n",
              backend_name(ds.backend()).c_str(), p.value("decoder", std::string("?")).c_str(), wall * 1e3, gb,
              gb / wall);
  if (!p.contains("timing")) {
    std::printf("stages      not timed by the %s decoder\n", p.value("decoder", std::string("?")).c_str());
    return;
  }
  const nlohmann::json& t = p.at("timing");
  const double parse_s = t.value("index_parse_s", 0.0), locate_s = t.value("index_locate_s", 0.0);
  char split[96] = "";
  if (parse_s + locate_s > 0)
    std::snprintf(split, sizeof split, " = parse %.1f ms (inspect) + locate %.1f ms", parse_s * 1e3, locate_s * 1e3);
  std::printf("index       %.1f ms%s (%s; %zu parts)\n", t.value("index_s", 0.0) * 1e3, split,
              p.value("chunk_index", std::string("")).c_str(), fi.parts.size());
  std::printf("setup       %.1f ms allocating the output and read buffers\n", t.value("setup_s", 0.0) * 1e3);
  std::printf("read        %.1f ms, %.3f GB in %d batches, %d threads%s\n", t.value("read_s", 0.0) * 1e3,
              t.value("bytes_read", 0.0) / 1e9, t.value("batches", 0), t.value("read_threads", 0),
              t.value("direct_io", false) ? ", O_DIRECT" : "");
  if (ds.backend() == Backend::cuda) std::printf("copy        %.1f ms (GPU)\n", t.value("copy_s", 0.0) * 1e3);
  std::printf("decode      %.1f ms%s\n", t.value("decode_s", 0.0) * 1e3, ds.backend() == Backend::cuda ? " (GPU)" : "");
  if (ds.backend() == Backend::vulkan)
    std::printf("upload      %.1f ms into Vulkan device memory (%s)\n", t.value("upload_s", 0.0) * 1e3,
                p.value("vulkan_device", std::string("?")).c_str());
  if (ds.backend() == Backend::cuda) std::printf("wait        %.1f ms for the GPU after the last batch\n", t.value("wait_s", 0.0) * 1e3);
  std::printf("total       %.1f ms in the loader\n", t.value("total_s", 0.0) * 1e3);
}

// What a load with these flags would choose here (on --backend / QGPU_BACKEND; auto: the GPU when there is one, else
// host memory), or why it cannot load: the admission decision as JSON, {"error": ...} when refused.
nlohmann::json would_load(const std::string& file, const std::string& backend, const std::string& dataset,
                          const LoadFlags& flags) {
  try {
    io::LoadOptions lo;
    lo.dataset_path = dataset;
    flags.apply_to(lo);
    const io::LoadPlan plan = io::plan_load(file, lo);
    const std::string asked = requested_backend(backend);  // --backend, or QGPU_BACKEND for auto
    const Backend b = asked == "cpu" || (asked == "auto" && !detect().cuda_available) ? Backend::cpu
                      : asked == "vulkan"                                              ? Backend::vulkan
                                                                                       : Backend::cuda;
    const std::string rep = plan.info.transposed.present ? "dense" : flags.representation;  // Fortran order: dense
    const io::Admission a = io::admit(plan, b, rep, lo.admission_fraction, 0, io::free_memory_bytes(b),
                                      io::source_file_bytes(plan));
    nlohmann::json j = a.to_json();
    j["backend"] = backend_name(b);
    if (plan.pixel_mask == "given")
      j["pixel_mask"] = {{"source", plan.pixel_mask_source}, {"bad_pixels", plan.bad_pixels.size()}};
    return j;
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

// Bytes of the files holding the frames (every part's file once).
std::uint64_t files_bytes(const io::FileInfo& fi) {
  std::set<std::string> seen;
  std::uint64_t total = 0;
  std::vector<std::string> files = fi.records.files;
  for (const io::SourcePart& p : fi.parts) files.push_back(p.file);
  for (const std::string& f : files) {
    std::error_code ec;
    const std::uintmax_t n = std::filesystem::file_size(f, ec);
    if (!ec && seen.insert(f).second) total += n;
  }
  return total;
}

// A size in the unit that suits `scale` (line_scale: one unit for every size of a line).
std::string size_text(double b, double scale = -1) {
  if (scale < 0) scale = b;
  char t[32];
  if (scale >= 1e9) std::snprintf(t, sizeof t, "%.2f GB", b / 1e9);
  else if (scale >= 1e6) std::snprintf(t, sizeof t, "%.2f MB", b / 1e6);
  else std::snprintf(t, sizeof t, "%.1f kB", b / 1e3);
  return t;
}

// The scale that gives every size of one line the same unit: its smallest nonzero size, so that small sizes do not
// round to 0.00 (131.1 kB from 28.5 kB), but at least a thousandth of the largest, so that no size needs more than
// about six digits (dense 1.18 MB ...; limit 19737.48 MB).
double line_scale(std::initializer_list<double> sizes) {
  double smallest = 0, largest = 0;
  for (double v : sizes) {
    if (v > 0 && (smallest == 0 || v < smallest)) smallest = v;
    largest = std::max(largest, v);
  }
  return std::max({smallest, largest / 1000, 1.0});
}

// Everything known before anything loads: format, shape, dtype, decoded size against the bytes on disk, storage,
// readiness (a damaged index is not an unfinished file), calibration with sources, and what a load would take.
void print_summary(const io::FileInfo& fi, const nlohmann::json& adm, std::uint64_t decoded, std::uint64_t on_disk) {
  const Shape4D& s = fi.shape;
  std::printf("file        %s\n", fi.path.c_str());
  const bool events = fi.sparse.present() && fi.sparse.kind != "frame_positions";
  std::printf("format      %s (%s), frames stored %s\n", fi.reader.c_str(), fi.source_kind.c_str(),
              events ? ("as electron events (" + fi.sparse.kind + "), loaded dense").c_str() : fi.codec.name().c_str());
  if (fi.sparse.kind == "frame_positions")
    std::printf("positions   %zu frames placed at the listed scan positions (loaded dense)\n", fi.sparse.positions.size());
  if (!fi.dataset_path.empty()) std::printf("dataset     %s\n", fi.dataset_path.c_str());
  if (fi.scan_shape_known)
    std::printf("shape       scan %zu x %zu, detector %zu x %zu (%s)\n", s.scan_rows, s.scan_cols, s.det_rows,
                s.det_cols, fi.scan_shape_source.c_str());
  else
    std::printf("shape       scan unknown, detector %zu x %zu: %s\n", s.det_rows, s.det_cols,
                fi.scan_shape_needed.c_str());
  if (events)
    std::printf("frames      %llu scan positions (%s)\n", (unsigned long long)fi.frames, fi.source_kind.c_str());
  else if (!fi.records.files.empty())
    std::printf("frames      %llu in %zu file%s\n", (unsigned long long)fi.frames, fi.records.files.size(),
                fi.records.files.size() == 1 ? "" : "s");
  else
    std::printf("frames      %llu in %zu part%s (%s)\n", (unsigned long long)fi.frames, fi.parts.size(),
                fi.parts.size() == 1 ? "" : "s", fi.source_kind.c_str());
  if (fi.parts.size() > 1)
    for (const auto& p : fi.parts)
      std::printf("  part      frames %llu..%llu <- %s %s\n", (unsigned long long)p.first_frame,
                  (unsigned long long)(p.first_frame + p.frames - 1), p.file.c_str(), p.dataset_path.c_str());
  if (fi.ntrigger || fi.nimages) std::printf("metadata    ntrigger %lld, nimages %lld\n", fi.ntrigger, fi.nimages);
  if (fi.has_pixel_mask)
    std::printf("pixel mask  %zu bad pixels\n", fi.bad_pixels.size());
  else
    std::printf("pixel mask  none\n");
  std::string bits;  // only when not every bit of the element is the count
  if (!fi.plain_bits())
    bits = ", precision " + std::to_string(fi.precision) + " bits at offset " + std::to_string(fi.bit_offset);
  std::printf("dtype       %s %s-endian%s%s\n", dtype_name(fi.stored_dtype()).c_str(), fi.byte_order.c_str(), bits.c_str(),
              fi.stored_as ? (" (loads as " + dtype_name(fi.dtype) + ")").c_str() : "");
  if (on_disk > 0)
    std::printf("decoded     %s dense (%llu bytes) from %s on disk: %.1fx\n",
                size_text(double(decoded), line_scale({double(decoded), double(on_disk)})).c_str(),
                (unsigned long long)decoded,
                size_text(double(on_disk), line_scale({double(decoded), double(on_disk)})).c_str(),
                double(decoded) / double(on_disk));
  else
    std::printf("decoded     %s dense (%llu bytes)\n", size_text(double(decoded)).c_str(), (unsigned long long)decoded);
  std::string chunks;
  for (auto c : fi.chunk_dims) chunks += (chunks.empty() ? "" : " x ") + std::to_string(c);
  if (events)
    ;  // no chunks: the events are scattered at load
  else if (fi.records.files.empty() && fi.chunk_dims.empty())
    std::printf("chunks      none (contiguous: frame after frame)\n");
  else if (fi.records.files.empty())
    std::printf("chunks      %s (%s)\n", chunks.c_str(),
                fi.one_frame_per_chunk ? "one frame per chunk" : "not one frame per chunk");
  for (const auto& [k, v] : fi.metadata.items()) std::printf("metadata    %s = %s\n", k.c_str(), v.dump().c_str());
  for (const auto& w : fi.warnings) std::printf("warning     %s\n", w.c_str());
  for (const auto& f : fi.filters) {
    std::string cd;
    for (auto v : f.cd_values) cd += std::to_string(v) + " ";
    std::printf("filter      %d %s [%s]\n", f.id, f.name.c_str(), cd.c_str());
  }
  if (!fi.index_error.empty())
    std::printf("ready       no: the file is damaged, not unfinished: %s\n", fi.index_error.c_str());
  else if (fi.records.files.empty())
    std::printf("ready       %s (%zu of %zu chunks written%s)\n", fi.ready ? "yes" : "no", fi.chunks_written,
                fi.chunks_expected, fi.ready ? "" : ": incomplete or still being written");
  // Every calibration value with its unit and where it came from; values seen but not used, and why.
  if (!fi.sidecar.empty()) std::printf("sidecar     %s (ARINA STEM Metadata)\n", fi.sidecar.c_str());
  for (const auto& [k, v] : fi.calibration_detail.items()) {
    const std::string unit = v.value("unit", std::string());
    std::printf("calibration %s = %s%s <- %s\n", k.c_str(), number_text(v.value("value", 0.0)).c_str(),
                unit.empty() ? "" : (" " + unit).c_str(), v.value("source", std::string()).c_str());
  }
  for (const std::string& w : fi.metadata_warnings) std::printf("warning     %s\n", w.c_str());
  if (!fi.scan_shape_known)
    std::printf("load        needs a scan shape: give --scan-shape ROWS COLS (%llu frames = ROWS x COLS)\n",
                (unsigned long long)fi.frames);
  else if (adm.contains("error"))
    std::printf("load        refused: %s\n", adm["error"].get<std::string>().c_str());
  else if (!adm.is_null()) {
    if (adm.contains("pixel_mask"))
      std::printf("pixel mask  given: %zu bad pixels from %s (replaces the file's)\n",
                  adm["pixel_mask"]["bad_pixels"].get<std::size_t>(),
                  adm["pixel_mask"]["source"].get<std::string>().c_str());
    const double scale = line_scale({adm["dense_bytes"].get<double>(), adm["encoded_estimate_bytes"].get<double>(),
                                     adm["limit_bytes"].get<double>()});
    const auto size = [scale](const nlohmann::json& v) { return size_text(v.get<double>(), scale); };
    std::printf("load        would be %s on %s (dense %s, encoded ~%s estimated; limit %s = %.0f%% of free %s "
                "memory)\n",
                adm["representation"].get<std::string>().c_str(), adm["backend"].get<std::string>().c_str(),
                size(adm["dense_bytes"]).c_str(), size(adm["encoded_estimate_bytes"]).c_str(),
                size(adm["limit_bytes"]).c_str(), adm["fraction"].get<double>() * 100,
                adm["memory"].get<std::string>().c_str());
  }
  const DeviceReport& d = detect();
  std::printf("gpu         %s\n", d.cuda_available ? d.name.c_str() : ("none: " + d.reason).c_str());
  const DeviceReport& v = vulkan_report();  // --backend vulkan: the adapter and driver it would use
  if (v.vulkan_available)
    std::printf("vulkan      %s (%s), driver %s, Vulkan %s\n", v.vulkan_name.c_str(), v.vulkan_type.c_str(),
                v.vulkan_driver.c_str(), v.vulkan_api.c_str());
  else
    std::printf("vulkan      none: %s\n", v.vulkan_reason.c_str());
}

}  // namespace

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the 4D-STEM dataset of an HDF5 file (shape, dtype, chunks, filter)");
  struct Args {
    std::string file, dataset;
    bool json = false, timing = false;
    std::string backend = "auto";
    LoadFlags load;
  };
  auto args = std::make_shared<Args>();
  // The load flags: the file's (format, scan shape, dataset) shape what is shown; all of them shape the would-be load
  // and the --timing load.
  add_input_flags(cmd, args->file, args->backend, args->dataset, args->load);
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_flag("--timing", args->timing, "also load the file and print each stage's time (index, read, copy, decode)");
  cmd->callback([args] {
    check_backend_name(args->backend);
    args->load.check();
    if (cache::is_cache_file(args->file)) return print_cache_info(args->file, args->json);
    // info never fails for want of a scan shape: it says what a load would need instead.
    io::SourceOptions so = args->load.source_options(args->dataset);
    so.need = args->timing ? io::ScanShapeNeed::required : io::ScanShapeNeed::optional;
    const io::FileInfo fi = io::inspect(args->file, so);
    // What a load would take, shown before anything loads (also before --timing loads): a small file can decode to
    // far more than it holds (issue 25: 24 GiB from a few MB).
    const nlohmann::json adm =
        fi.ready && fi.scan_shape_known ? would_load(args->file, args->backend, args->dataset, args->load) : nlohmann::json();
    const std::uint64_t decoded = checked_mul(fi.frames, fi.shape.frame_pixels() * dtype_size(fi.dtype),
                                              "decoded size of '" + fi.path + "'");
    const std::uint64_t on_disk = files_bytes(fi);
    if (args->json && !args->timing) {
      nlohmann::json j = fi.to_json();
      j["decoded_bytes"] = decoded;
      j["file_bytes"] = on_disk;
      if (!adm.is_null()) j["would_load"] = adm;
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    print_summary(fi, adm, decoded, on_disk);
    if (args->timing) {
      std::printf("timing      loading it now (%s decoded)\n", size_text(double(decoded)).c_str());
      std::fflush(stdout);
      print_timing(*args, fi);
    }
  });
}

}  // namespace qgpu::cli
