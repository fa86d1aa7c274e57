#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <utility>
#include <tuple>
#include <memory>
#include <mutex>
#include <vector>

#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "device/cuda/pinned_pool.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/cuda/apply_pixel_mask.hpp"
#include "io/hdf5/cuda/bin_frames.hpp"
#include "io/hdf5/cuda/bitshuffle_lz4_decode.hpp"
#include "io/hdf5/cuda/encode_worker.hpp"
#include "io/hdf5/cuda/kept_batch_buffers.hpp"
#include "io/hdf5/cuda/load_cuda.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/merlin/cuda/decode_mib.hpp"
#include "io/source/cuda/decode_plain.hpp"
#include "io/source/nonfinite.hpp"

namespace qgpu::io {

namespace {

// A batch goes to the device in copies of this many bytes as it is read (QGPU_LOAD_COPY_STEP=N; 0: one copy after
// the whole read).
std::uint64_t copy_step() {
  if (const char* v = std::getenv("QGPU_LOAD_COPY_STEP"); v && *v) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end == '\0') return n;
  }
  return std::uint64_t(8) << 20;
}
constexpr int kSlots = 3;                                     // batches in flight: read, copy+decode, spare
constexpr std::size_t kAsyncAllocFrom = std::size_t(1) << 30;  // residents from 1 GiB allocate beside batch 0

// QGPU_LOAD_ASYNC_ALLOC: 0 off, 1 on at every size (the tests), unset: on from kAsyncAllocFrom.
bool async_alloc_for(std::size_t bytes) {
  const char* v = std::getenv("QGPU_LOAD_ASYNC_ALLOC");
  if (v && std::strcmp(v, "0") == 0) return false;
  if (v && std::strcmp(v, "1") == 0) return true;
  return bytes >= kAsyncAllocFrom;
}

// One batch in flight: pinned host buffers, device buffers and the events that time and fence it.
struct Slot {
  Pinned data, table;
  DeviceBuffer dev_data, dev_table;  // kept between loads with the batch buffers (kept_batch_buffers.hpp)
  cudaEvent_t start = nullptr, copied = nullptr, decoding = nullptr, done = nullptr;
  bool busy = false;
  Slot(std::size_t data_bytes, std::size_t table_bytes)
      : data(data_bytes),
        table(table_bytes),
        dev_data(cuda::take_batch_buffer(data_bytes)),
        dev_table(cuda::take_batch_buffer(table_bytes)) {
    QGPU_CUDA(cudaEventCreate(&start));
    QGPU_CUDA(cudaEventCreate(&copied));
    QGPU_CUDA(cudaEventCreate(&decoding));
    QGPU_CUDA(cudaEventCreateWithFlags(&done, cudaEventBlockingSync));  // retire sleeps (sleep_until_done)
  }
  ~Slot() {
    if (busy) cudaEventSynchronize(done);
    cudaEventDestroy(start);
    cudaEventDestroy(copied);
    cudaEventDestroy(decoding);
    cudaEventDestroy(done);
  }
  // Waits until the slot's batch is finished and adds its GPU stage times.
  void retire(LoadTiming& t) {
    if (!busy) return;
    QGPU_CUDA(cudaEventSynchronize(done));
    float copy_ms = 0, decode_ms = 0;
    QGPU_CUDA(cudaEventElapsedTime(&copy_ms, start, copied));
    QGPU_CUDA(cudaEventElapsedTime(&decode_ms, decoding, done));
    t.copy += copy_ms / 1e3;
    t.decode += decode_ms / 1e3;
    busy = false;
  }
};

