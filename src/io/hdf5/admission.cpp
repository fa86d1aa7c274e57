#include "io/hdf5/admission.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "io/hdf5/cuda/kept_batch_buffers.hpp"
#include "resident/encoded/cuda/encode_kernels.hpp"
#include "resident/encoded/format.hpp"

namespace qgpu::io {

namespace {

// The CUDA encoder's per-group scratch budget (encoded_cuda.cu).
constexpr std::size_t kEncoderScratch = std::size_t(256) << 20;
constexpr int kReadSlots = 3;

std::string gib(std::size_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(std::size_t(1) << 30));
  return s;
}

}  // namespace

nlohmann::json Admission::to_json() const {
  return {{"representation", representation}, {"dense_bytes", dense_bytes},
          {"dense_scratch_bytes", dense_scratch}, {"encoded_estimate_bytes", encoded_estimate},
          {"encoded_scratch_bytes", encoded_scratch}, {"free_bytes", free_bytes},
          {"limit_bytes", limit_bytes}, {"fraction", fraction}, {"memory", memory}};
}

std::size_t source_file_bytes(const LoadPlan& plan) {
  std::set<std::string> files;
  for (const SourcePart& p : plan.info.parts) files.insert(p.file);
  for (const std::string& f : plan.info.records.files) files.insert(f);
  if (files.empty()) files.insert(plan.info.path);
  std::size_t total = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(f, ec);
    if (!ec) total = checked_add(total, std::size_t(n), "file bytes");
  }
  return total;
}

std::size_t estimate_encoded_bytes(const LoadPlan& plan, std::size_t file_bytes) {
  const Shape4D& out = plan.out_shape;
  const std::size_t frames = out.frames(), P = out.frame_pixels();
  const std::size_t in_frames = std::max<std::size_t>(plan.info.shape.frames(), 1);
  const std::size_t selected = checked_mul(plan.scan.rows, plan.scan.cols, "selected frames");
  // 1.5 x the compressed bytes of the selected frames (the file share; headers count too: conservative).
  const double from_file = 1.5 * double(file_bytes) * double(selected) / double(in_frames);
  // Worst case: every stream raw (at most the dense bits) + model, base and width bytes + its directory entry.
  const std::size_t tiles = (frames + encoded::kDefaultTile - 1) / encoded::kDefaultTile;
  const std::size_t worst = checked_add(out.nbytes(dtype_size(plan.out_dtype)),
                                        checked_mul(checked_mul(tiles, P + 1, "encoded streams"), 12, "encoded"),
                                        "encoded worst case");
  const std::size_t streams = from_file >= double(worst) ? worst : static_cast<std::size_t>(from_file) + 1;
  return checked_add(streams, checked_mul(frames + P, 8, "encoded totals"), "encoded estimate");
}

std::size_t free_memory_bytes(Backend backend) {
  if (backend == Backend::cuda) {
    std::size_t free = 0, total = 0;
    QGPU_CUDA(cudaMemGetInfo(&free, &total));
    // the kept batch buffers, the pool's idle buffers and a released resident kept for reuse are freed for any allocation that needs their room
    return free + cuda::kept_batch_bytes() + pooled_idle_bytes() + kept_resident_bytes();
  }
  // MemAvailable (free plus reclaimable), but never below MemFree or the free pages sysconf reports: some sandboxes
  // report a MemAvailable near 0 on a machine with most of its memory free, which refused every load.
  std::size_t available = 0, free_kib = 0;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::size_t kib = 0;
    if (line.rfind("MemAvailable:", 0) == 0 && (std::istringstream(line.substr(13)) >> kib)) available = kib * 1024;
    if (line.rfind("MemFree:", 0) == 0 && (std::istringstream(line.substr(8)) >> kib)) free_kib = kib;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const std::size_t avphys = pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : 0;
  return std::max({available, free_kib * 1024, avphys});
}

