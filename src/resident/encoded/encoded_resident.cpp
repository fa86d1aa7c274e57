#include "resident/encoded/encoded_resident.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/stage_timing.hpp"
#include "detector/disk_fit.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/device_buffer.hpp"
#include "resident/encoded/cuda/encode_kernels.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"

namespace qgpu {

struct EncodedResident::Storage {
  Backend backend = Backend::cpu;
  Shape4D shape;
  encoded::Layout layout;
  std::size_t appended = 0, pending = 0;  // frames appended; of those, frames waiting in the staging tile
  std::vector<encoded::TileRef> refs;
  // cpu backend
  std::vector<encoded::cpu::HostTile> host_tiles;
  std::vector<std::uint64_t> host_totals, host_sum_pattern;  // (the sum pattern also for cuda, once complete)
  std::vector<std::uint32_t> density_rank;  // once complete: see decode_order
  std::vector<std::uint32_t> decode_sequence;  // the pixels by density rank (sequence[rank[p]] = p)
  std::uint64_t decode_cost = 0;  // once complete: the sum of every pixel's cost (split_by_cost)
  std::mutex ones_mutex;
  std::shared_ptr<DeviceBuffer> d_ones;  // cuda: frame_pixels weights of 1 (a uniform mask's), made on first use
  std::vector<std::uint8_t> host_pending;
  // cuda backend
  std::vector<encoded::cuda::DeviceTiles> groups;
  // (device buffers from the pool, pooled_buffer: back to it when the resident goes, for the next one's load)
  std::shared_ptr<DeviceBuffer> d_totals, d_sum_pattern, d_refs;
  std::unique_ptr<LeasedBuffer> d_pending;  // the staging tile, leased: the end of a load gives it back unfreed
  std::shared_ptr<DeviceBuffer> d_dirs;  // every tile's directory (one allocation; the groups share it)
  encoded::cuda::CompactScratch compact_scratch;  // the encoder's, reused by every append, released at the end
  // cuda: after the first encoded batch, one buffer for the payloads of the others, sized from that batch
  // (plan_payload_arena); trimmed at the end when it was much too large.
  encoded::cuda::PayloadArena payload_arena;
  bool arena_planned = false;
  encoded::cuda::EncodeTiming timing;             // the encoder's stage times, summed over appends
  // The radial basis built beside the encoding (request_radial_basis)
  RadialBasisRequest basis_request;
  std::shared_ptr<RadialBasis> basis;
  std::string basis_skipped;  // why none was built
  nlohmann::json basis_fit;   // the disk fit that gave its centre
  // The scan-binned copy built beside it (request_scan_binned)
  ScanBinnedRequest binned_request;
  std::unique_ptr<ScanBinnedBuilder> binned;
  std::string binned_skipped;  // why none was built
  // Moment totals (prepare_moments): per frame [S | Sr | Sc] over every pixel, once computed (host for cpu, device
  // for cuda; S is a copy of the frame totals so that one subtraction serves all three).
  std::mutex moments_mutex;
  std::vector<std::uint64_t> host_moments;
  std::shared_ptr<DeviceBuffer> d_moments;
  std::string moments_source;  // "radial basis" or "decode" once computed
  // An incomplete resident (a load that failed) may still have encoder work queued on the loader's stream: it ends
  // before the leased scratch goes back to the pool for others to use.
  ~Storage() {
    if (compact_scratch.bytes || d_pending) cudaDeviceSynchronize();
  }
};

namespace {

std::size_t checked_mul(std::size_t a, std::size_t b, const char* what) {
  if (a != 0 && b > SIZE_MAX / a) throw InvalidArgument(std::string(what) + " overflows");
  return a * b;
}

// Rank of each pixel by decreasing density class of its total count (8 classes per power of two; within a class,
// by pixel index), and the pixels in rank order: a counting sort, O(pixels), so that completing a load does not wait
// for a comparison sort (2 ms for a 192x192 detector). Warps only need pixels of similar cost together, not an exact
// order. Returns the sum of the pixels' decode costs, min(total count, frames) each (split_by_cost), on the way.
std::uint64_t density_order(const std::vector<std::uint64_t>& pattern, std::uint64_t frames,
                            std::vector<std::uint32_t>& rank, std::vector<std::uint32_t>& sequence) {
  constexpr std::uint32_t kClasses = 65 * 8;
  const auto key = [](std::uint64_t v) {  // kClasses - 1 - density class: densest first
    const auto w = static_cast<std::uint32_t>(std::bit_width(v));  // 0..64
    const std::uint32_t sub = w > 3 ? static_cast<std::uint32_t>(v >> (w - 4)) & 7u : static_cast<std::uint32_t>(v) & 7u;
    return kClasses - 1 - (w * 8 + sub);
  };
  // Each key once (kept for the scatter), counted in four histograms (no chain of increments of one counter).
  const std::size_t n = pattern.size();
  std::vector<std::uint16_t> keys(n);
  std::uint32_t count[4][kClasses] = {};
  std::uint64_t cost = 0;
  for (std::size_t p = 0; p < n; ++p) {
    const std::uint32_t k = key(pattern[p]);
    keys[p] = static_cast<std::uint16_t>(k);
    ++count[p & 3][k];
    cost += std::min(pattern[p], frames);
  }
  std::uint32_t start[kClasses];
  for (std::uint32_t i = 0, at = 0; i < kClasses; ++i) {
    start[i] = at;
    at += count[0][i] + count[1][i] + count[2][i] + count[3][i];
  }
  rank.resize(n);
  sequence.resize(n);
  for (std::uint32_t p = 0; p < n; ++p) {
    const std::uint32_t r = start[keys[p]]++;
    rank[p] = r;
    sequence[r] = p;
  }
  return cost;
}

}  // namespace

EncodedResident::EncodedResident(const Shape4D& shape, DType dtype, Backend backend, std::uint32_t tile,
                                 encoded::Policy policy)
    : s_(std::make_shared<Storage>()) {
  s_->backend = backend;
  s_->shape = shape;
  s_->layout = {checked_mul(shape.scan_rows, shape.scan_cols, "scan size"),
                checked_mul(shape.det_rows, shape.det_cols, "detector size"), dtype, tile, policy};
  encoded::validate(s_->layout);
  checked_mul(checked_mul(s_->layout.frames, s_->layout.frame_pixels, "dataset size"), dtype_size(dtype),
              "dataset bytes");
  const std::size_t staging = static_cast<std::size_t>(tile) * s_->layout.frame_pixels * dtype_size(dtype);
  if (backend == Backend::cpu) {
    s_->host_sum_pattern.assign(s_->layout.frame_pixels, 0);
    s_->host_totals.reserve(s_->layout.frames);
  } else {
    s_->d_totals = pooled_buffer(s_->layout.frames * sizeof(std::uint64_t));
    s_->d_sum_pattern = pooled_buffer(s_->layout.frame_pixels * sizeof(std::uint64_t));
    QGPU_CUDA(cudaMemset(s_->d_sum_pattern->data(), 0, s_->d_sum_pattern->bytes()));
    QGPU_CUDA(cudaStreamSynchronize(nullptr));  // done before appends on other streams add to it
    s_->d_pending = std::make_unique<LeasedBuffer>(staging);
    s_->d_refs = pooled_buffer(s_->layout.tiles() * sizeof(encoded::TileRef));
    s_->d_dirs = pooled_buffer(checked_mul(
        checked_mul(s_->layout.tiles(), s_->layout.frame_pixels + 1, "encoded directories"), sizeof(std::uint32_t),
        "encoded directories"));
  }
}

Backend EncodedResident::backend() const { return s_->backend; }
DType EncodedResident::dtype() const { return s_->layout.dtype; }
const Shape4D& EncodedResident::shape() const { return s_->shape; }
const encoded::Layout& EncodedResident::layout() const { return s_->layout; }
std::size_t EncodedResident::frames_appended() const { return s_->appended; }
bool EncodedResident::complete() const { return s_->appended == s_->layout.frames; }
const std::vector<encoded::TileRef>& EncodedResident::tiles() const { return s_->refs; }

void EncodedResident::encode_frames(const void* frames, std::size_t count, CUstream_st* stream,
                                    const std::uint32_t* live, const unsigned long long* totals) {
  const encoded::Layout& l = s_->layout;
  if (s_->backend == Backend::cpu) {
    const std::size_t fb = l.frame_pixels * dtype_size(l.dtype);
    for (std::size_t f = 0; f < count; f += l.tile) {
      const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(l.tile, count - f));
      s_->host_tiles.push_back(encoded::cpu::encode_tile(l, static_cast<const std::uint8_t*>(frames) + f * fb, n));
      const auto& t = s_->host_tiles.back();
      for (std::size_t p = 0; p < l.frame_pixels; ++p) s_->host_sum_pattern[p] += t.pixel_sums[p];
      s_->refs.push_back(t.ref());
    }
  } else {
    auto* const sums = s_->d_sum_pattern->as<std::uint64_t>();
    for (auto& g : encoded::cuda::encode_compact(l, frames, count, sums,
                                                 s_->d_totals->as<std::uint64_t>() + s_->refs.size() * l.tile, stream,
                                                 &s_->compact_scratch, &s_->timing, s_->d_dirs, s_->refs.size(),
                                                 live, &s_->payload_arena,
                                                 reinterpret_cast<const std::uint64_t*>(totals))) {
      s_->refs.insert(s_->refs.end(), g.refs.begin(), g.refs.end());
      s_->groups.push_back(std::move(g));
    }
    const auto a0 = std::chrono::steady_clock::now();
    plan_payload_arena();
    s_->timing.host_alloc_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a0).count();
  }
}