// The storage of a dataset in words, e.g. "bitshuffle+zstd (cd_values[4]=3)" or "filters deflate(1), shuffle(2)".
std::string storage_name(const FileInfo& fi) {
  if (fi.filters.empty()) return "no compression filter";
  if (fi.filters.size() == 1 && fi.filters[0].id == h5::kBitshuffleFilter) {
    const auto& cd = fi.filters[0].cd_values;
    const unsigned comp = cd.size() > 4 ? cd[4] : 0;
    const std::string kind = comp == 3 ? "zstd" : comp == 2 ? "LZ4" : comp == 0 ? "no compression" : "unknown";
    return "bitshuffle+" + kind + " (cd_values[4]=" + std::to_string(comp) + ")";
  }
  std::string s = "filters";
  for (std::size_t i = 0; i < fi.filters.size(); ++i)
    s += (i ? ", " : " ") + (fi.filters[i].name.empty() ? std::string("filter") : fi.filters[i].name) + "(" +
         std::to_string(fi.filters[i].id) + ")";
  return s;
}

bool live_groups_enabled() {
  const char* v = std::getenv("QGPU_LIVE_GROUPS");
  return !(v && std::strcmp(v, "0") == 0);
}

struct Stream {
  cudaStream_t s = nullptr;
  explicit Stream(int priority = 0) { QGPU_CUDA(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority)); }
  ~Stream() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
};

// QGPU_LOAD_TIMELINE=1: the load prints to stderr, per batch, when the host read it and waited for an encoder
// buffer, and when the GPU copied, decoded and (encoded loads) encoded it (CUDA events relative to an event recorded
// on the decode stream when the first batch is read, and host times relative to that moment): where the GPU idles
// and where the decode and encoder streams serialise.
struct Timeline {
  struct Batch {
    cudaEvent_t copy0 = nullptr, copy1 = nullptr, decode0 = nullptr, decode1 = nullptr;
    double read0 = 0, read1 = 0, free0 = 0, free1 = 0, queued = 0;
    std::size_t frames = 0;
  };
  bool on = false;
  double host0 = 0;
  cudaEvent_t t0 = nullptr;
  std::vector<Batch> b;

  Timeline(std::size_t batches, cudaStream_t s) {
    const char* v = std::getenv("QGPU_LOAD_TIMELINE");
    on = v && *v && std::strcmp(v, "0") != 0;
    if (!on) return;
    b.resize(batches);
    for (auto& x : b)
      for (cudaEvent_t* e : {&x.copy0, &x.copy1, &x.decode0, &x.decode1}) QGPU_CUDA(cudaEventCreate(e));
    QGPU_CUDA(cudaEventCreate(&t0));
    QGPU_CUDA(cudaEventRecord(t0, s));
    host0 = now_s();
  }
  ~Timeline() {
    for (auto& x : b)
      for (cudaEvent_t e : {x.copy0, x.copy1, x.decode0, x.decode1}) cudaEventDestroy(e);
    if (t0) cudaEventDestroy(t0);
  }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  float at(cudaEvent_t e) const {  // ms after t0; -1 when not recorded
    float ms = -1;
    return cudaEventElapsedTime(&ms, t0, e) == cudaSuccess ? ms : -1.f;
  }
  double host(double t) const { return (t - host0) * 1e3; }
  // Once every batch is done (the load waited for its streams).
  void print(const std::vector<detail::EncodeTrace>* enc, const LoadTiming& t) const {
    if (!on) return;
    std::fprintf(stderr, "load timeline (ms; index %.1f and setup %.1f before 0; host: read, wait for an encoder "
                 "buffer, queued; GPU: copy, decode%s)\n", t.index * 1e3, t.setup * 1e3,
                 enc ? ", encode (host: encoder thread)" : "");
    double gpu_decode = 0, gpu_encode = 0, last_end = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      const Batch& x = b[i];
      const float c0 = at(x.copy0), c1 = at(x.copy1), d0 = at(x.decode0), d1 = at(x.decode1);
      gpu_decode += d1 - d0;
      last_end = std::max<double>(last_end, d1);
      char e[400] = "";
      if (enc && i < enc->size()) {
        const auto& tr = (*enc)[i];
        const float e0 = at(tr.start), e1 = at(tr.end);
        gpu_encode += e1 - e0;
        last_end = std::max<double>(last_end, e1);
        const auto& a = tr.after;
        const auto& z = tr.before;
        std::snprintf(e, sizeof e, " | encode GPU %7.2f..%7.2f (%5.2f) host %7.2f..%7.2f [kernel %.2f, offsets %.2f, "
                      "compact %.2f; host waits %.2f, allocations %.2f, group order %.2f, finish %.2f]", e0, e1,
                      e1 - e0, host(tr.host_start), host(tr.host_end), a.kernel - z.kernel, a.offsets - z.offsets,
                      a.compact - z.compact, a.host_wait - z.host_wait, a.alloc - z.alloc, a.order - z.order,
                      a.finish - z.finish);
      }
      char w[64] = "";
      if (enc) std::snprintf(w, sizeof w, " wait %7.2f..%7.2f", host(x.free0), host(x.free1));
      std::fprintf(stderr, "  batch %2zu (%6zu frames): read %7.2f..%7.2f%s queued %7.2f | copy %7.2f..%7.2f decode "
                   "%7.2f..%7.2f (%5.2f)%s\n", i, x.frames, host(x.read0), host(x.read1), w, host(x.queued), c0, c1,
                   d0, d1, d1 - d0, e);
    }
    std::fprintf(stderr, "  GPU spans: decode %.2f ms, encode %.2f ms (sum of the batch spans; they overlap), last "
                 "GPU work ends at %.2f ms\n", gpu_decode, gpu_encode, last_end);
  }
};

}  // namespace

