#include "io/hdf5/load.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/sparse/load_sparse.hpp"

#include "io/hdf5/admission.hpp"
#include "io/hdf5/binning.hpp"

#include <chrono>

#include "core/error.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/scan_bin.hpp"
#include "device/vulkan/vk_resident.hpp"
#include "io/hdf5/vulkan/load_vulkan.hpp"
#include "device/device.hpp"
#include "io/hdf5/cpu/load_cpu.hpp"
#include "io/hdf5/cpu/load_cpu_decoded.hpp"
#include "io/hdf5/cuda/load_cuda.hpp"
#include "io/hdf5/pixel_mask.hpp"
#include "io/hdf5/h5_handle.hpp"
#include "io/source/load_transposed.hpp"

namespace qgpu::io {

namespace {

// FormatError naming each filter of the dataset's pipeline that this HDF5 installation cannot run.
// The file may have been inspected in the isolation child (or answered from the inspect cache): this process has
// then not registered the bitshuffle plugin yet (QGPU_BSHUF_PLUGIN, a folder not on HDF5's own plugin path).
void require_filters(const FileInfo& fi) {
  for (const FilterInfo& f : fi.filters)
    if (f.id == h5::kBitshuffleFilter) h5::ensure_bitshuffle_filter();
  std::string missing;
  h5::QuietErrors quiet;
  for (const FilterInfo& f : fi.filters)
    if (H5Zfilter_avail(H5Z_filter_t(f.id)) <= 0)
      missing += (missing.empty() ? "" : ", ") + f.name + " (id " + std::to_string(f.id) + ")";
  if (!missing.empty())
    throw FormatError("'" + fi.dataset_path + "' in '" + fi.path + "' is compressed with HDF5 filter " + missing +
                      ", which is not available here: install its plugin (HDF5_PLUGIN_PATH) or convert the file");
}

}  // namespace

LoadPlan plan_load(const std::string& path, const LoadOptions& o) {
  LoadPlan p;
  SourceOptions so;
  so.format = o.format;
  so.dataset_path = o.dataset_path;
  so.scan_rows = o.scan_rows;
  so.scan_cols = o.scan_cols;
  so.raw = o.raw;
  so.flip_rows = o.flip_rows;
  so.single_file = o.single_file;
  p.info = inspect(path, so);
  require_filters(p.info);
  if (!p.info.index_error.empty())
    throw FormatError(p.info.index_error + "; the file is damaged, not unfinished");
  if (!p.info.ready)
    throw FormatError("'" + p.info.dataset_path + "' in '" + path + "' is not ready: " +
                      std::to_string(p.info.chunks_written) + " of " + std::to_string(p.info.chunks_expected) +
                      " chunks written (file incomplete or still being written)");
  if (o.pixel_mask != "keep" && o.pixel_mask != "zero")
    throw InvalidArgument("pixel_mask is \"keep\" or \"zero\", not \"" + o.pixel_mask + "\"");
  GivenPixelMask given = o.pixel_mask_given;
  if (!o.pixel_mask_file.empty()) {
    if (given.present())
      throw InvalidArgument("two pixel masks given: the file '" + o.pixel_mask_file + "' and " + given.source);
    given = read_pixel_mask_file(o.pixel_mask_file);
  }
  if (given.present()) {  // the user's mask replaces the file's
    p.bad_pixels = given.bad_pixels(p.info.shape.det_rows, p.info.shape.det_cols, "'" + path + "'");
    p.pixel_mask = "given";
    p.pixel_mask_source = given.source;
  } else {
    if (o.pixel_mask == "zero" && !p.info.has_pixel_mask)
      throw IoError("pixel_mask \"zero\" asked but '" + path + "' has no pixel mask" +
                    (p.info.reader == "hdf5" ? " (" + std::string(kPixelMaskPath) + ")"
                                             : " (" + p.info.reader + " file; give a mask: --pixel-mask-file PATH, "
                                                                      "Python pixel_mask=<array or path>)"));
    p.pixel_mask = o.pixel_mask;
    if (o.pixel_mask == "zero") {
      p.bad_pixels = p.info.bad_pixels;
      p.pixel_mask_source = std::string(kPixelMaskPath) + " in '" + path + "'";
    }
  }
  p.zero_bad_pixels = !p.bad_pixels.empty();
  const Shape4D& s = p.info.shape;
  p.scan = resolve_region(o.scan_region, s.scan_rows, s.scan_cols, "scan");
  p.detector = resolve_region(o.detector_region, s.det_rows, s.det_cols, "detector");
  if (o.bin_scan == 0 || o.bin_detector == 0) throw RegionError("bin factors must be at least 1");
  p.bin_scan = o.bin_scan;
  p.bin_detector = o.bin_detector;
  auto check = [](std::size_t n, std::size_t b, const std::string& what) {
    if (n % b)
      throw RegionError(what + " extent " + std::to_string(n) + " is not divisible by bin " + std::to_string(b) +
                        " (exact binning drops no pixels: choose a region that is)");
  };
  check(p.scan.rows, p.bin_scan, "scan rows");
  check(p.scan.cols, p.bin_scan, "scan cols");
  check(p.detector.rows, p.bin_detector, "detector rows");
  check(p.detector.cols, p.bin_detector, "detector cols");
  p.out_shape = {p.scan.rows / p.bin_scan, p.scan.cols / p.bin_scan, p.detector.rows / p.bin_detector,
                 p.detector.cols / p.bin_detector};
  // Records that need no decompression (plain, Merlin) are read in larger batches: with 64 MiB each of 16 read
  // threads got one small piece per batch and a large .npy load stayed well above the pread floor
  // (docs/history/benchmarks-2026-12.md, formats).
  if (p.info.codec.kind != FrameCodecKind::bitshuffle) p.batch_bytes = std::size_t(256) << 20;
  if (o.batch_bytes) p.batch_bytes = o.batch_bytes;
  p.staging_bytes = o.staging_bytes;
  p.read_threads = o.read_threads;
  p.direct_io = o.direct_io;
  p.out_dtype = p.binned() ? binned_dtype(p.info.dtype) : p.info.dtype;
  return p;
}

std::size_t staging_frames(const LoadPlan& p, bool cuda) {
  const std::size_t budget = p.staging_bytes ? p.staging_bytes : cuda ? std::size_t(2) << 30 : std::size_t(512) << 20;
  return std::max<std::size_t>(budget / std::max<std::size_t>(p.info.frame_bytes(), 1), p.bin_scan * p.scan.cols);
}

namespace {

// Chunks our decoders read directly: bitshuffle (filter 32008) stored one frame per chunk, and every record of a
// format without a chunk index; every bit a count.
bool our_decoder_applies(const FileInfo& fi) {
  return fi.plain_bits() &&
         (!fi.records.empty() ||
          (!fi.stored_as && fi.one_frame_per_chunk && fi.filters.size() == 1 &&
           fi.filters[0].id == h5::kBitshuffleFilter));
}

}  // namespace

namespace {

// A Fortran-order .npy (FileInfo::transposed): read in slabs and scattered (io/source/load_transposed.hpp); encoded
// from the dense result when asked.
Dataset load_transposed(const LoadPlan& plan, Backend backend, const LoadOptions& o) {
  if (o.direct_io)
    throw InvalidArgument("direct_io is not used for '" + plan.info.path + "' (Fortran order: read in slabs through "
                          "the page cache)");
  Dataset d = backend == Backend::cuda ? load_transposed_cuda(plan, o.progress) : load_transposed_cpu(plan, o.progress);
  return o.representation == "encoded" ? encode_with_radial_basis(d, plan.radial_basis, 512, plan.scan_binned) : d;
}

}  // namespace

namespace {

// LoadOptions::radial_basis resolved after the admission; the decision goes into plan.admission["radial_basis"].
RadialBasisRequest resolve_radial_basis(LoadPlan& plan, const Admission& adm, const LoadOptions& o) {
  const std::string& want = o.radial_basis;
  if (want != "auto" && want != "on" && want != "off")
    throw InvalidArgument("radial_basis is \"auto\", \"on\" or \"off\", not \"" + want + "\"");
  RadialBasisRequest r;
  r.center = o.radial_basis_center;
  nlohmann::json& j = plan.admission["radial_basis"];
  j = {{"asked", want}};
  if (want == "off") {
    j["decision"] = "off";
    return r;
  }
  if (plan.representation != "encoded") {
    if (want == "on")
      throw InvalidArgument("radial_basis \"on\" needs an encoded load (representation \"encoded\"); this one "
                            "loads dense");
    j["decision"] = "off: dense load";
    return r;
  }
  if (plan.info.sparse.present()) {
    if (want == "on")
      throw InvalidArgument("radial_basis \"on\": not built for electron-event files yet (they are encoded from "
                            "the dense result)");
    j["decision"] = "off: electron events";
    return r;
  }
  const Shape4D& s = plan.out_shape;
  // Worst case for the memory: the centre in a detector corner (the most shells).
  const std::size_t worst = RadialBasis::bytes_for(s, 0, 0);
  j["estimate_bytes"] = worst;
  if (want == "auto") {
    if (s.frames() < kAutoRadialBasisFrames) {
      j["decision"] = "off: fewer than " + std::to_string(kAutoRadialBasisFrames) + " scan positions";
      return r;
    }
    if (adm.encoded_estimate + adm.encoded_scratch + worst > adm.limit_bytes) {
      j["decision"] = "off: the basis does not fit under the admission limit beside the encoded estimate";
      return r;
    }
  }
  r.enabled = true;
  r.required = want == "on";
  j["decision"] = "on";
  return r;
}

// LoadOptions::scan_binned resolved after the admission; the decision goes into plan.admission["scan_binned"].
ScanBinnedRequest resolve_scan_binned(LoadPlan& plan, const Admission& adm, const LoadOptions& o) {
  const std::string& want = o.scan_binned;
  ScanBinnedRequest r;
  nlohmann::json& j = plan.admission["scan_binned"];
  j = {{"asked", want}};
  std::size_t b = 0;
  if (want != "auto" && want != "off") {
    if (want.empty() || want.size() > 6 || want.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(want) < 2)
      throw InvalidArgument("scan_binned is \"auto\", \"off\" or a scan bin of 2 or more, not \"" + want + "\"");
    b = std::stoul(want);
  }
  if (want == "off") {
    j["decision"] = "off";
    return r;
  }
  const bool asked = b > 0;
  if (plan.representation != "encoded" || plan.info.sparse.present()) {
    if (asked)
      throw InvalidArgument("scan_binned " + want + " needs an encoded load of counts (representation \"encoded\"); "
                            "this one loads " + (plan.info.sparse.present() ? "electron events" : "dense"));
    j["decision"] = plan.info.sparse.present() ? "off: electron events" : "off: dense load";
    return r;
  }
  const Shape4D& s = plan.out_shape;
  if (!is_count_dtype(plan.out_dtype)) {
    if (asked) throw InvalidArgument("scan_binned: counts of " + dtype_name(plan.out_dtype) + " (uint8/16/32 only)");
    j["decision"] = "off: not uint8/16/32 counts";
    return r;
  }
  if (asked) {
    check_scan_bin(s, b);
  } else {
    b = display_scan_bin(s.scan_rows, s.scan_cols);
    if (b < 2) {
      j["decision"] = "off: the scan is displayed unbinned (no side above 1024 positions, or no common divisor)";
      return r;
    }
  }
  const std::size_t estimate = scan_binned_estimate(adm.encoded_estimate, b);
  j["bin"] = b;
  j["estimate_bytes"] = estimate;
  if (!asked && adm.encoded_estimate + adm.encoded_scratch + estimate > adm.limit_bytes) {
    j["decision"] = "off: the copy does not fit under the admission limit beside the encoded estimate";
    return r;
  }
  r.bin = b;
  r.required = asked;
  j["decision"] = "on";
  return r;
}

}  // namespace

void require_plain_bits(const FileInfo& fi, const std::string& decoder) {
  if (fi.plain_bits()) return;
  throw FormatError("'" + fi.dataset_path + "' in '" + fi.path + "' stores " + dtype_name(fi.dtype) +
                    " elements whose count is " + std::to_string(fi.precision) + " bits (precision) at bit offset " +
                    std::to_string(fi.bit_offset) + ", not all " + std::to_string(8 * dtype_size(fi.dtype)) +
                    " bits: " + decoder + " reads plain counts only; load it with backend='cpu', decoder='hdf5' "
                    "(HDF5 converts such a datatype)");
}

namespace {

// The vulkan load: bitshuffle+LZ4 chunks decoded by a compute shader straight into Vulkan device memory
// (io/hdf5/vulkan/load_vulkan.hpp); where the shader path cannot serve (other codecs, crop/binning, ...: the reason
// goes into the provenance), the host pipeline (the cpu backend's readers and decoders on every core), then the
// dense frames uploaded.
Dataset load_vulkan(const std::string& path, const LoadOptions& options) {
  if (options.representation == "encoded")
    not_implemented_on(Backend::vulkan, "the encoded representation (representation 'encoded')");
  const std::string& dec = options.decoder;
  if (dec != "auto" && dec != "quantem" && dec != "hdf5")
    throw InvalidArgument("decoder '" + dec + "' is not one of auto, quantem, hdf5");
  std::string why_host = "decoder 'hdf5' asked";
  if (dec != "hdf5") {
    const LoadPlan plan = plan_load(path, options);
    why_host = vulkan_shader_decode_unsupported(plan);
    if (why_host.empty()) return load_vulkan_shaders(plan, options.progress);
  }
  LoadOptions host = options;
  host.backend = "cpu";
  if (host.representation == "auto") host.representation = "dense";
  const Dataset d = load(path, host);
  if (is_float_dtype(d.dtype()))
    throw DTypeError("'" + path + "' holds " + dtype_name(d.dtype()) + " values: the vulkan backend holds integer "
                     "data so far (uint8/16/32, int8/16/32); load float data with backend 'cuda' or 'cpu'");
  const auto t0 = std::chrono::steady_clock::now();
  auto resident = std::make_shared<vulkan::Resident>(d.host_bytes().data(), d.shape(), d.dtype());
  const double upload_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Provenance p = d.provenance();
  p.backend = "vulkan";
  p.parameters["decode"] = "host (the cpu backend's decoders on every core), then uploaded to Vulkan device memory; "
                           "the compute-shader decoder does not serve " + why_host;
  p.parameters["vulkan_device"] = vulkan_report().vulkan_name;
  if (p.parameters.contains("timing") && p.parameters["timing"].is_object()) {
    p.parameters["timing"]["upload_s"] = upload_s;
    if (p.parameters["timing"].contains("total_s"))
      p.parameters["timing"]["total_s"] = p.parameters["timing"]["total_s"].get<double>() + upload_s;
  }
  return Dataset::from_vulkan(std::move(resident), d.metadata(), std::move(p));
}

}  // namespace

Dataset load(const std::string& path, const LoadOptions& options) {
  const Backend backend = resolve(options.backend);  // fails before touching the file for an unusable backend
  if (backend == Backend::vulkan) return load_vulkan(path, options);
  const std::string& d = options.decoder;
  if (d != "auto" && d != "quantem" && d != "hdf5")
    throw InvalidArgument("decoder '" + d + "' is not one of auto, quantem, hdf5");
  if (backend == Backend::cuda && d == "hdf5")
    throw InvalidArgument("decoder 'hdf5' (the HDF5 filter pipeline) runs on the cpu backend; the cuda backend "
                          "decodes with our GPU decoder");
  LoadPlan plan = plan_load(path, options);
  if (d == "hdf5" && plan.info.reader != "hdf5")
    throw InvalidArgument("decoder 'hdf5' reads HDF5 files; '" + path + "' is read by the " + plan.info.reader +
                          " reader (decoder 'auto' or 'quantem')");
  // Dense or encoded, decided (or refused) before anything is read or allocated. A transposed file loads dense
  // (encoded: made from the dense result), so the dense result must fit.
  const bool transposed = plan.info.transposed.present || plan.info.sparse.present();
  const std::string& rep = options.representation;
  if (transposed && rep != "auto" && rep != "dense" && rep != "encoded")
    throw InvalidArgument("representation is \"auto\", \"dense\" or \"encoded\", not \"" + rep + "\"");
  Admission adm;
  try {
    adm = admit(plan, backend, transposed ? "dense" : rep, options.admission_fraction, options.admission_limit_bytes,
                options.admission_limit_bytes ? 0 : free_memory_bytes(backend), source_file_bytes(plan));
  } catch (const InvalidArgument& e) {
    if (!transposed) throw;
    throw InvalidArgument(std::string(e.what()) + " (" +
                          (plan.info.sparse.present() ? "electron events" : plan.info.reader == "dm"
                                                                                   ? "an old-layout DM image"
                                                                                   : "a Fortran-order .npy") +
                          " loads dense, encoded only from the dense result: crop/bin it, or write it in C order)");
  }
  plan.representation = adm.representation;
  plan.admission = adm.to_json();
  plan.radial_basis = resolve_radial_basis(plan, adm, options);
  plan.scan_binned = resolve_scan_binned(plan, adm, options);
  if (plan.info.sparse.present()) {
    if (options.direct_io) throw InvalidArgument("direct_io is not used for electron events ('" + path + "')");
    return load_sparse(plan, backend, rep == "encoded" ? "encoded" : "dense", options.progress);
  }
  if (plan.info.transposed.present) return load_transposed(plan, backend, options);
  if (backend == Backend::cuda) return load_cuda(plan, options.progress);
  plan.decoder = d == "auto" ? (our_decoder_applies(plan.info) ? "quantem" : "hdf5") : d;
  return plan.decoder == "quantem" ? load_cpu_decoded(plan, options.progress) : load_cpu(plan, options.progress);
}

}  // namespace qgpu::io