void EncodedResident::request_radial_basis(const RadialBasisRequest& request) {
  if (s_->appended > 0) throw InvalidArgument("encoded resident: a radial basis is requested before the first append");
  s_->basis_request = request;
}

const RadialBasis* EncodedResident::radial_basis() const {
  return complete() && s_->basis && s_->basis->usable() ? s_->basis.get() : nullptr;
}

nlohmann::json EncodedResident::radial_basis_report() const {
  if (!s_->basis_request.enabled) return nullptr;
  if (!s_->basis) return {{"built", false}, {"reason", s_->basis_skipped.empty() ? "not built" : s_->basis_skipped}};
  nlohmann::json j = s_->basis->describe();
  j["built"] = s_->basis->usable() && complete();
  j["center_source"] = s_->basis_request.center ? "given" : "disk fit of the first loaded batch";
  if (!s_->basis_fit.is_null()) j["disk_fit"] = s_->basis_fit;
  return j;
}

// The first batch decides the basis (its centre from the batch's summed pattern unless given).
void EncodedResident::start_basis(const void* frames, std::size_t count, CUstream_st* stream) {
  const RadialBasisRequest& req = s_->basis_request;
  if (!req.enabled) return;
  if (!s_->basis && s_->basis_skipped.empty()) {
    try {
      std::pair<double, double> c;
      if (req.center) {
        c = *req.center;
      } else {
        Image<std::uint64_t> sp;
        sp.rows = s_->shape.det_rows;
        sp.cols = s_->shape.det_cols;
        sp.data = RadialBasis::batch_sum_pattern(s_->shape, s_->layout.dtype, s_->backend, frames, count, stream);
        const detector::DiskFit fit = detector::fit_bf_disk(SumImage(std::move(sp)));
        s_->basis_fit = detector::fit_json(fit);
        c = {fit.center_row, fit.center_col};
      }
      s_->basis = std::make_shared<RadialBasis>(s_->shape, s_->layout.dtype, s_->backend, c.first, c.second);
    } catch (const Error& e) {
      if (req.required) throw;
      s_->basis_skipped = e.what();
    }
  }
}

void EncodedResident::request_scan_binned(const ScanBinnedRequest& request) {
  if (s_->appended > 0)
    throw InvalidArgument("encoded resident: a scan-binned copy is requested before the first append");
  s_->binned_request = request;
  s_->binned.reset();
  s_->binned_skipped.clear();
  if (request.bin == 0) return;
  try {
    s_->binned = std::make_unique<ScanBinnedBuilder>(s_->shape, s_->layout.dtype, s_->backend, request.bin,
                                                     s_->layout.policy);
  } catch (const Error& e) {
    if (request.required) throw;
    s_->binned_skipped = e.what();
  }
}

std::shared_ptr<EncodedResident> EncodedResident::scan_binned(std::size_t scan_bin) const {
  if (!complete() || !s_->binned || scan_bin == 0 || scan_bin % s_->binned->bin() != 0) return nullptr;
  return s_->binned->resident();
}

nlohmann::json EncodedResident::scan_binned_report() const {
  if (s_->binned_request.bin == 0) return nullptr;
  if (!s_->binned)
    return {{"bin", s_->binned_request.bin}, {"built", false},
            {"reason", s_->binned_skipped.empty() ? "not built" : s_->binned_skipped}};
  nlohmann::json j = s_->binned->describe();
  if (!complete()) j["built"] = false;
  return j;
}