Dataset load_cuda(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  const std::string where = dataset_where(fi);
  // The record codec's GPU decoder (io/source/frame_codec.hpp): bitshuffle+LZ4 chunks, plain records.
  const bool bitshuffle = fi.codec.kind == FrameCodecKind::bitshuffle;
  if (bitshuffle && !fi.bitshuffle_lz4)
    throw FormatError("GPU decode handles bitshuffle+LZ4 (HDF5 filter 32008) chunks; " + where + " uses " +
                      storage_name(fi) + ", which the host decodes: load it with backend='cpu'");
  require_plain_bits(fi, "the GPU decoder");
  const std::size_t es = dtype_size(fi.stored_dtype());  // stored element size (float64 decodes to float32)
  if (bitshuffle) {
    bitshuffle_params(fi);
    require_decoded_elements(fi);
  }  // damaged cd_values are refused as on the cpu paths
  // Big-endian elements are swapped to the host's order inside the decode kernels (bitshuffle_lz4_decode.hpp,
  // io/source/cuda/decode_plain.hpp).
  const bool swap = fi.swap_bytes();
  cuda::DecodeGeometry geo{es, fi.shape.frame_pixels(), bitshuffle ? fi.bitshuffle_block_elems : 0, swap};
  if (bitshuffle && (geo.block_elems % 8 || geo.block_elems * es > 16384))
    throw FormatError(where + " uses bitshuffle block size " + std::to_string(geo.block_elems) +
                      " elements; the GPU decoder handles multiples of 8 up to 16 KiB per block");

  LoadTiming timing;
  // A dense resident is allocated on a thread of its own, started before anything else of the load (cudaMalloc of
  // the sample's 19.3 GB took 6-9 ms on the H200, s14b, and 5.8-8.9 ms on an H100 right after the previous dataset's
  // release, s21e) while the chunks are located, the batches planned and batch 0 read, copied and decoded: a direct
  // load decodes batch 0 into the staging buffer and copies it over once the resident exists
  // (QGPU_LOAD_ASYNC_ALLOC=0: allocated first, for comparison; 1: also below 1 GiB).
  // A reload of the same size takes the previous dataset's memory, kept at its release (resident_buffer).
  const bool encoded = p.representation == "encoded";  // (ReadPlan::encoded)
  const std::size_t out_bytes = p.out_shape.nbytes(dtype_size(p.out_dtype));
  // dense: the resident output; encoded: one batch of output rows (none for passthrough)
  std::shared_ptr<DeviceBuffer> result = encoded ? nullptr : take_kept_resident(out_bytes);
  if (!encoded && !result) cuda::make_room(out_bytes);  // kept batch buffers go when the resident needs their room
  const bool async_alloc = !encoded && !result && out_bytes > 0 && async_alloc_for(out_bytes);
  std::future<std::shared_ptr<DeviceBuffer>> allocating;
  int device = 0;  // the load's device, made current on the threads that work for it
  QGPU_CUDA(cudaGetDevice(&device));
  if (async_alloc) {
    allocating = std::async(std::launch::async, [device, out_bytes] {
      QGPU_CUDA(cudaSetDevice(device));
      return resident_buffer(out_bytes);
    });
  }
  const ReadPlan rp = plan_reads(p, true, timing);
  const double batch_plan = now_s() - rp.t_start - timing.index_locate;  // the batches and the reader (timeline)
  const ChunkSources& src = rp.src;

  const double t_setup = now_s();
  auto enc = rp.encoded ? std::make_shared<EncodedResident>(p.out_shape, p.out_dtype, Backend::cuda) : nullptr;
  if (enc) enc->request_radial_basis(p.radial_basis);
  if (enc) enc->request_scan_binned(p.scan_binned);
  if (!async_alloc && !result)
    result = !rp.encoded ? resident_buffer(out_bytes)
                         : std::make_shared<DeviceBuffer>(rp.passthrough ? 0 : rp.max_out_rows * rp.out_row_bytes);
  double t_allocated = 0;
  const auto resident = [&]() -> DeviceBuffer& {  // the result, waiting for its allocation the first time
    if (!result) {
      const double t0 = now_s();
      result = allocating.get();
      t_allocated = now_s();
      timing.setup += t_allocated - t0;
    }
    return *result;
  };
  // The batch buffers come from (and go back to) the ones kept between loads (kept_batch_buffers.hpp).
  // (a direct load needs one only for batch 0 while the resident is allocated: that batch's frames)
  const std::size_t staging_chunks = !rp.direct ? rp.max_chunks : async_alloc && !rp.batches.empty() ? rp.batches[0].chunks : 0;
  DeviceBuffer staging = cuda::take_batch_buffer(staging_chunks * fi.frame_bytes());
  // encoded: the encoder reads batch b from buffer b % 2 (binned rows in result/result2, or the decoded frames in
  // staging/staging2 for passthrough) while batch b + 1 is read and decoded into the other one.
  DeviceBuffer result2 = cuda::take_batch_buffer(rp.encoded && !rp.passthrough ? result->bytes() : 0);
  DeviceBuffer staging2 = cuda::take_batch_buffer(rp.encoded && rp.passthrough ? staging.bytes() : 0);
  void* const enc_in[2] = {!rp.encoded ? nullptr : rp.passthrough ? staging.data() : result->data(),
                           rp.passthrough ? staging2.data() : result2.data()};
  // encoded passthrough: the decoder marks which groups of 32 pixels of each tile hold a nonzero count
  // (encoded::LiveGroups; the encoder reads only those), one bitmap per encoder input buffer. QGPU_LIVE_GROUPS=0:
  // no marks (every group is read; for comparison).
  const bool marks = bitshuffle && rp.encoded && rp.passthrough &&
                     encoded::LiveGroups::applies(fi.shape.frame_pixels()) && live_groups_enabled();
  const std::uint32_t tile = enc ? enc->layout().tile : 0;
  const std::size_t live_bytes =
      marks ? encoded::LiveGroups::words_for(fi.shape.frame_pixels(), rp.max_chunks, tile) * sizeof(std::uint32_t) : 0;
  // The load's smaller device buffers come from the device pool (buffer_pool.hpp) and go back to it, the batch
  // slots' to the kept buffers: a cudaFree at the end of a load waited for the driver's release of a large buffer
  // freed before it (a dropped dense dataset), milliseconds of an encoded load that followed one
  // (docs/history/benchmarks-2026-12.md).
  std::unique_ptr<LeasedBuffer> live_bits[2] = {std::make_unique<LeasedBuffer>(live_bytes),
                                                std::make_unique<LeasedBuffer>(live_bytes)};
  // with the marks, each frame's total (LiveGroups::totals): summed by the decoder, not by the encoder's lanes
  const std::size_t totals_bytes = marks ? rp.max_chunks * sizeof(std::uint64_t) : 0;
  std::unique_ptr<LeasedBuffer> live_totals[2] = {std::make_unique<LeasedBuffer>(totals_bytes),
                                                  std::make_unique<LeasedBuffer>(totals_bytes)};
  const std::size_t mb = bitshuffle ? geo.max_blocks() : 0;
  auto block_src = std::make_unique<LeasedBuffer>(rp.max_chunks * mb * sizeof(std::uint64_t));
  auto block_len = std::make_unique<LeasedBuffer>(rp.max_chunks * mb * sizeof(std::uint32_t));
  LeasedBuffer flags_lease(sizeof(unsigned long long) + sizeof(int));
  DeviceBuffer& flags = flags_lease.buffer();
  const unsigned long long no_error = ~0ull;
  const int no_overflow = 0;
  flags.upload(&no_error, sizeof(no_error));
  flags.upload(&no_overflow, sizeof(no_overflow), sizeof(no_error));
  auto bad_pixels =
      std::make_unique<LeasedBuffer>(p.zero_bad_pixels ? p.bad_pixels.size() * sizeof(std::uint32_t) : 0);
  if (p.zero_bad_pixels) bad_pixels->buffer().upload(p.bad_pixels.data(), bad_pixels->bytes());
  auto* d_error = flags.as<unsigned long long>();
  int* d_overflow = reinterpret_cast<int*>(flags.as<char>() + sizeof(unsigned long long));

  const double t_buffers = now_s();  // (the timeline's split of the setup)
  const std::size_t table_bytes = 3 * rp.max_chunks * sizeof(std::uint64_t);
  const int n_slots = int(std::min<std::size_t>(kSlots, rp.batches.size()));
  std::vector<std::unique_ptr<Slot>> slots;
  for (int s = 0; s < n_slots; ++s) slots.push_back(std::make_unique<Slot>(rp.max_buffer, table_bytes));
  // Batch 0 is read on a thread of its own while the rest of the setup runs (declared after the slots: destroyed,
  // i.e. waited for, before them).
  double first_read0 = 0, first_read1 = 0;
  std::future<void> first_read;
  if (!rp.batches.empty())
    first_read = std::async(std::launch::async, [&] {
      first_read0 = now_s();
      rp.reader->read(rp.batches[0], slots[0]->data.as<std::uint8_t>());
      first_read1 = now_s();
    });
  const double t_slots = now_s();
  Stream copies, stream(rp.encoded ? detail::decode_priority() : 0);  // batch b + 1 copies while batch b decodes
  Timeline tl(rp.batches.size(), stream.s);
  // Declared after every buffer it reads: destroyed (joined) first.
  std::unique_ptr<detail::EncodeWorker> worker =
      rp.encoded ? std::make_unique<detail::EncodeWorker>(enc, tl.on ? rp.batches.size() : 0) : nullptr;
  timing.setup = now_s() - t_setup;
  if (tl.on)
    std::fprintf(stderr, "  host: before 0: locate %.2f ms, batches planned and reader opened %.2f ms (%zu batches), "
                 "setup %.2f ms (buffers and allocation %.2f, slots %.2f, streams and the rest %.2f)\n",
                 timing.index_locate * 1e3, batch_plan * 1e3, rp.batches.size(), timing.setup * 1e3,
                 (t_buffers - t_setup) * 1e3, (t_slots - t_buffers) * 1e3, (now_s() - t_slots) * 1e3);

  if (progress) progress(0.0);  // the bar shows from the start, so a later message starts a new line
  const std::uint64_t step = copy_step();
  for (std::size_t b = 0; b < rp.batches.size(); ++b) {
    const ReadBatch& batch = rp.batches[b];
    Slot& slot = *slots[b % n_slots];
    slot.retire(timing);  // batch b - n_slots finished with this slot
    const int eb = static_cast<int>(b % 2);  // encoded: this batch's encoder input buffer
    double t_read0 = now_s();
    Timeline::Batch* tb = tl.on ? &tl.b[b] : nullptr;
    bool copying = false;  // the batch's bytes are on their way to the device as they are read
    if (b == 0) {  // read beside the setup
      first_read.get();
      t_read0 = first_read0;
      timing.read += first_read1 - first_read0;
    } else if (step == 0) {
      rp.reader->read(batch, slot.data.as<std::uint8_t>());
      timing.read += now_s() - t_read0;
    } else {
      // Each `step` bytes of the batch read goes to the device while the rest is read (one copy after the whole read
      // held the decode back by the copy's time, 1.5 ms for a 64 MiB batch: the encoded load's second batch).
      const std::uint8_t* host = slot.data.as<std::uint8_t>();
      std::uint8_t* dev_data = slot.dev_data.as<std::uint8_t>();
      rp.reader->read(batch, slot.data.as<std::uint8_t>(), step, [&](std::uint64_t from, std::uint64_t to) {
        QGPU_CUDA(cudaSetDevice(device));  // on a reading thread
        if (!copying) {
          if (tb) QGPU_CUDA(cudaEventRecord(tb->copy0, copies.s));
          QGPU_CUDA(cudaEventRecord(slot.start, copies.s));
          copying = true;
        }
        QGPU_CUDA(cudaMemcpyAsync(dev_data + from, host + from, to - from, cudaMemcpyHostToDevice, copies.s));
      });
      timing.read += now_s() - t_read0;
    }
    if (tb) {
      tb->read0 = t_read0;
      tb->read1 = now_s();
      tb->frames = batch.out_rows * p.out_shape.scan_cols;
      if (!copying) QGPU_CUDA(cudaEventRecord(tb->copy0, copies.s));
    }
    // batch 0 of a direct load while the resident is being allocated: decoded into the staging buffer (frame i of
    // the batch at i), then copied into the resident
    const bool early = rp.direct && !result;
    std::uint64_t* tab = slot.table.as<std::uint64_t>();
    for (std::size_t i = 0; i < batch.chunks; ++i) {
      tab[i] = batch.chunk_dst[i];
      tab[rp.max_chunks + i] = src.chunks[batch.first_chunk + i].size;
      tab[2 * rp.max_chunks + i] = rp.direct && !early ? batch.first_chunk + i : i;
    }
    if (!copying) {
      QGPU_CUDA(cudaEventRecord(slot.start, copies.s));
      QGPU_CUDA(cudaMemcpyAsync(slot.dev_data.data(), slot.data.p, batch.buffer_bytes, cudaMemcpyHostToDevice, copies.s));
    }
    QGPU_CUDA(cudaMemcpyAsync(slot.dev_table.data(), slot.table.p, table_bytes, cudaMemcpyHostToDevice, copies.s));
    QGPU_CUDA(cudaEventRecord(slot.copied, copies.s));
    if (tb) QGPU_CUDA(cudaEventRecord(tb->copy1, copies.s));
    QGPU_CUDA(cudaStreamWaitEvent(stream.s, slot.copied, 0));
    QGPU_CUDA(cudaEventRecord(slot.decoding, stream.s));
    const auto* dtab = slot.dev_table.as<std::uint64_t>();
    cuda::DecodeBatch db{slot.dev_data.as<std::uint8_t>(), dtab, dtab + rp.max_chunks, dtab + 2 * rp.max_chunks,
                         batch.chunks, batch.first_chunk};
    cuda::DecodeScratch scratch{block_src->as<std::uint64_t>(), block_len->as<std::uint32_t>(), rp.max_chunks * mb};
    void* const stage = rp.encoded && rp.passthrough ? enc_in[eb] : staging.data();
    if (rp.encoded) {  // the decode (passthrough) or the binning below writes buffer eb: batch b - 2 must be encoded
      const double t_wait0 = now_s();
      worker->wait_free(eb);
      timing.wait += now_s() - t_wait0;
      if (tb) {
        tb->free0 = t_wait0;
        tb->free1 = now_s();
      }
    }
    if (tb) QGPU_CUDA(cudaEventRecord(tb->decode0, stream.s));
    char* const direct_to = rp.direct && !early ? resident().as<char>() : nullptr;
    void* const decode_to = rp.direct && !early ? static_cast<void*>(direct_to) : stage;
    void* frames = direct_to ? direct_to + batch.first_chunk * fi.frame_bytes() : stage;
    encoded::LiveGroups live;
    if (marks) {  // buffer eb's bitmap is free with it (wait_free above)
      live = {live_bits[eb]->as<std::uint32_t>(), tile, encoded::LiveGroups::words_for(fi.shape.frame_pixels(), tile),
              live_totals[eb]->as<unsigned long long>()};
      QGPU_CUDA(cudaMemsetAsync(live.bits, 0, live_bytes, stream.s));
      if (live.totals) QGPU_CUDA(cudaMemsetAsync(live.totals, 0, batch.chunks * sizeof(std::uint64_t), stream.s));
    }
    if (bitshuffle) {
      cuda::decode_bitshuffle_lz4(db, geo, decode_to, scratch, d_error, stream.s, cuda::kDefaultDecodeVariant, live);
    } else if (fi.codec.kind == FrameCodecKind::plain) {
      cuda::decode_plain(db, es, fi.shape.frame_pixels(), swap, decode_to, d_error, stream.s);
    } else {
      merlin::cuda::decode_mib_frames(db, fi.codec.merlin, decode_to, stream.s, d_error);
    }
    if (p.zero_bad_pixels)  // on full stored frames, before crop and binning
      cuda::apply_pixel_mask(frames, fi.dtype, batch.chunks, fi.shape.frame_pixels(),
                             bad_pixels->as<std::uint32_t>(), p.bad_pixels.size(), stream.s, live.totals);
    if (early)  // the decoded batch 0 into its place in the resident, once that exists
      QGPU_CUDA(cudaMemcpyAsync(resident().as<char>() + batch.first_chunk * fi.frame_bytes(), stage,
                                batch.chunks * fi.frame_bytes(), cudaMemcpyDeviceToDevice, stream.s));
    if (!rp.direct && !rp.passthrough) {
      cuda::BinGeometry bg{p.scan.cols,          fi.shape.det_rows,     fi.shape.det_cols,    p.detector.row0,
                           p.detector.col0,      batch.out_rows,        p.out_shape.scan_cols, p.out_shape.det_rows,
                           p.out_shape.det_cols, p.bin_scan,            p.bin_detector};
      const std::size_t out_off = rp.encoded ? 0 : batch.out_row0 * rp.out_row_bytes;
      char* const out = rp.encoded ? static_cast<char*>(enc_in[eb]) : resident().as<char>() + out_off;
      cuda::bin_frames(stage, fi.dtype, out, p.out_dtype, bg, d_overflow, stream.s);
    }
    QGPU_CUDA(cudaEventRecord(slot.done, stream.s));
    if (tb) QGPU_CUDA(cudaEventRecord(tb->decode1, stream.s));
    slot.busy = true;
    if (rp.encoded) {  // encoded on the worker's thread and stream once this batch is in buffer eb
      QGPU_CUDA(cudaEventRecord(worker->ready(eb), stream.s));
      worker->push(eb, enc_in[eb], batch.out_rows * p.out_shape.scan_cols, live.bits, live.totals);
    }
    if (tb) tb->queued = now_s();
    if (progress) progress(double(batch.out_row0 + batch.out_rows) / double(p.out_shape.scan_rows));
  }
  if (!rp.encoded) resident();  // (a load of no batches)
  const double t_queued = now_s();
  for (auto& s : slots) s->retire(timing);
  const double t_retired = now_s();
  if (worker) worker->finish();
  timing.wait += now_s() - t_queued;
  if (tl.on) {
    std::fprintf(stderr, "  host: batches queued at %.2f ms, decoded at %.2f, encoder finished at %.2f\n",
                 tl.host(t_queued), tl.host(t_retired), tl.host(now_s()));
    if (async_alloc)
      std::fprintf(stderr, "  host: the resident's allocation (beside batch 0) was in hand at %.2f ms\n",
                   tl.host(t_allocated));
    QGPU_CUDA(cudaStreamSynchronize(stream.s));
    QGPU_CUDA(cudaStreamSynchronize(copies.s));
    tl.print(worker ? &worker->traces() : nullptr, timing);
  }

  unsigned long long err = 0;
  int overflow = 0;
  flags.download(&err, sizeof(err));
  flags.download(&overflow, sizeof(overflow), sizeof(err));
  if (err != no_error) {
    rp.throw_decode_error(p, err >> 8, fi.codec.kind == FrameCodecKind::merlin
                                           ? merlin::cuda::describe_mib_decode_error(err)
                                           : cuda::describe_decode_error(err));  // chunk ids count chunks in load order
  }
  if (overflow) throw FormatError("binned values of " + where + " overflow " + dtype_name(p.out_dtype));
  {  // the load's own device buffers, timed: the batch buffers are kept for the next load, the others go back to
     // the device pool
    const double t_release = now_s();
    worker.reset();
    const double t_worker = now_s();
    for (auto& s : slots) {  // (retired above: no batch in flight)
      cuda::keep_batch_buffer(std::move(s->dev_data));
      cuda::keep_batch_buffer(std::move(s->dev_table));
    }
    slots.clear();
    const double t_slots = now_s();
    for (DeviceBuffer* b : {&staging, &staging2, &result2}) cuda::keep_batch_buffer(std::move(*b));
    const double t_kept = now_s();
    for (auto* b : {&live_bits[0], &live_bits[1], &live_totals[0], &live_totals[1], &block_src, &block_len, &bad_pixels}) b->reset();
    timing.release = now_s() - t_release;
    if (tl.on)
      std::fprintf(stderr, "  release at %.2f ms, %.2f ms: encoder thread and stream %.2f, batch slots %.2f, kept "
                   "buffers %.2f, pool buffers %.2f\n", tl.host(t_release), timing.release * 1e3, (t_worker - t_release) * 1e3,
                   (t_slots - t_worker) * 1e3, (t_kept - t_slots) * 1e3, (now_s() - t_kept) * 1e3);
  }
  Provenance pv = rp.provenance(p, timing, "cuda", bitshuffle ? "quantem-gpu CUDA bitshuffle+LZ4"
                                                               : "quantem-gpu CUDA " + fi.codec.name() + " frames");
  if (rp.encoded) {
    Dataset d = encoded_dataset(p, std::move(enc), std::move(pv));
    if (tl.on) std::fprintf(stderr, "  host: encoded dataset made at %.2f ms\n", tl.host(now_s()));
    return d;
  }
  nlohmann::json md = load_metadata(p);
  if (is_float_dtype(p.out_dtype))
    note_nonfinite(pv, md, cuda::zero_nonfinite(result->as<float>(), p.out_shape.elements()));
  Dataset d = Dataset::from_device(result, p.out_shape, p.out_dtype, std::move(md), std::move(pv));
  if (tl.on) std::fprintf(stderr, "  host: dataset made at %.2f ms\n", tl.host(now_s()));
  return d;
}

}  // namespace qgpu::io
