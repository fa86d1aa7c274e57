#include "live/acquisition.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>
#include <cmath>
#include <cstring>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "detector/virtual_detector.hpp"
#include "device/device.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/admission.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/file_info.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "io/source/cpu/decode_records_host.hpp"
#include "live/cuda/live_cuda.hpp"
#include "live/protocol/frame_bytes.hpp"

namespace qgpu::live {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxProblemsKept = 50;

template <class T> Image<T> blank(std::size_t rows, std::size_t cols) {
  Image<T> img;
  img.rows = rows;
  img.cols = cols;
  img.data.assign(rows * cols, T{});
  return img;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

nlohmann::json Stats::to_json() const {
  return {{"frames_received", frames_received}, {"frames_decoded", frames_decoded}, {"dropped", dropped},
          {"duplicates", duplicates},           {"out_of_range", out_of_range},     {"corrupt", corrupt},
          {"stale", stale},                     {"problems", problems},             {"bytes_received", bytes_received},
          {"series_started", series_started},   {"series_finished", series_finished}, {"seconds", seconds},
          {"frames_per_second", frames_per_second}, {"latency_ms", latency_ms},   {"max_latency_ms", max_latency_ms},
          {"ring_peak_bytes", ring_peak_bytes}, {"busy_seconds", busy_seconds}};
}

// The worker's state of one series.
struct Acquisition::Series {
  SeriesInfo info;
  Shape4D shape;
  io::FileInfo codec;            // what the host decoders need: dtype, frame shape, codec, bitshuffle parameters
  bool codec_ready = false;      // bitshuffle: block size read from the first frame
  Dataset resident;              // dense, zero-filled: frames land at their scan positions
  std::uint8_t* frames = nullptr;  // its bytes (host memory on cpu, the GPU buffer on cuda)
  std::shared_ptr<DeviceBuffer> device_resident;  // cuda: the resident's buffer
  std::unique_ptr<cuda::BatchDecoder> gpu;        // cuda: the batch decoder (made at the first batch)
  std::unique_ptr<io::DectrisWriter> saver;       // options.save_path: the series' file, open while it runs
  std::string save_file;
  bool save_tried = false;
  std::size_t frame_bytes = 0;
  std::vector<std::uint8_t> received;
  std::map<std::string, detector::Mask> detectors;
  bool default_detectors = true;  // bf/adf set from the first batch's sum pattern
  std::vector<std::pair<std::uint64_t, std::string>> corrupt;  // frame index, reason
  std::uint64_t dropped_at_start = 0;
  std::string scan_shape_source;
  std::vector<std::string> warnings;
};

Acquisition::Acquisition(AcquisitionOptions options) : options_(std::move(options)) {
  if (options_.ring_bytes < 4096) throw InvalidArgument("live ring of " + std::to_string(options_.ring_bytes) +
                                                        " bytes: at least 4096");
  if (options_.batch_frames == 0 || options_.batch_frames > 65535)
    throw InvalidArgument("live batch of " + std::to_string(options_.batch_frames) + " frames: 1..65535");
  if (options_.pixel_mask != "keep" && options_.pixel_mask != "zero")
    throw InvalidArgument("pixel_mask '" + options_.pixel_mask + "': keep or zero");
  const Backend b = resolve(options_.backend);
  if (b == Backend::vulkan) not_implemented_on(b, "live acquisition");
  backend_ = backend_name(b);
  ring_size_ = options_.ring_bytes;
  if (b == Backend::cuda) {
    ring_ = cuda::pinned_bytes(ring_size_);  // batches go to the GPU straight from the ring
  } else {
    ring_ = std::shared_ptr<std::uint8_t>(new std::uint8_t[ring_size_], std::default_delete<std::uint8_t[]>());
  }
  worker_ = std::thread([this] { worker(); });
}

Acquisition::~Acquisition() { close(); }

void Acquisition::close() {
  {
    std::lock_guard lk(ring_mutex_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  ring_cv_.notify_all();
  room_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Acquisition::on_series_end(std::function<void(const FinishedSeries&)> f) {
  std::lock_guard lk(products_mutex_);
  on_series_end_ = std::move(f);
}

void Acquisition::on_series_start(std::function<void(const Dataset&)> f) {
  std::lock_guard lk(products_mutex_);
  on_series_start_ = std::move(f);
}

void Acquisition::set_resident_guard(std::function<void(const std::function<void()>&)> guard) {
  std::lock_guard lk(products_mutex_);
  resident_guard_ = std::move(guard);
}

// ---------------------------------------------------------------------------------------------------------------
// Receiver side

void Acquisition::note_problem(const std::string& what) {
  std::lock_guard lk(products_mutex_);
  ++stats_.problems;
  if (problems_.size() < kMaxProblemsKept) problems_.push_back(what);
}

void Acquisition::problem(const std::string& what) { note_problem(what); }

void Acquisition::series_start(const SeriesInfo& info) {
  bool restart = false;
  std::string open_id;
  {
    std::lock_guard lk(ring_mutex_);
    restart = series_open_;
    open_id = open_series_id_;
  }
  if (restart) series_end(open_id, "restart: series " + info.series_id + " began before its end");
  // The scan shape, decided here so that frames outside it are dropped before they take ring space.
  auto si = std::make_shared<SeriesInfo>(info);
  std::size_t rows = options_.scan_rows, cols = options_.scan_cols;
  if (rows && cols) {
    si->scan_shape_source = "given";
  } else if (info.scan_rows && info.scan_cols) {
    rows = info.scan_rows;
    cols = info.scan_cols;
  } else if (info.frames) {
    const auto s = std::size_t(std::llround(std::sqrt(double(info.frames))));
    if (s * s == info.frames) {
      rows = cols = s;
      si->scan_shape_source = "square frame count (" + std::to_string(info.frames) + " frames announced)";
    }
  }
  if (!rows || !cols) {
    note_problem("series " + info.series_id + ": no scan shape (the stream announced " + std::to_string(info.frames) +
                 " frames, not a square number, and states none): give the scan shape (--scan-shape ROWS COLS); "
                 "its frames are skipped");
    std::lock_guard lk(ring_mutex_);
    series_open_ = false;
    refused_series_id_ = info.series_id;
    return;
  }
  si->scan_rows = rows;
  si->scan_cols = cols;
  if (info.det_rows == 0 || info.det_cols == 0) {
    note_problem("series " + info.series_id + ": frames of 0 pixels; its frames are skipped");
    return;
  }
  const std::uint64_t frames = checked_mul<InvalidArgument>(rows, cols, "scan frame count");
  std::unique_lock lk(ring_mutex_);
  Entry e;
  e.kind = Entry::start;
  e.info = si;
  e.arrived = Clock::now();
  entries_.push_back(std::move(e));
  seen_.assign(frames, 0);
  series_open_ = true;
  refused_series_id_.clear();
  open_series_id_ = info.series_id;
  kind_fixed_ = false;
  lk.unlock();
  {
    std::lock_guard pk(products_mutex_);
    ++stats_.series_started;
  }
  ring_cv_.notify_one();
}

void Acquisition::series_end(const std::string& series_id, const std::string& reason) {
  std::unique_lock lk(ring_mutex_);
  if (!series_open_ && !refused_series_id_.empty() && series_id == refused_series_id_) {
    refused_series_id_.clear();  // the end of a series refused at its start (named then)
    return;
  }
  if (!series_open_ || series_id != open_series_id_) {
    lk.unlock();
    std::lock_guard pk(products_mutex_);
    ++stats_.stale;
    if (problems_.size() < kMaxProblemsKept)
      problems_.push_back("end of series " + series_id + " while " +
                                   (series_open_ ? "series " + open_series_id_ + " is open" : "no series is open") +
                                   ": skipped (stale)");
    return;
  }
  Entry e;
  e.kind = Entry::end;
  e.reason = reason;
  e.arrived = Clock::now();
  entries_.push_back(std::move(e));
  series_open_ = false;
  lk.unlock();
  ring_cv_.notify_one();
}

bool Acquisition::reserve(std::size_t size, std::size_t* offset) {
  const std::size_t cap = ring_size_;
  if (ring_used_ == 0) {  // empty: start over at 0
    *offset = 0;
    tail_ = 0;
    head_ = size;
    return true;
  }
  if (head_ > tail_) {  // free: [head_, cap) and [0, tail_)
    if (cap - head_ >= size) {
      *offset = head_;
      head_ += size;
      return true;
    }
    if (tail_ > size) {  // wrap: the bytes after head_ stay unused until the reader passes them
      *offset = 0;
      head_ = size;
      return true;
    }
    return false;
  }
  if (head_ < tail_ && tail_ - head_ > size) {  // wrapped: free [head_, tail_)
    *offset = head_;
    head_ += size;
    return true;
  }
  return false;
}

void Acquisition::frame(const FrameView& f) {
  std::unique_lock lk(ring_mutex_);
  if (!series_open_) {
    const bool refused = !refused_series_id_.empty();
    lk.unlock();
    if (refused) {
      std::lock_guard pk(products_mutex_);
      ++stats_.problems;  // named once, at its start
    } else {
      note_problem("frame " + std::to_string(f.index) + " outside any series: skipped");
    }
    return;
  }
  const std::string sid = open_series_id_;
  if (f.index >= seen_.size()) {
    lk.unlock();
    std::lock_guard pk(products_mutex_);
    ++stats_.out_of_range;
    if (problems_.size() < kMaxProblemsKept)
      problems_.push_back("series " + sid + ": frame " + std::to_string(f.index) + " is outside the scan of " +
                                   std::to_string(seen_.size()) + " positions: skipped");
    return;
  }
  if (seen_[f.index]) {
    lk.unlock();
    std::lock_guard pk(products_mutex_);
    ++stats_.duplicates;
    if (problems_.size() < kMaxProblemsKept)
      problems_.push_back("series " + sid + ": frame " + std::to_string(f.index) +
                                   " arrived again: the first copy is kept");
    return;
  }
  if (!kind_fixed_) {
    open_kind_ = f.kind;
    kind_fixed_ = true;
  } else if (f.kind != open_kind_) {
    lk.unlock();
    std::lock_guard pk(products_mutex_);
    ++stats_.corrupt;
    if (problems_.size() < kMaxProblemsKept)
      problems_.push_back("series " + sid + ": frame " + std::to_string(f.index) +
                                   " is encoded differently from the series' first frame: skipped");
    return;
  }
  if (f.size > ring_size_ || f.size == 0) {
    lk.unlock();
    std::lock_guard pk(products_mutex_);
    ++stats_.dropped;
    if (problems_.size() < kMaxProblemsKept)
      problems_.push_back("series " + sid + ": frame " + std::to_string(f.index) + " of " +
                                   std::to_string(f.size) + " bytes does not fit the ring of " +
                                   std::to_string(ring_size_) + " bytes: dropped");
    return;
  }
  std::size_t offset = 0;
  if (!reserve(f.size, &offset)) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.wait_ms);
    bool ok = false;
    while (!stopping_ && Clock::now() < deadline) {
      room_cv_.wait_until(lk, deadline);
      if ((ok = reserve(f.size, &offset))) break;
    }
    if (!ok) {
      lk.unlock();
      std::lock_guard pk(products_mutex_);
      ++stats_.dropped;
      if (problems_.size() < kMaxProblemsKept && stats_.dropped <= 10)
        problems_.push_back("series " + sid + ": frame " + std::to_string(f.index) +
                                     " dropped: the ring stayed full for " + std::to_string(options_.wait_ms) +
                                     " ms (the decoder falls behind)");
      return;
    }
  }
  std::memcpy(ring_.get() + offset, f.data, f.size);
  ring_used_ += f.size;
  seen_[f.index] = 1;
  Entry e;
  e.kind = Entry::frame;
  e.index = f.index;
  e.offset = offset;
  e.size = f.size;
  e.arrived = Clock::now();
  entries_.push_back(std::move(e));
  ++rx_frames_;
  rx_bytes_ += f.size;
  rx_peak_bytes_ = std::max(rx_peak_bytes_, ring_used_);
  // The worker waits for the first entry, then for a full batch or its time: wake it only then (a wake per frame
  // costs the receiving thread a futex call and the worker a trip through the lock).
  const bool wake = entries_.size() == 1 || entries_.size() >= options_.batch_frames;
  lk.unlock();
  if (wake) ring_cv_.notify_one();
}

// ---------------------------------------------------------------------------------------------------------------
// Worker side

void Acquisition::set_detector(const std::string& name, detector::Mask mask) {
  if (name.empty()) throw InvalidArgument("a live detector needs a name");
  std::lock_guard lk(products_mutex_);
  pending_detectors_[name] = std::move(mask);
}

void Acquisition::remove_detector(const std::string& name) {
  std::lock_guard lk(products_mutex_);
  pending_detectors_[name] = std::nullopt;
}

void Acquisition::worker() {
  const auto batch_wait = std::chrono::milliseconds(options_.batch_ms ? options_.batch_ms : 1);
  std::unique_lock lk(ring_mutex_);
  for (;;) {
    if (entries_.empty()) {
      if (stopping_) break;
      ring_cv_.wait_for(lk, batch_wait, [&] { return stopping_ || !entries_.empty(); });
      if (entries_.empty()) {
        lk.unlock();
        apply_detector_changes();
        lk.lock();
      }
      continue;
    }
    if (entries_.front().kind != Entry::frame) {
      Entry e = std::move(entries_.front());
      entries_.pop_front();
      lk.unlock();
      try {
        if (e.kind == Entry::start) begin_series(*e.info);
        else finish_series(e.reason);
      } catch (const std::exception& ex) {
        note_problem(ex.what());
      }
      lk.lock();
      continue;
    }
    // A batch: consecutive frames up to batch_frames; fewer when the oldest is batch_ms old, a control entry
    // follows or the acquisition stops.
    const auto full = [&] {
      return stopping_ || entries_.size() >= options_.batch_frames || entries_.back().kind != Entry::frame;
    };
    const auto due = entries_.front().arrived + batch_wait;
    if (!full() && Clock::now() < due) {
      ring_cv_.wait_until(lk, due, full);
      continue;
    }
    std::size_t n = 0;
    while (n < entries_.size() && n < options_.batch_frames && entries_[n].kind == Entry::frame) ++n;
    std::vector<Entry> batch(entries_.begin(), entries_.begin() + std::ptrdiff_t(n));
    lk.unlock();
    try {
      process_batch(batch);
    } catch (const std::exception& ex) {
      note_problem(std::string("decoding a batch failed: ") + ex.what());
    }
    lk.lock();
    entries_.erase(entries_.begin(), entries_.begin() + std::ptrdiff_t(n));
    for (const Entry& e : batch) ring_used_ -= e.size;
    if (ring_used_ == 0) {
      head_ = tail_ = 0;
    } else {
      for (const Entry& e : entries_)
        if (e.kind == Entry::frame) {
          tail_ = e.offset;
          break;
        }
    }
    room_cv_.notify_all();
    lk.unlock();
    apply_detector_changes();
    lk.lock();
  }
  lk.unlock();
  if (series_) {
    try {
      finish_series("stopped");
    } catch (const std::exception& ex) {
      note_problem(ex.what());
    }
  }
}

void Acquisition::begin_series(const SeriesInfo& info) {
  if (series_) finish_series("restart: a new series began");
  auto s = std::make_unique<Series>();
  s->info = info;
  s->shape = Shape4D{info.scan_rows, info.scan_cols, info.det_rows, info.det_cols};
  s->scan_shape_source = info.scan_shape_source;
  s->frame_bytes = checked_product<InvalidArgument>({info.det_rows, info.det_cols, dtype_size(info.dtype)},
                                                    "live frame size");
  const std::size_t bytes = s->shape.nbytes(dtype_size(info.dtype));
  const bool gpu = backend_ == "cuda";
  const std::size_t free_bytes = io::free_memory_bytes(gpu ? Backend::cuda : Backend::cpu);
  if (double(bytes) > 0.8 * double(free_bytes))
    throw InvalidArgument("series " + info.series_id + ": the scan of " + std::to_string(info.scan_rows) + " x " +
                          std::to_string(info.scan_cols) + " frames of " + std::to_string(info.det_rows) + " x " +
                          std::to_string(info.det_cols) + " " + dtype_name(info.dtype) + " needs " +
                          std::to_string(bytes >> 20) + " MiB; " + std::to_string(free_bytes >> 20) +
                          " MiB are available" + (gpu ? " on the GPU" : "") + ": its frames are skipped");
  nlohmann::json md = {{"live", {{"protocol", info.protocol}, {"series_id", info.series_id}, {"metadata", info.metadata}}},
                       {"calibration", info.calibration},
                       {"calibration_detail", info.calibration_detail}};
  Provenance pv;
  pv.operation = "live.acquire";
  pv.backend = backend_;
  pv.input_dtype = dtype_name(info.dtype);
  pv.input_shape = s->shape.dims();
  pv.output_dtype = dtype_name(info.dtype);
  pv.output_shape = s->shape.dims();
  pv.representation = "dense";
  pv.dense_bytes = pv.resident_bytes = bytes;
  // The worker alone writes the frames, between the queries it runs itself (no other thread sees this dataset
  // before the series ends).
  if (gpu) {
    s->device_resident = cuda::zeroed_device(bytes);
    s->frames = static_cast<std::uint8_t*>(s->device_resident->data());
    s->resident = Dataset::from_device(s->device_resident, s->shape, info.dtype, std::move(md), std::move(pv));
  } else {
    HostArray4D a;
    a.shape = s->shape;
    a.dtype = info.dtype;
    a.bytes.assign(bytes, 0);
    s->resident = Dataset::from_host(std::move(a), std::move(md), std::move(pv));
    s->frames = const_cast<std::uint8_t*>(s->resident.host_bytes().data());
  }
  s->received.assign(s->shape.frames(), 0);
  // The codec as a FileInfo for the host decoders.
  io::FileInfo& fi = s->codec;
  fi.path = info.protocol + " series " + info.series_id;
  fi.reader = info.protocol;
  fi.dataset_path = "stream";
  fi.dtype = info.dtype;
  fi.shape = Shape4D{1, 1, info.det_rows, info.det_cols};
  fi.precision = 8 * dtype_size(info.dtype);
  fi.codec = info.codec;
  fi.byte_order = "little";
  {
    std::lock_guard lk(products_mutex_);
    for (auto& [name, m] : carried_detectors_)
      if (m) s->detectors[name] = *m;
    carried_detectors_.clear();
    for (auto& [name, m] : pending_detectors_) {
      if (m) s->detectors[name] = *m;
      else s->detectors.erase(name);
    }
    pending_detectors_.clear();
    s->default_detectors = s->detectors.empty();
    products_ = LiveProducts{};
    products_.series_id = info.series_id;
    products_.scan_rows = info.scan_rows;
    products_.scan_cols = info.scan_cols;
    products_.det_rows = info.det_rows;
    products_.det_cols = info.det_cols;
    products_.received.assign(s->shape.frames(), 0);
    products_.sum_pattern = blank<std::uint64_t>(info.det_rows, info.det_cols);
    const float cr = float(double(info.det_rows - 1) / 2), cc = float(double(info.det_cols - 1) / 2);
    products_.com_row = blank<float>(info.scan_rows, info.scan_cols);
    products_.com_col = blank<float>(info.scan_rows, info.scan_cols);
    std::fill(products_.com_row.data.begin(), products_.com_row.data.end(), cr);
    std::fill(products_.com_col.data.begin(), products_.com_col.data.end(), cc);
    for (const auto& [name, m] : s->detectors) {
      products_.images[name] = blank<std::uint64_t>(info.scan_rows, info.scan_cols);
      products_.detectors[name] = m.description;
    }
    first_frame_ = Clock::now();
    stats_.frames_decoded = 0;
    stats_.seconds = 0;
    stats_.busy_seconds = 0;
    stats_.max_latency_ms = 0;
  }
  std::function<void(const Dataset&)> started;
  {
    std::lock_guard lk(products_mutex_);
    started = on_series_start_;
  }
  const Dataset resident = s->resident;
  series_ = std::move(s);
  if (started) started(resident);
}

namespace {

// The frames of `batch_frames` (n x frame of the series) as a 1 x n dataset on the host: the input of the queries.
Dataset batch_dataset(HostBytes bytes, std::size_t n, const SeriesInfo& info) {
  HostArray4D a;
  a.shape = Shape4D{1, n, info.det_rows, info.det_cols};
  a.dtype = info.dtype;
  a.bytes = std::move(bytes);
  Provenance pv;
  pv.operation = "live.batch";
  pv.backend = "cpu";
  return Dataset::from_host(std::move(a), nlohmann::json::object(), std::move(pv));
}

}  // namespace

namespace {

// The file of a series: the path given for the first series saved, <stem>_series<id><ext> after it.
std::string save_file_for(const std::string& path, const std::string& series_id, bool first) {
  if (first) return path;
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  const bool ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  std::string id;
  for (char c : series_id) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return (ext ? path.substr(0, dot) : path) + "_series" + id + (ext ? path.substr(dot) : "");
}

}  // namespace

void Acquisition::open_saver(Series& s) {
  if (options_.save_path.empty() || s.save_tried) return;
  s.save_tried = true;
  try {
    io::DectrisLayout L;
    L.det_rows = s.info.det_rows;
    L.det_cols = s.info.det_cols;
    L.dtype = s.info.dtype;
    L.frames = s.shape.frames();
    L.scan_rows = s.shape.scan_rows;
    L.scan_cols = s.shape.scan_cols;
    L.bitshuffle.elem_size = dtype_size(s.info.dtype);
    L.bitshuffle.block_elems = s.info.codec.kind == io::FrameCodecKind::bitshuffle ? s.codec.bitshuffle_block_elems : 0;
    L.bitshuffle.compression = io::codec::BlockCompression::lz4;
    L.fixed_array_index = true;  // O(1) chunk inserts for hundreds of thousands of frames
    for (const auto& [k, v] : s.info.calibration.items())
      if (v.is_number()) L.calibration[k] = v;
    L.provenance = {{"operation", "live.save"}, {"protocol", s.info.protocol}, {"series_id", s.info.series_id},
                    {"codec", s.info.codec.name()}, {"metadata", s.info.metadata}};
    L.has_pixel_mask = !s.info.bad_pixels.empty();
    L.bad_pixels = s.info.bad_pixels;
    const std::string file = save_file_for(options_.save_path, s.info.series_id, !saved_once_);
    auto w = std::make_unique<io::DectrisWriter>();
    w->open(file, L);
    s.saver = std::move(w);
    s.save_file = file;
    saved_once_ = true;
  } catch (const std::exception& e) {
    note_problem("series " + s.info.series_id + ": not saved: " + e.what());
  }
}

void Acquisition::process_batch(std::vector<Entry>& batch) {
  if (!series_ || batch.empty()) return;
  const auto t_start = Clock::now();
  Series& s = *series_;
  const std::size_t n = batch.size(), fb = s.frame_bytes;
  if (s.info.codec.kind == io::FrameCodecKind::bitshuffle && !s.codec_ready) {
    // The block size from the first frame's header (the stream does not state it).
    const Entry& e0 = batch[0];
    if (e0.size < 12) throw FormatError("frame " + std::to_string(e0.index) + ": shorter than its 12-byte header");
    const std::uint32_t block = frame_bytes::block_bytes(ring_.get() + e0.offset);
    const std::size_t es = dtype_size(s.info.dtype);
    s.codec.filters = {io::FilterInfo{h5::kBitshuffleFilter, "bitshuffle", {0, 4, unsigned(es), unsigned(block / es), 2}}};
    s.codec.bitshuffle_lz4 = true;
    s.codec.bitshuffle_block_elems = block / es;
    s.codec.one_frame_per_chunk = true;
    s.codec_ready = true;
  }
  std::vector<std::uint64_t> offsets(n), sizes(n);
  for (std::size_t i = 0; i < n; ++i) {
    offsets[i] = batch[i].offset;
    sizes[i] = batch[i].size;
  }
  std::vector<std::uint8_t> good(n, 1);
  const auto corrupt = [&](std::size_t k, const std::string& reason) {
    good[k] = 0;
    s.corrupt.emplace_back(batch[k].index, reason);
    note_problem("series " + s.info.series_id + ": frame " + std::to_string(batch[k].index) + " does not decode (" +
                 reason + "): its position is left empty");
    std::lock_guard pk(products_mutex_);
    ++stats_.corrupt;
  };
  const bool zero_bad = options_.pixel_mask == "zero" && !s.info.bad_pixels.empty();
  Dataset bd;
  HostBytes staging;
  if (s.device_resident) {  // cuda: the load pipeline's kernels, into the decoder's staging frames
    if (!s.gpu) s.gpu = std::make_unique<cuda::BatchDecoder>(s.codec, options_.batch_frames, ring_size_, s.info.bad_pixels);
    for (const auto& [k, reason] : s.gpu->decode(ring_.get(), offsets.data(), sizes.data(), n, zero_bad))
      corrupt(k, reason);
    Provenance pv;
    pv.operation = "live.batch";
    pv.backend = "cuda";
    bd = Dataset::from_device(s.gpu->staging(), Shape4D{1, n, s.info.det_rows, s.info.det_cols}, s.info.dtype,
                              nlohmann::json::object(), std::move(pv));
  } else {  // cpu: the host decoders on all cores
    staging.resize(n * fb);
    std::vector<void*> dest(n);
    for (std::size_t i = 0; i < n; ++i) dest[i] = staging.data() + i * fb;
    std::size_t from = 0;
    while (from < n) {
      io::codec::ChunkBatch cb;
      cb.base = ring_.get();
      cb.base_bytes = ring_size_;
      cb.offset = offsets.data() + from;
      cb.size = sizes.data() + from;
      cb.dest = dest.data() + from;
      cb.n_chunks = n - from;
      std::optional<io::codec::ChunkFailure> fail;
      try {
        fail = io::decode_records_host(s.codec, cb, options_.threads);
      } catch (const std::exception& ex) {
        fail = io::codec::ChunkFailure{0, ex.what()};
      }
      if (!fail) break;
      const std::size_t k = from + fail->chunk;
      std::memset(dest[k], 0, fb);
      corrupt(k, fail->reason);
      from = k + 1;
    }
    if (zero_bad) {
      for (std::size_t i = 0; i < n; ++i)
        for (std::uint32_t p : s.info.bad_pixels) {
          std::uint8_t* px = static_cast<std::uint8_t*>(dest[i]) + std::size_t(p) * dtype_size(s.info.dtype);
          std::memset(px, 0, dtype_size(s.info.dtype));
        }
    }
  }
  if (options_.slow_consumer_us) std::this_thread::sleep_for(std::chrono::microseconds(options_.slow_consumer_us * n));
  // Products of the new frames only, by the queries every dataset has.
  if (!s.device_resident) bd = batch_dataset(std::move(staging), n, s.info);
  const Image<std::uint64_t> sum = detector::sum_pattern(bd).take_counts("the live sum pattern");
  if (s.default_detectors && s.detectors.empty()) {
    // bf and adf from the first batch's disk fit, or the disk given.
    try {
      detector::DiskFit fit;
      if (!(options_.disk_center && options_.disk_radius)) fit = detector::fit_bf_disk(bd);
      if (options_.disk_center) std::tie(fit.center_row, fit.center_col) = *options_.disk_center;
      if (options_.disk_radius) fit.radius = *options_.disk_radius;
      const std::string from = options_.disk_center && options_.disk_radius ? "BF disk given"
                               : options_.disk_center || options_.disk_radius
                                   ? "BF disk fitted on the first batch, with the given centre or radius"
                                   : "BF disk fitted on the first batch";
      detector::Mask bf = detector::disk(s.info.det_rows, s.info.det_cols, fit.center_row, fit.center_col, fit.radius);
      bf.description = {{"kind", "bf"}, {"center", {fit.center_row, fit.center_col}}, {"radius", fit.radius},
                        {"from", from}};
      s.detectors["bf"] = bf;
      const detector::AnnulusRadii r = detector::default_adf_radii(fit, s.info.det_rows, s.info.det_cols);
      detector::Mask adf = detector::annulus(s.info.det_rows, s.info.det_cols, fit.center_row, fit.center_col,
                                             r.inner, r.outer);
      adf.description = {{"kind", "adf"}, {"center", {fit.center_row, fit.center_col}}, {"inner", r.inner},
                         {"outer", r.outer}, {"from", from}};
      s.detectors["adf"] = adf;
    } catch (const std::exception& ex) {
      note_problem(std::string("no default BF/ADF detectors: ") + ex.what());
    }
    s.default_detectors = false;
    std::lock_guard pk(products_mutex_);
    for (const auto& [name, m] : s.detectors) {
      products_.images[name] = blank<std::uint64_t>(s.info.scan_rows, s.info.scan_cols);
      products_.detectors[name] = m.description;
    }
  }
  std::map<std::string, Image<std::uint64_t>> values;
  for (const auto& [name, m] : s.detectors)
    values[name] = detector::virtual_image(bd, m).take_counts("live detector " + name);
  const dpc::ComResult com = dpc::center_of_mass(bd);
  // The frames into the resident at their positions.
  std::vector<std::uint64_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = batch[i].index;
  const auto write = [&] {
    if (s.device_resident) {
      s.gpu->scatter(s.frames, positions.data(), good.data(), n);
    } else {
      const std::uint8_t* src = bd.host_bytes().data();
      for (std::size_t i = 0; i < n; ++i)
        if (good[i]) std::memcpy(s.frames + positions[i] * fb, src + i * fb, fb);
    }
  };
  std::function<void(const std::function<void()>&)> guard;
  {
    std::lock_guard lk(products_mutex_);
    guard = resident_guard_;
  }
  if (guard) guard(write);
  else write();
  // The series' file: the received chunks verbatim (bitshuffle), else the decoded frames encoded.
  open_saver(s);
  if (s.saver) {
    try {
      if (s.info.codec.kind == io::FrameCodecKind::bitshuffle) {
        for (std::size_t i = 0; i < n; ++i)
          if (good[i]) s.saver->write_chunk(batch[i].index, ring_.get() + batch[i].offset, batch[i].size);
      } else {
        const HostArray4D host = s.device_resident ? bd.read() : HostArray4D{};
        const std::uint8_t* frames = s.device_resident ? host.bytes.data() : bd.host_bytes().data();
        for (std::size_t i = 0; i < n; ++i)
          if (good[i]) s.saver->write_frames(batch[i].index, 1, frames + i * fb);
      }
    } catch (const std::exception& e) {
      note_problem("series " + s.info.series_id + ": saving to '" + s.save_file + "' stopped: " + e.what());
      s.saver.reset();  // the temporary file is removed; the acquisition goes on
    }
  }
  std::lock_guard pk(products_mutex_);
  for (std::size_t k = 0; k < sum.data.size(); ++k) products_.sum_pattern.data[k] += sum.data[k];
  std::uint64_t decoded = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!good[i]) continue;
    const std::uint64_t pos = batch[i].index;
    s.received[pos] = 1;
    products_.received[pos] = 1;
    for (const auto& [name, img] : values) products_.images[name].data[pos] = img.data[i];
    products_.com_row.data[pos] = com.com_row.data[i];
    products_.com_col.data[pos] = com.com_col.data[i];
    ++decoded;
  }
  products_.frames_received += decoded;
  stats_.frames_decoded += decoded;
  stats_.seconds = std::chrono::duration<double>(Clock::now() - first_frame_).count();
  stats_.frames_per_second = stats_.seconds > 0 ? double(stats_.frames_decoded) / stats_.seconds : 0;
  stats_.latency_ms = ms_since(batch.front().arrived);
  stats_.busy_seconds += std::chrono::duration<double>(Clock::now() - t_start).count();
  stats_.max_latency_ms = std::max(stats_.max_latency_ms, stats_.latency_ms);
}

void Acquisition::apply_detector_changes() {
  std::map<std::string, std::optional<detector::Mask>> changes;
  std::optional<Dataset> last;  // no series running: the detectors apply to the last finished one (its products)
  {
    std::lock_guard lk(products_mutex_);
    if (pending_detectors_.empty() || (!series_ && finished_.empty())) return;  // before any series: kept for it
    changes.swap(pending_detectors_);
    if (!series_) last = finished_.back().dataset;
  }
  if (last) {
    for (auto& [name, m] : changes) {
      std::optional<Image<std::uint64_t>> img;
      if (m) {
        try {
          img = detector::virtual_image(*last, *m).take_counts("live detector " + name);
        } catch (const std::exception& ex) {
          note_problem("detector '" + name + "': " + ex.what());
          continue;
        }
      }
      std::lock_guard lk(products_mutex_);
      carried_detectors_[name] = m;  // and for the series that come
      for (LiveProducts* p : {&products_, &finished_.back().products}) {
        if (img) {
          p->images[name] = *img;
          p->detectors[name] = m->description;
        } else {
          p->images.erase(name);
          p->detectors.erase(name);
        }
      }
    }
    return;
  }
  Series& s = *series_;
  for (auto& [name, m] : changes) {
    if (!m) {
      s.detectors.erase(name);
      std::lock_guard lk(products_mutex_);
      products_.images.erase(name);
      products_.detectors.erase(name);
      continue;
    }
    if (m->rows != s.info.det_rows || m->cols != s.info.det_cols) {
      note_problem("detector '" + name + "' is " + std::to_string(m->rows) + " x " + std::to_string(m->cols) +
                   "; the frames are " + std::to_string(s.info.det_rows) + " x " + std::to_string(s.info.det_cols) +
                   ": not set");
      continue;
    }
    // Over every frame received so far (the others are zero frames: 0).
    Image<std::uint64_t> img;
    try {
      img = detector::virtual_image(s.resident, *m).take_counts("live detector " + name);
    } catch (const std::exception& ex) {
      note_problem("detector '" + name + "': " + ex.what());
      continue;
    }
    s.detectors[name] = *m;
    s.default_detectors = false;
    std::lock_guard lk(products_mutex_);
    products_.images[name] = std::move(img);
    products_.detectors[name] = m->description;
  }
}

void Acquisition::finish_series(const std::string& reason) {
  if (!series_) return;
  apply_detector_changes();
  std::unique_ptr<Series> s = std::move(series_);
  std::vector<std::uint64_t> missing;
  for (std::size_t i = 0; i < s->received.size(); ++i)
    if (!s->received[i]) missing.push_back(i);
  nlohmann::json corrupt = nlohmann::json::array();
  for (const auto& [idx, why] : s->corrupt) corrupt.push_back({{"frame", idx}, {"reason", why}});
  std::string saved;
  if (s->saver) {  // positions never received as zero frames, so that the file loads like any other
    try {
      const std::vector<std::uint8_t> zeros(s->frame_bytes, 0);
      for (std::uint64_t k : missing) s->saver->write_frames(k, 1, zeros.data());
      s->saver->close();
      saved = s->save_file;
    } catch (const std::exception& e) {
      note_problem("series " + s->info.series_id + ": saving to '" + s->save_file + "' failed: " + e.what());
    }
    s->saver.reset();
  }
  Stats st = stats();
  nlohmann::json report = {{"protocol", s->info.protocol},
                           {"series_id", s->info.series_id},
                           {"end", reason.empty() ? "end message" : reason},
                           {"frames_announced", s->info.frames},
                           {"frames_received", s->received.size() - missing.size()},
                           {"missing", missing.size()},
                           {"missing_positions", missing.size() <= 10000 ? nlohmann::json(missing)
                                                                         : nlohmann::json("more than 10000")},
                           {"corrupt_frames", corrupt},
                           {"scan_shape", {{"value", {s->info.scan_rows, s->info.scan_cols}},
                                           {"source", s->scan_shape_source}}},
                           {"pixel_mask", options_.pixel_mask},
                           {"pixel_mask_source", s->info.pixel_mask_source},
                           {"bad_pixels", s->info.bad_pixels.size()},
                           {"codec", s->info.codec.name()},
                           {"decoder", s->codec_ready || s->info.codec.kind != io::FrameCodecKind::bitshuffle
                                           ? io::host_decoder_name(s->codec) : "none (no frame decoded)"},
                           {"calibration", s->info.calibration_detail},
                           {"saved", saved.empty() ? nlohmann::json(nullptr) : nlohmann::json(saved)},
                           {"stats", st.to_json()}};
  // The finished dataset: the resident with the series' report in its provenance and metadata.
  HostArray4D all;
  all.shape = s->shape;
  all.dtype = s->info.dtype;
  Provenance pv = s->resident.provenance();
  pv.parameters = report;
  nlohmann::json md = s->resident.metadata();
  md["live"]["report"] = report;
  // The resident's storage is handed over without a copy (GPU: shared). On the host it is moved, unless others
  // read the resident (a guard is set: qgpu serve --live keeps serving it), then copied.
  bool shared = false;
  {
    std::lock_guard lk(products_mutex_);
    shared = static_cast<bool>(resident_guard_);
  }
  Dataset ds = s->device_resident
                   ? Dataset::from_device(s->device_resident, s->shape, s->info.dtype, std::move(md), std::move(pv))
                   : Dataset::from_host(
      [&] {
        HostArray4D h;
        h.shape = s->shape;
        h.dtype = s->info.dtype;
        if (shared)
          h.bytes = s->resident.host_bytes();
        else
          h.bytes = std::move(const_cast<HostBytes&>(s->resident.host_bytes()));
        return h;
      }(),
      std::move(md), std::move(pv));
  FinishedSeries fs{ds, {}, reason};
  std::function<void(const FinishedSeries&)> cb;
  {
    std::lock_guard lk(products_mutex_);
    products_.finished = true;
    fs.products = products_;
    fs.products.problems = problems_;
    finished_.push_back(fs);
    ++stats_.series_finished;
    cb = on_series_end_;
  }
  finished_cv_.notify_all();
  if (cb) {
    try {
      cb(fs);
    } catch (const std::exception& ex) {
      note_problem(std::string("series end: ") + ex.what());
    }
  }
}

LiveProducts Acquisition::products() const {
  std::lock_guard lk(products_mutex_);
  LiveProducts p = products_;
  p.problems = problems_;
  return p;
}

Stats Acquisition::stats() const {
  Stats s;
  {
    std::lock_guard lk(products_mutex_);
    s = stats_;
  }
  std::lock_guard lk(ring_mutex_);
  s.frames_received = rx_frames_;
  s.bytes_received = rx_bytes_;
  s.ring_peak_bytes = rx_peak_bytes_;
  return s;
}

bool Acquisition::wait_finished(std::size_t n, double timeout_s) const {
  std::unique_lock lk(products_mutex_);
  return finished_cv_.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return finished_.size() >= n; });
}

std::vector<FinishedSeries> Acquisition::finished() const {
  std::lock_guard lk(products_mutex_);
  return finished_;
}

}  // namespace qgpu::live