// Every batch feeds the copy, and `with` (the basis) in the same pass where given: true when it did. A failure
// (memory) drops the copy with the reason unless it is required (the caller then adds the whole batch to the basis:
// its build writes each frame's values, so frames it already took are written again with the same).
bool EncodedResident::feed_scan_binned(const void* frames, std::size_t count, CUstream_st* stream,
                                       RadialBasis* with) {
  if (!s_->binned || !s_->binned->usable()) return false;
  try {
    s_->binned->add(frames, s_->appended, count, stream, with);
    return with != nullptr;
  } catch (const Error& e) {
    if (s_->binned_request.required) throw;
    s_->binned.reset();
    s_->binned_skipped = std::string("dropped during the load: ") + e.what();
    return false;
  }
}

void EncodedResident::append(const void* frames, std::size_t count, CUstream_st* stream,
                             const std::uint32_t* live, const unsigned long long* totals) {
  const encoded::Layout& l = s_->layout;
  if (count > l.frames - s_->appended)
    throw InvalidArgument("cannot append " + std::to_string(count) + " frames: " +
                          std::to_string(l.frames - s_->appended) + " of " + std::to_string(l.frames) + " remain");
  if (count == 0) return;
  const bool cpu = s_->backend == Backend::cpu;
  start_basis(frames, count, stream);
  // The basis and the copy in one pass over the frames where the GPU build takes both, else one after the other.
  RadialBasis* with = s_->basis && s_->binned && s_->binned->usable() &&
                              s_->basis->builds_with_binned(s_->binned->bin())
                          ? s_->basis.get()
                          : nullptr;
  if (!feed_scan_binned(frames, count, stream, with) && s_->basis) s_->basis->add(frames, s_->appended, count, stream);
  const std::size_t fb = l.frame_pixels * dtype_size(l.dtype);
  const auto* src = static_cast<const std::uint8_t*>(frames);
  if (cpu) encoded::cpu::frame_totals(l, frames, count, s_->host_totals);  // the CUDA encoder writes its totals
  const bool final = s_->appended + count == l.frames;
  if (s_->pending > 0 || cpu) live = nullptr;  // the marks count tiles from frames[0]: only for a tile-aligned append
  if (cpu) totals = nullptr;
  const auto stage = [&](const std::uint8_t* from, std::size_t n) {  // into the staging tile after s_->pending
    if (cpu) {
      s_->host_pending.resize(static_cast<std::size_t>(l.tile) * fb);
      std::memcpy(s_->host_pending.data() + s_->pending * fb, from, n * fb);
    } else {
      QGPU_CUDA(cudaMemcpyAsync(s_->d_pending->as<std::uint8_t>() + s_->pending * fb, from, n * fb,
                                cudaMemcpyDeviceToDevice, stream));
    }
    s_->pending += n;
  };
  std::size_t done = 0;
  if (s_->pending > 0) {
    done = std::min<std::size_t>(l.tile - s_->pending, count);
    stage(src, done);
    if (s_->pending == l.tile || final) {
      encode_frames(cpu ? static_cast<const void*>(s_->host_pending.data()) : s_->d_pending->data(), s_->pending,
                    stream);
      s_->pending = 0;
    }
  }
  const std::size_t rest = count - done;
  const std::size_t direct = final ? rest : rest / l.tile * l.tile;
  if (direct > 0)  // (done == 0 when live)
    encode_frames(src + done * fb, direct, stream, live, totals ? totals + done : nullptr);
  if (rest > direct) stage(src + (done + direct) * fb, rest - direct);
  s_->appended += count;
  if (!cpu) sleep_until_done(stream);  // frames (and the staging copy) read: reusable
  if (final) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto ms_since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    };
    s_->host_pending = {};
    s_->d_pending.reset();
    s_->compact_scratch = {};
    if (!cpu) {
      s_->timing.release_ms += ms_since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      trim_payload_arena(stream);
      s_->timing.trim_ms += ms_since(t1);
      const auto t2 = std::chrono::steady_clock::now();
      s_->d_refs->upload(s_->refs.data(), s_->refs.size() * sizeof(encoded::TileRef));
      s_->host_sum_pattern.resize(l.frame_pixels);  // kept on the host too: the query planners read it
      s_->d_sum_pattern->download(s_->host_sum_pattern.data(), l.frame_pixels * sizeof(std::uint64_t));
      s_->timing.refs_ms += ms_since(t2);
    }
    s_->decode_cost = density_order(s_->host_sum_pattern, l.frames, s_->density_rank, s_->decode_sequence);
    if (s_->basis && !s_->basis->finish() && s_->basis_request.required)
      throw Error("radial basis: " + s_->basis->reason());
    if (s_->binned && s_->binned->finish()) s_->binned->verify(s_->host_sum_pattern, *this,
                           s_->basis && s_->basis->usable() ? s_->basis.get() : nullptr);
    if (s_->binned && !s_->binned->usable() && s_->binned_request.required)
      throw Error("scan-binned copy: " + s_->binned->reason());
    if (!cpu) s_->timing.finish_ms += ms_since(t0);
  }
}

Dataset encode_with_radial_basis(const Dataset& dense, const RadialBasisRequest& basis, std::uint32_t tile,
                                 const ScanBinnedRequest& binned) {
  if (dense.encoded()) return dense;
  if (dense.backend() != Backend::cpu && dense.backend() != Backend::cuda)
    throw InvalidArgument("a radial basis is built on the cpu or cuda backend, not " + backend_name(dense.backend()));
  auto enc = std::make_shared<EncodedResident>(dense.shape(), dense.dtype(), dense.backend(), tile);
  enc->request_radial_basis(basis);
  enc->request_scan_binned(binned);
  enc->append(dense.backend() == Backend::cpu ? static_cast<const void*>(dense.host_bytes().data())
                                              : dense.device_buffer().data(),
              dense.shape().frames());
  Provenance p = dense.provenance();
  p.representation = "encoded";
  p.resident_bytes = enc->resident_bytes();
  p.dense_bytes = enc->dense_bytes();
  return Dataset::from_encoded(std::move(enc), dense.metadata(), std::move(p));
}

// Once, after the first encoded batch of a resident that has more to come: one buffer for the payloads of the rest,
// 1/8 larger than the first batch's payload per frame predicts (at least 64 KiB), so that the encoder allocates
// nothing per batch (those cudaMallocs on its thread stalled it for up to 10 ms per load of the sample beside the
// decoder). Groups that do not fit get their own allocation as before; no arena when even this one fails.
void EncodedResident::plan_payload_arena() {
  if (s_->arena_planned) return;
  s_->arena_planned = true;
  const std::size_t done = std::min(s_->layout.frames, s_->refs.size() * std::size_t{s_->layout.tile});
  if (done == 0 || done >= s_->layout.frames) return;
  const double per_frame = double(s_->timing.payload_bytes) / double(done);
  const auto bytes = static_cast<std::size_t>(1.125 * per_frame * double(s_->layout.frames - done)) + (64u << 10);
  try {
    s_->payload_arena = {pooled_buffer(bytes), 0};
  } catch (const OutOfMemory&) {
    s_->payload_arena = {};
  }
}