Admission admit(const LoadPlan& plan, Backend backend, const std::string& requested, double fraction,
                std::size_t limit_bytes, std::size_t free_bytes, std::size_t file_bytes) {
  if (requested != "auto" && requested != "dense" && requested != "encoded")
    throw InvalidArgument("representation is \"auto\", \"dense\" or \"encoded\", not \"" + requested + "\"");
  if (!(fraction > 0 && fraction <= 1))
    throw InvalidArgument("admission_fraction must lie in (0, 1], not " + std::to_string(fraction));
  const bool cuda = backend == Backend::cuda;
  Admission a;
  a.memory = cuda ? "gpu" : "host";
  a.fraction = fraction;
  a.free_bytes = free_bytes;
  a.limit_bytes = limit_bytes ? limit_bytes : static_cast<std::size_t>(fraction * double(free_bytes));
  a.dense_bytes = plan.out_shape.nbytes(dtype_size(plan.out_dtype));
  const FileInfo& fi = plan.info;
  const std::size_t frame_bytes = std::max<std::size_t>(fi.frame_bytes(), 1);
  const std::size_t out_frame_bytes = plan.out_shape.frame_pixels() * dtype_size(plan.out_dtype);
  const std::size_t selected = checked_mul(plan.scan.rows, plan.scan.cols, "selected frames");
  const std::size_t row_frames = plan.bin_scan * plan.scan.cols;
  const std::size_t batch_frames = std::min(selected, staging_frames(plan, cuda));
  const std::size_t staging_in = checked_mul(batch_frames, frame_bytes, "load staging");
  const std::size_t batch_out_rows = (batch_frames + row_frames - 1) / row_frames;
  const std::size_t staging_out =
      plan.full_frames() && !plan.binned()
          ? 0
          : checked_mul(batch_out_rows * plan.out_shape.scan_cols, out_frame_bytes, "load staging");
  const std::size_t reads = cuda ? kReadSlots * plan.batch_bytes : 0;
  a.dense_scratch = (plan.full_frames() && !plan.binned() ? 0 : staging_in) + reads;
  const std::size_t P = plan.out_shape.frame_pixels();
  const std::size_t tiles = (plan.out_shape.frames() + encoded::kDefaultTile - 1) / encoded::kDefaultTile;
  const std::size_t slot = encoded::stream_slot_bytes(encoded::kDefaultTile);
  // One stream_slot_bytes slot per stream bounds the encoder's compact scratch (a stream's bound is at most its
  // slot; encode_compact's cap), plus the encoder's per-stream offsets of one group.
  const std::size_t group_streams =
      std::min(tiles, std::max<std::size_t>(1, encoded::cuda::kMaxGroupStreams / std::max<std::size_t>(P, 1))) * P;
  const std::size_t encoder =
      cuda ? checked_add(std::min(checked_mul(checked_mul(tiles, P, "encoder"), slot, "encoder"),
                                  std::max(kEncoderScratch, checked_mul(P, slot, "encoder"))),
                         checked_mul(group_streams, 4, "encoder offsets"), "encoder")
           : 0;
  const std::size_t tile_staging =
      std::min<std::size_t>(encoded::kDefaultTile, plan.out_shape.frames()) * out_frame_bytes;
  // The encoder reads one batch while the next is decoded: a second copy of its input (binned rows, or the
  // decoded frames when they pass through unchanged).
  const std::size_t encoder_input = staging_out ? staging_out : staging_in;
  a.encoded_scratch = staging_in + staging_out + encoder_input + tile_staging + encoder + reads;
  a.encoded_estimate = estimate_encoded_bytes(plan, file_bytes);
  const bool dense_fits = a.dense_bytes + a.dense_scratch <= a.limit_bytes;
  const bool encoded_fits = a.encoded_estimate + a.encoded_scratch <= a.limit_bytes;
  const std::string limit = gib(a.limit_bytes) + " (" +
                            (limit_bytes ? std::string("admission_limit_bytes")
                                         : std::to_string(int(fraction * 100 + 0.5)) + "% of " + gib(free_bytes) +
                                               " free " + (cuda ? "GPU" : "host") + " memory") +
                            ")";
  const std::string dense_need = "dense " + gib(a.dense_bytes) + " + " + gib(a.dense_scratch) + " load buffers";
  const std::string enc_need =
      "encoded ~" + gib(a.encoded_estimate) + " (estimated from the file size) + " + gib(a.encoded_scratch) +
      " scratch";
  const std::string what = "'" + fi.dataset_path + "' in '" + fi.path + "'";
  const bool counts = is_count_dtype(plan.out_dtype);
  const std::string not_counts = "the encoded representation holds unsigned counts; " + what + " holds " +
                                 dtype_name(plan.out_dtype) + " values, which load dense";
  if (requested == "encoded" && !counts) throw InvalidArgument("cannot load " + what + " encoded: " + not_counts);
  if (!counts && !dense_fits)
    throw InvalidArgument("cannot load " + what + ": it needs " + dense_need + ", over the limit of " + limit + " (" +
                          not_counts + "); crop or bin it (scan_region, bin_scan)");
  if (requested == "dense" || !counts) {
    if (!dense_fits)
      throw InvalidArgument("cannot load " + what + " dense: it needs " + dense_need + ", over the limit of " + limit +
                            "; load it with representation \"encoded\" or \"auto\", or crop/bin it");
    a.representation = "dense";
  } else if (requested == "encoded") {
    if (!encoded_fits)
      throw InvalidArgument("cannot load " + what + " encoded: it needs " + enc_need + ", over the limit of " + limit +
                            "; crop or bin it (scan_region, bin_scan)");
    a.representation = "encoded";
  } else {
    if (!dense_fits && !encoded_fits)
      throw InvalidArgument("cannot load " + what + ": it fits neither dense (" + dense_need + ") nor encoded (" +
                            enc_need + ") under the limit of " + limit + "; crop or bin it (scan_region, bin_scan)");
    a.representation = dense_fits ? "dense" : "encoded";
  }
  return a;
}

}  // namespace qgpu::io