// At the end: an arena with more unused bytes than 1/4 of its used ones gives its payloads to one buffer of their exact
// size (one allocation and one copy) and goes; else it stays as their storage (resident_bytes counts it whole). The
// arena is planned 1/8 larger than predicted, so later frames like the first keep it: a trim (an allocation of the
// payload's size, a copy and a free) cost the last batch of the 512x512 sample 5.5-7.7 ms on the H200.
void EncodedResident::trim_payload_arena(CUstream_st* stream) {
  encoded::cuda::PayloadArena& a = s_->payload_arena;
  if (!a.buf) return;
  const std::size_t unused = a.buf->bytes() - std::min(a.buf->bytes(), a.used + encoded::kPayloadPad);
  if (a.used > 0 && unused <= a.used / 4) {
    a = {};  // the groups keep it
    return;
  }
  std::shared_ptr<DeviceBuffer> exact;
  if (a.used > 0) {
    exact = std::make_shared<DeviceBuffer>(a.used + encoded::kPayloadPad);
    QGPU_CUDA(cudaMemcpyAsync(exact->data(), a.buf->data(), a.used, cudaMemcpyDeviceToDevice, stream));
    QGPU_CUDA(cudaStreamSynchronize(stream));
    const auto* from = a.buf->as<std::uint8_t>();
    s_->refs.clear();  // the groups' refs in order (as encode_frames appended them), rebased where they moved
    for (auto& g : s_->groups) {
      if (g.payload == a.buf) {
        g.payload = exact;
        for (auto& r : g.refs) r.payload = exact->as<std::uint8_t>() + (r.payload - from);
      }
      s_->refs.insert(s_->refs.end(), g.refs.begin(), g.refs.end());
    }
  }
  a = {};
}

std::string EncodedResident::encoder_stages() const {
  if (s_->backend != Backend::cuda) return "";
  return s_->timing.summary();
}

EncodedResident::EncoderTotals EncodedResident::encoder_totals() const {
  const auto& t = s_->timing;
  return {t.stats_encode_ms, t.offsets_ms, t.compact_ms, t.host_wait_ms, t.finish_ms, t.order_ms, t.host_alloc_ms};
}

std::size_t EncodedResident::resident_bytes() const {
  std::size_t n = 0;
  if (s_->backend == Backend::cpu) {
    for (const auto& t : s_->host_tiles) n += t.payload.size() + t.dir.size() * sizeof(std::uint32_t);
    n += s_->layout.frames * sizeof(std::uint64_t) + s_->host_sum_pattern.size() * sizeof(std::uint64_t) +
         s_->host_pending.size();
    std::lock_guard lock(s_->moments_mutex);
    n += s_->host_moments.size() * sizeof(std::uint64_t);
  } else {
    // Each payload buffer once (the groups in the arena share it; their directories all lie in d_dirs), and the
    // arena also while no group is in it yet.
    std::vector<const DeviceBuffer*> bufs;
    for (const auto& g : s_->groups) bufs.push_back(g.payload.get());
    if (s_->payload_arena.buf) bufs.push_back(s_->payload_arena.buf.get());
    std::sort(bufs.begin(), bufs.end());
    bufs.erase(std::unique(bufs.begin(), bufs.end()), bufs.end());
    for (const DeviceBuffer* b : bufs) n += b->bytes();
    std::shared_ptr<DeviceBuffer> moments;
    {
      std::lock_guard lock(s_->moments_mutex);
      moments = s_->d_moments;
    }
    for (const DeviceBuffer* b : {s_->d_dirs.get(), s_->d_totals.get(), s_->d_sum_pattern.get(),
                                  s_->d_pending ? &s_->d_pending->buffer() : nullptr, s_->d_refs.get(), moments.get()})
      if (b) n += b->bytes();
  }
  return n;
}

void EncodedResident::require_complete(const char* what) const {
  if (!complete())
    throw InvalidArgument(std::string("encoded resident ") + what + ": only " + std::to_string(s_->appended) +
                          " of " + std::to_string(s_->layout.frames) + " frames appended");
}

const encoded::TileRef* EncodedResident::device_tiles() const {
  require_complete("device tiles");
  if (s_->backend != Backend::cuda) throw Error("encoded resident is in host memory, not on the GPU");
  return s_->d_refs->as<encoded::TileRef>();
}
const std::uint64_t* EncodedResident::device_frame_totals() const {
  require_complete("frame totals");
  if (s_->backend != Backend::cuda) throw Error("encoded resident is in host memory, not on the GPU");
  return s_->d_totals->as<std::uint64_t>();
}

namespace {

// Uploads a pixel list (each checked inside the frame) and its weightings in the resident's decode order: d_pix
// [npix], d_w [k][npix]. ordered: a PixelSplit's list (in decode order, each pixel once, inside the frame): as it is,
// unchecked.
void upload_in_decode_order(const EncodedResident& e, const std::vector<std::uint32_t>& pixels,
                            const std::vector<std::vector<std::uint32_t>>& weights, LeasedBuffer& d_pix,
                            LeasedBuffer& d_w, bool ordered = false) {
  if (!ordered)
    for (std::uint32_t p : pixels)
      if (p >= e.layout().frame_pixels)
        throw RegionError("masked sum pixel " + std::to_string(p) + " is outside the frame");
  const std::size_t n = pixels.size(), K = weights.size();
  if (n == 0) return;
  if (ordered || e.in_decode_order(pixels)) {  // as they are, no sort and no gather
    d_pix.buffer().upload(pixels.data(), n * sizeof(std::uint32_t));
    for (std::size_t k = 0; k < K; ++k)
      d_w.buffer().upload(weights[k].data(), n * sizeof(std::uint32_t), k * n * sizeof(std::uint32_t));
    return;
  }
  const std::vector<std::uint32_t> order = e.decode_order(pixels);
  std::vector<std::uint32_t> host((K + 1) * n);
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = pixels[order[i]];
    for (std::size_t k = 0; k < K; ++k) host[(k + 1) * n + i] = weights[k][order[i]];
  }
  d_pix.buffer().upload(host.data(), n * sizeof(std::uint32_t));
  if (K) d_w.buffer().upload(host.data() + n, K * n * sizeof(std::uint32_t));
}

}  // namespace

std::vector<std::vector<std::uint64_t>> EncodedResident::masked_sums(
    const std::vector<std::uint32_t>& pixels, const std::vector<std::vector<std::uint32_t>>& weights) const {
  return masked_sums_listed(pixels, weights, false, false);
}

std::vector<std::uint64_t> EncodedResident::masked_ones_listed(const std::vector<std::uint32_t>& pixels) const {
  if (s_->backend == Backend::cpu) return encoded::cpu::masked_sum(s_->layout, s_->refs, pixels,
                                                                   std::vector<std::uint32_t>(pixels.size(), 1u));
  return std::move(masked_sums_listed(pixels, {}, true, true)[0]);
}

// ones (cuda): one weighting of 1 per pixel, the resident's device ones (weights unused: only the list is uploaded).
std::vector<std::vector<std::uint64_t>> EncodedResident::masked_sums_listed(
    const std::vector<std::uint32_t>& pixels, const std::vector<std::vector<std::uint32_t>>& weights, bool ordered,
    bool ones) const {
  require_complete("masked sum");
  const encoded::Layout& l = s_->layout;
  if (s_->backend == Backend::cpu) return encoded::cpu::masked_sums(l, s_->refs, pixels, weights);
  if (!ones && (weights.empty() || weights.size() > 3))
    throw InvalidArgument("masked sums take 1 to 3 weightings, not " + std::to_string(weights.size()));
  for (const auto& w : weights)
    if (pixels.size() != w.size()) throw InvalidArgument("masked sum: pixel and weight lists differ in length");
  const std::size_t K = ones ? 1 : weights.size(), n = pixels.size();
  // Pooled device buffers (no cudaMalloc / cudaFree, which synchronises the device, per query).
  LeasedBuffer d_out(K * l.frames * sizeof(std::uint64_t));
  LeasedBuffer d_pix(n * sizeof(std::uint32_t)), d_w(ones ? 0 : K * n * sizeof(std::uint32_t));
  {
    const timing::Stage stage("upload");  // the pixels in decode order and their weights
    upload_in_decode_order(*this, pixels, weights, d_pix, d_w, ordered);
  }
  encoded::cuda::masked_sums(l, device_tiles(), d_pix.as<std::uint32_t>(),
                             ones ? device_ones() : d_w.as<std::uint32_t>(), n, static_cast<int>(K),
                             d_out.as<std::uint64_t>(), nullptr);
  const timing::Stage stage("transfer");  // (waits for the kernel first)
  std::vector<std::vector<std::uint64_t>> out(K, std::vector<std::uint64_t>(l.frames));
  for (std::size_t k = 0; k < K; ++k)
    d_out.buffer().download(out[k].data(), l.frames * sizeof(std::uint64_t), k * l.frames * sizeof(std::uint64_t));
  return out;
}

std::vector<std::uint64_t> EncodedResident::masked_sum(const std::vector<std::uint32_t>& pixels,
                                                       const std::vector<std::uint32_t>& weights) const {
  return std::move(masked_sums(pixels, {weights})[0]);
}

bool EncodedResident::in_decode_order(const std::vector<std::uint32_t>& pixels) const {
  require_complete("decode order");
  const std::vector<std::uint32_t>& rank = s_->density_rank;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    if (pixels[i] >= rank.size()) return false;  // (decode_order raises for it)
    if (i && rank[pixels[i]] <= rank[pixels[i - 1]]) return false;
  }
  return true;
}

const std::uint32_t* EncodedResident::device_ones() const {
  require_complete("device weights");
  if (s_->backend != Backend::cuda) throw Error("encoded resident is in host memory, not on the GPU");
  std::lock_guard lock(s_->ones_mutex);
  if (!s_->d_ones) {
    const std::vector<std::uint32_t> ones(std::max<std::size_t>(s_->layout.frame_pixels, 1), 1u);
    s_->d_ones = pooled_buffer(ones.size() * sizeof(std::uint32_t));
    s_->d_ones->upload(ones.data(), ones.size() * sizeof(std::uint32_t));
  }
  return s_->d_ones->as<std::uint32_t>();
}

// A counting sort by density rank: O(list + frame pixels).
std::vector<std::uint32_t> EncodedResident::decode_order(const std::vector<std::uint32_t>& pixels) const {
  require_complete("decode order");
  const std::vector<std::uint32_t>& rank = s_->density_rank;
  std::vector<std::uint32_t> start(rank.size() + 1, 0), out(pixels.size());
  for (std::uint32_t p : pixels) {
    if (p >= rank.size()) throw RegionError("pixel " + std::to_string(p) + " is outside the frame");
    ++start[rank[p] + 1];
  }
  for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  for (std::uint32_t j = 0; j < pixels.size(); ++j) out[start[rank[pixels[j]]]++] = j;
  return out;
}

std::vector<std::uint64_t> EncodedResident::complement_sum(const std::vector<std::uint32_t>& complement,
                                                           std::uint32_t weight) const {
  return complement_sum_listed(complement, weight, false);
}

std::vector<std::uint64_t> EncodedResident::complement_sum_listed(const std::vector<std::uint32_t>& complement,
                                                                  std::uint32_t weight, bool ordered) const {
  require_complete("complement sum");
  const encoded::Layout& l = s_->layout;
  std::vector<std::uint64_t> out;
  if (s_->backend == Backend::cpu) {
    out = encoded::cpu::masked_sum(l, s_->refs, complement, std::vector<std::uint32_t>(complement.size(), 1));
    for (std::size_t f = 0; f < out.size(); ++f) out[f] = std::uint64_t{weight} * (s_->host_totals[f] - out[f]);
    return out;
  }
  const std::size_t n = complement.size();
  LeasedBuffer d_out(l.frames * sizeof(std::uint64_t));
  LeasedBuffer d_pix(n * sizeof(std::uint32_t)), d_none(0);
  {
    const timing::Stage stage("upload");  // the pixels in decode order (their weights: the resident's ones)
    upload_in_decode_order(*this, complement, {}, d_pix, d_none, ordered);
  }
  encoded::cuda::complement_sum(l, device_tiles(), device_frame_totals(), d_pix.as<std::uint32_t>(),
                                device_ones(), n, weight, d_out.as<std::uint64_t>(), nullptr);
  const timing::Stage stage("transfer");  // (waits for the kernel first)
  out.resize(l.frames);
  d_out.buffer().download(out.data(), out.size() * sizeof(std::uint64_t));
  return out;
}

namespace {

// The pixels whose bit (by decode rank) is `want` in bits, in rank order: sequence[r] for each such r.
void ranked_pixels(const std::vector<std::uint64_t>& bits, bool want, std::size_t count,
                   const std::vector<std::uint32_t>& sequence, std::vector<std::uint32_t>& out) {
  out.resize(count);
  std::uint32_t* o = out.data();
  const std::uint64_t flip = want ? 0 : ~std::uint64_t{0};
  const std::size_t n = sequence.size();
  for (std::size_t w = 0; w < bits.size(); ++w) {
    std::uint64_t word = bits[w] ^ flip;
    if (n - w * 64 < 64) word &= (std::uint64_t{1} << (n - w * 64)) - 1;  // (the last word's bits past n)
    for (; word; word &= word - 1) *o++ = sequence[w * 64 + static_cast<std::size_t>(std::countr_zero(word))];
  }
}

}  // namespace

// Both forms mark the mask's pixels (or the listed ones) by decode rank and sum their costs; the other side's cost
// is the total less theirs (decode_cost, summed at the end of the load). Only the side chosen is listed.
EncodedResident::PixelSplit EncodedResident::split_by_cost(const std::vector<std::uint32_t>& listed, bool listed_own,
                                                           bool tie_to_own) const {
  require_complete("pixel split");
  const std::vector<std::uint64_t>& pattern = s_->host_sum_pattern;
  const std::vector<std::uint32_t>& rank = s_->density_rank;
  const std::uint64_t frames = s_->layout.frames;
  std::vector<std::uint64_t> bits((pattern.size() + 63) / 64, 0);
  std::size_t n_listed = 0;
  std::uint64_t cost_listed = 0;
  for (const std::uint32_t p : listed) {
    if (p >= pattern.size())
      throw RegionError("mask pixel " + std::to_string(p) + " is outside the frame of " +
                        std::to_string(pattern.size()) + " pixels");
    const std::uint32_t r = rank[p];
    const std::uint64_t bit = std::uint64_t{1} << (r & 63);
    if (bits[r >> 6] & bit) continue;  // a repeat
    bits[r >> 6] |= bit;
    ++n_listed;
    cost_listed += std::min(pattern[p], frames);
  }
  const std::uint64_t cost_other = s_->decode_cost - cost_listed;
  const std::uint64_t cost_own = listed_own ? cost_listed : cost_other, cost_rest = listed_own ? cost_other : cost_listed;
  PixelSplit split;
  split.rest_cheaper_ = cost_rest < cost_own || (cost_rest == cost_own && !tie_to_own);
  const bool decode_listed = listed_own != split.rest_cheaper_;
  ranked_pixels(bits, decode_listed, decode_listed ? n_listed : pattern.size() - n_listed, s_->decode_sequence,
                split.pixels_);
  return split;
}

EncodedResident::PixelSplit EncodedResident::split_by_cost(const std::uint8_t* own, bool tie_to_own) const {
  require_complete("pixel split");
  const std::size_t n = s_->layout.frame_pixels;
  std::vector<std::uint32_t> listed;
  listed.reserve(n);
  for (std::uint32_t p = 0; p < n; ++p)
    if (own[p]) listed.push_back(p);
  return split_by_cost(listed, true, tie_to_own);
}

std::vector<std::uint64_t> EncodedResident::uniform_sum(const PixelSplit& split, std::uint32_t weight) const {
  require_complete("uniform sum");
  if (split.rest_cheaper_) return complement_sum_listed(split.pixels_, weight, true);
  std::vector<std::uint64_t> out = masked_ones_listed(split.pixels_);
  if (weight != 1)
    for (std::uint64_t& v : out) v *= weight;  // (modulo 2^64, as the kernels' sums)
  return out;
}

namespace {

// The detector row and column of each listed pixel (the CoM's weights).
std::vector<std::vector<std::uint32_t>> row_col_weights(const std::vector<std::uint32_t>& pixels, std::size_t det_cols,
                                                        bool with_ones) {
  std::vector<std::vector<std::uint32_t>> w;
  if (with_ones) w.emplace_back(pixels.size(), 1u);
  std::vector<std::uint32_t> r(pixels.size()), c(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    r[i] = static_cast<std::uint32_t>(pixels[i] / det_cols);
    c[i] = static_cast<std::uint32_t>(pixels[i] % det_cols);
  }
  w.push_back(std::move(r));
  w.push_back(std::move(c));
  return w;
}

std::vector<std::uint32_t> every_pixel(std::size_t n) {
  std::vector<std::uint32_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint32_t>(i);
  return p;
}

}  // namespace

void EncodedResident::prepare_moments() const {
  require_complete("moment totals");
  std::lock_guard lock(s_->moments_mutex);
  if (!s_->host_moments.empty() || s_->d_moments) return;
  if (!(s_->basis && moments_from_basis(*s_->basis, 1))) moments_by_decode();
}

void EncodedResident::prepare_moments(const RadialBasis& basis, std::size_t b) const {
  require_complete("moment totals");
  std::lock_guard lock(s_->moments_mutex);
  if (!s_->host_moments.empty() || s_->d_moments) return;
  if (!moments_from_basis(basis, b)) moments_by_decode();
}

// [S | Sr | Sc]: S this resident's frame totals, Sr and Sc the basis's last boundary (every pixel) binned b x b,
// once its counts equal S (an independent check of both).
bool EncodedResident::moments_from_basis(const RadialBasis& basis, std::size_t b) const {
  const Shape4D& bs = basis.shape();
  if (!basis.usable() || basis.backend() != s_->backend || b == 0 || bs.det_rows != s_->shape.det_rows ||
      bs.det_cols != s_->shape.det_cols || bs.scan_rows != s_->shape.scan_rows * b ||
      bs.scan_cols != s_->shape.scan_cols * b)
    return false;
  const RadialBasis::Ranges all{{0u, basis.boundaries()}};
  const std::vector<std::uint64_t> totals = frame_totals();
  if (basis.sums(all, 0, b) != totals) return false;
  const std::size_t n = s_->layout.frames;
  if (s_->backend == Backend::cpu) {
    std::vector<std::uint64_t> out;
    out.reserve(3 * n);
    out.insert(out.end(), totals.begin(), totals.end());
    for (int q = 1; q < 3; ++q) {
      const std::vector<std::uint64_t> m = basis.sums(all, q, b);
      out.insert(out.end(), m.begin(), m.end());
    }
    s_->host_moments = std::move(out);
    s_->moments_source = "radial basis";
    return true;
  }
  auto d = pooled_buffer(3 * n * sizeof(std::uint64_t));
  auto* const m = d->as<std::uint64_t>();
  QGPU_CUDA(cudaMemcpyAsync(m, s_->d_totals->data(), n * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, nullptr));
  for (int q = 1; q < 3; ++q) basis.sums_device(all, q, m + std::size_t(q) * n, nullptr, b);
  QGPU_CUDA(cudaStreamSynchronize(nullptr));
  s_->d_moments = std::move(d);
  s_->moments_source = "radial basis";
  return true;
}

std::string EncodedResident::moments_source() const {
  std::lock_guard lock(s_->moments_mutex);
  return s_->moments_source;
}

void EncodedResident::moments_by_decode() const {
  const encoded::Layout& l = s_->layout;
  const std::vector<std::uint32_t> all = every_pixel(l.frame_pixels);
  const auto w = row_col_weights(all, s_->shape.det_cols, false);
  if (s_->backend == Backend::cpu) {
    const auto m = encoded::cpu::masked_sums(l, s_->refs, all, w);
    std::vector<std::uint64_t> out;
    out.reserve(3 * l.frames);
    out.insert(out.end(), s_->host_totals.begin(), s_->host_totals.end());
    out.insert(out.end(), m[0].begin(), m[0].end());
    out.insert(out.end(), m[1].begin(), m[1].end());
    s_->host_moments = std::move(out);
    s_->moments_source = "decode";
    return;
  }
  auto d = pooled_buffer(3 * l.frames * sizeof(std::uint64_t));
  auto* const m = d->as<std::uint64_t>();
  LeasedBuffer d_pix(all.size() * sizeof(std::uint32_t)), d_w(2 * all.size() * sizeof(std::uint32_t));
  upload_in_decode_order(*this, all, w, d_pix, d_w);
  QGPU_CUDA(cudaMemcpyAsync(m, s_->d_totals->data(), l.frames * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice,
                            nullptr));
  encoded::cuda::masked_sums(l, device_tiles(), d_pix.as<std::uint32_t>(), d_w.as<std::uint32_t>(), all.size(), 2,
                             m + l.frames, nullptr);  // waits, raises on a malformed stream
  s_->d_moments = std::move(d);
  s_->moments_source = "decode";
}

void EncodedResident::moment_sums_device(const std::uint8_t* mask, std::uint64_t* d_out, int* d_error,
                                         CUstream_st* stream, std::string* used) const {
  require_complete("moment sums");
  if (s_->backend != Backend::cuda) throw Error("encoded moment sums on the device: the resident is in host memory");
  const encoded::Layout& l = s_->layout;
  const std::size_t n3 = 3 * l.frames;
  PixelSplit split;
  if (mask) split = split_by_cost(mask, true);
  // S, Sr, Sc over the listed pixels' streams into d_out
  const auto decode = [&](const std::vector<std::uint32_t>& pixels) {
    const auto w = row_col_weights(pixels, s_->shape.det_cols, true);
    LeasedBuffer d_pix(pixels.size() * sizeof(std::uint32_t)), d_w(3 * pixels.size() * sizeof(std::uint32_t));
    upload_in_decode_order(*this, pixels, w, d_pix, d_w, true);
    encoded::cuda::masked_sums_async(l, device_tiles(), d_pix.as<std::uint32_t>(), d_w.as<std::uint32_t>(),
                                     pixels.size(), 3, d_out, d_error, stream);
  };
  if (mask && !split.rest_cheaper()) {
    decode(split.pixels());
    if (used) *used = "masked sums";
    return;
  }
  prepare_moments();
  const std::uint64_t* const m = s_->d_moments->as<std::uint64_t>();
  if (!mask) {
    QGPU_CUDA(cudaMemcpyAsync(d_out, m, n3 * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, stream));
    if (used) *used = "totals";
    return;
  }
  decode(split.pixels());
  encoded::cuda::totals_minus(m, n3, d_out, stream);
  if (used) *used = "totals minus complement";
}

std::vector<std::vector<std::uint64_t>> EncodedResident::moment_sums(const std::uint8_t* mask,
                                                                     std::string* used) const {
  require_complete("moment sums");
  const encoded::Layout& l = s_->layout;
  std::vector<std::vector<std::uint64_t>> out(3);
  if (s_->backend == Backend::cuda) {
    LeasedBuffer d_out(3 * l.frames * sizeof(std::uint64_t)), d_err(sizeof(int));
    QGPU_CUDA(cudaMemsetAsync(d_err.data(), 0, sizeof(int), nullptr));
    moment_sums_device(mask, d_out.as<std::uint64_t>(), d_err.as<int>(), nullptr, used);
    int err = 0;
    QGPU_CUDA(cudaMemcpyAsync(&err, d_err.data(), sizeof(int), cudaMemcpyDeviceToHost, nullptr));
    QGPU_CUDA(cudaStreamSynchronize(nullptr));
    if (err) throw FormatError("encoded resident: a malformed stream in moment sums");
    for (std::size_t k = 0; k < 3; ++k) {
      out[k].resize(l.frames);
      d_out.buffer().download(out[k].data(), l.frames * sizeof(std::uint64_t), k * l.frames * sizeof(std::uint64_t));
    }
    return out;
  }
  PixelSplit split;
  if (mask) split = split_by_cost(mask, true);
  const std::vector<std::uint32_t>& listed = split.pixels();
  if (mask && !split.rest_cheaper()) {
    if (used) *used = "masked sums";
    return encoded::cpu::masked_sums(l, s_->refs, listed, row_col_weights(listed, s_->shape.det_cols, true));
  }
  prepare_moments();
  const std::vector<std::uint64_t>& m = s_->host_moments;
  for (std::size_t k = 0; k < 3; ++k)
    out[k].assign(m.begin() + std::ptrdiff_t(k * l.frames), m.begin() + std::ptrdiff_t((k + 1) * l.frames));
  if (!mask) {
    if (used) *used = "totals";
    return out;
  }
  const auto sub =
      encoded::cpu::masked_sums(l, s_->refs, listed, row_col_weights(listed, s_->shape.det_cols, true));
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t f = 0; f < l.frames; ++f) out[k][f] -= sub[k][f];
  if (used) *used = "totals minus complement";
  return out;
}

std::vector<std::uint64_t> EncodedResident::frame_totals() const {
  require_complete("frame totals");
  if (s_->backend == Backend::cpu) return s_->host_totals;
  std::vector<std::uint64_t> out = fresh_vector<std::uint64_t>(s_->layout.frames);
  s_->d_totals->download(out.data(), out.size() * sizeof(std::uint64_t));
  return out;
}

const std::vector<std::uint64_t>& EncodedResident::sum_pattern() const {
  require_complete("sum pattern");
  return s_->host_sum_pattern;  // cuda: copied from the device when the last frame was appended
}

HostArray4D EncodedResident::read(const Region& scan_region, const Region& detector_region) const {
  const Shape4D& sh = s_->shape;
  const Region sr = resolve_region(scan_region, sh.scan_rows, sh.scan_cols, "scan region");
  const Region dr = resolve_region(detector_region, sh.det_rows, sh.det_cols, "detector region");
  HostArray4D out;
  out.shape = {sr.rows, sr.cols, dr.rows, dr.cols};
  out.dtype = dtype();
  out.bytes.resize(out.shape.elements() * dtype_size(dtype()));
  read_into(sr, dr, out.bytes.data(), out.bytes.size());
  return out;
}

void EncodedResident::read_into(const Region& scan_region, const Region& detector_region, void* dst,
                                std::size_t bytes) const {
  require_complete("read");
  const Shape4D& sh = s_->shape;
  const Region sr = resolve_region(scan_region, sh.scan_rows, sh.scan_cols, "scan region");
  const Region dr = resolve_region(detector_region, sh.det_rows, sh.det_cols, "detector region");
  if (bytes != Shape4D{sr.rows, sr.cols, dr.rows, dr.cols}.elements() * dtype_size(dtype()))
    throw InvalidArgument("read_into: the destination's size does not match the region");
  if (bytes == 0) return;
  const encoded::cpu::RegionRequest req{sh.scan_cols, sr.row0, sr.col0, sr.rows, sr.cols,
                                        sh.det_cols,  dr.row0, dr.col0, dr.rows, dr.cols};
  if (s_->backend == Backend::cpu) {
    const std::vector<std::uint8_t> decoded = encoded::cpu::decode_region(s_->layout, s_->refs, req);
    std::memcpy(dst, decoded.data(), bytes);
  } else {  // decoded on the GPU (into a pooled buffer: a repeated read of the same size allocates nothing), then
            // straight into dst through pinned buffers on several threads
    LeasedBuffer d_out(bytes);
    encoded::cuda::decode_region(s_->layout, device_tiles(), req, d_out.data());
    d_out.buffer().download(dst, bytes);
  }
}

std::vector<std::uint8_t> EncodedResident::pixels(const std::vector<std::uint32_t>& pixel_offsets) const {
  require_complete("pixels");
  const encoded::Layout& l = s_->layout;
  if (s_->backend == Backend::cpu) return encoded::cpu::decode_pixels(l, s_->refs, pixel_offsets);
  for (std::uint32_t p : pixel_offsets)
    if (p >= l.frame_pixels) throw RegionError("pixel " + std::to_string(p) + " is outside the frame");
  std::vector<std::uint8_t> out(pixel_offsets.size() * l.frames * dtype_size(l.dtype));
  if (out.empty()) return out;
  DeviceBuffer d_px(pixel_offsets.size() * sizeof(std::uint32_t)), d_out(out.size());
  d_px.upload(pixel_offsets.data(), d_px.bytes());
  encoded::cuda::decode_pixels(l, device_tiles(), d_px.as<std::uint32_t>(), pixel_offsets.size(), d_out.data());
  d_out.download(out.data(), out.size());
  return out;
}

std::vector<std::uint8_t> EncodedResident::frame(std::size_t index) const {
  require_complete("frame");
  if (s_->backend == Backend::cpu) return encoded::cpu::decode_frame(s_->layout, s_->refs, index);
  if (index >= s_->layout.frames)
    throw RegionError("frame " + std::to_string(index) + " is outside the " + std::to_string(s_->layout.frames) +
                      " scan positions");
  std::vector<std::uint8_t> out(s_->layout.frame_pixels * dtype_size(dtype()));
  DeviceBuffer d_out(out.size());
  encoded::cuda::decode_frame(s_->layout, device_tiles(), index, d_out.data());
  d_out.download(out.data(), out.size());
  return out;
}

EncodedResident EncodedResident::to_host() const {
  require_complete("copy to the host");
  if (s_->backend == Backend::cpu) return *this;
  EncodedResident out(s_->shape, dtype(), Backend::cpu, s_->layout.tile);
  Storage& o = *out.s_;
  for (std::size_t t = 0; t < s_->refs.size(); ++t) {
    o.host_tiles.push_back(tile_bytes(t));
    o.refs.push_back(o.host_tiles.back().ref());
  }
  o.host_totals = frame_totals();
  o.host_sum_pattern = sum_pattern();
  o.density_rank = s_->density_rank;
  o.decode_sequence = s_->decode_sequence;
  o.decode_cost = s_->decode_cost;
  o.appended = s_->appended;
  return out;
}

EncodedResident EncodedResident::to_device() const {
  require_complete("copy to the GPU");
  if (s_->backend == Backend::cuda) return *this;
  EncodedResident out(s_->shape, dtype(), Backend::cuda, s_->layout.tile);
  Storage& o = *out.s_;
  o.d_pending.reset();
  const std::size_t P = s_->layout.frame_pixels, ntiles = s_->host_tiles.size();
  std::size_t total = 0;
  for (const auto& t : s_->host_tiles) total += t.payload.size();
  encoded::cuda::DeviceTiles g;
  g.payload = std::make_shared<DeviceBuffer>(total + encoded::kPayloadPad);
  g.dir = o.d_dirs;  // ntiles x (P + 1) uint32, allocated by the constructor
  std::size_t base = 0;
  for (std::size_t k = 0; k < ntiles; ++k) {
    const auto& t = s_->host_tiles[k];
    if (!t.payload.empty()) g.payload->upload(t.payload.data(), t.payload.size(), base);
    g.dir->upload(t.dir.data(), (P + 1) * sizeof(std::uint32_t), k * (P + 1) * sizeof(std::uint32_t));
    g.refs.push_back({g.payload->as<std::uint8_t>() + base, g.dir->as<std::uint32_t>() + k * (P + 1), t.len, 0});
    base += t.payload.size();
  }
  o.refs = g.refs;
  o.groups.push_back(std::move(g));
  o.d_totals->upload(s_->host_totals.data(), o.d_totals->bytes());
  o.d_sum_pattern->upload(s_->host_sum_pattern.data(), o.d_sum_pattern->bytes());
  o.host_sum_pattern = s_->host_sum_pattern;
  o.density_rank = s_->density_rank;
  o.decode_sequence = s_->decode_sequence;
  o.decode_cost = s_->decode_cost;
  o.d_refs = pooled_buffer(o.refs.size() * sizeof(encoded::TileRef));
  o.d_refs->upload(o.refs.data(), o.d_refs->bytes());
  o.appended = s_->appended;
  return out;
}

encoded::cpu::HostTile EncodedResident::tile_bytes(std::size_t t) const {
  if (t >= s_->refs.size()) throw InvalidArgument("tile " + std::to_string(t) + " is not encoded yet");
  const encoded::TileRef& r = s_->refs[t];
  const std::size_t P = s_->layout.frame_pixels;
  encoded::cpu::HostTile out;
  out.len = r.len;
  out.dir.resize(P + 1);
  if (s_->backend == Backend::cpu) {
    std::copy(r.dir, r.dir + P + 1, out.dir.begin());
    out.payload.assign(r.payload, r.payload + out.dir[P]);
  } else {
    QGPU_CUDA(cudaMemcpy(out.dir.data(), r.dir, (P + 1) * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    out.payload.resize(out.dir[P]);
    if (!out.payload.empty())
      QGPU_CUDA(cudaMemcpy(out.payload.data(), r.payload, out.payload.size(), cudaMemcpyDeviceToHost));
  }
  return out;
}

}  // namespace qgpu
