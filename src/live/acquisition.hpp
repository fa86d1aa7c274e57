#pragma once
// A live acquisition: the frames of a stream (DECTRIS V2/V1, Merlin TCP: live/receive.hpp) go into a bounded ring,
// are decoded in batches by the load pipeline's own decoders, written into a resident dataset at their scan
// positions, and the products (sum pattern, the virtual detectors set, CoM) are updated for the new frames only.
// When a series ends its dataset is an ordinary resident Dataset: every query works on it.
//
// Faults: a frame outside the scan, a duplicate, a frame whose bytes do not decode, or one dropped because the ring
// stayed full for wait_ms is named and counted, its position left empty and flagged (received() and the
// provenance's missing_positions); nothing is shifted. A new series before the end of the current one ends it
// ("restart"); the stream's receiver never blocks longer than wait_ms on a full ring.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/image.hpp"
#include "detector/mask.hpp"
#include "live/series.hpp"
#include "resident/dataset.hpp"

namespace qgpu::live {

struct AcquisitionOptions {
  std::string backend = "auto";             // cpu | cuda | auto (cuda when a GPU is usable)
  std::size_t scan_rows = 0, scan_cols = 0;  // the scan shape (0: the stream's, else a square frame count)
  std::size_t ring_bytes = std::size_t(256) << 20;  // received frames waiting to be decoded, at most
  unsigned wait_ms = 1000;                  // a full ring: the receiver waits this long for room, then drops
  std::size_t batch_frames = 1024;          // frames decoded together, at most (1..65535)
  unsigned batch_ms = 5;                    // a batch goes when its oldest frame is this old, full or not
  std::string pixel_mask = "keep";          // "zero": the stream's bad pixels set to 0 in every frame
  unsigned threads = 0;                     // host decode threads (0: every core)
  unsigned slow_consumer_us = 0;            // tests only: the worker sleeps this long per frame (a slow consumer)
  // Also save each series as it arrives to a DECTRIS-style HDF5 file (io/hdf5/write_dectris.hpp): bitshuffle+LZ4
  // chunks stored verbatim (direct chunk writes, no recompression), other codecs encoded; positions never received
  // stored as zero frames (the report names them). "" = not saved. Series after the first: <stem>_series<id><ext>.
  std::string save_path;
  // The BF disk of the default detectors (qgpu live --center/--radius): replace the fitted disk's centre / radius
  // (both given: no fit at all).
  std::optional<std::pair<double, double>> disk_center;
  std::optional<double> disk_radius;
};

struct Stats {
  std::uint64_t frames_received = 0;   // accepted into the ring
  std::uint64_t frames_decoded = 0;    // written into the resident
  std::uint64_t dropped = 0;           // the ring stayed full
  std::uint64_t duplicates = 0, out_of_range = 0, corrupt = 0, stale = 0, problems = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t series_started = 0, series_finished = 0;
  double seconds = 0;                  // since the first frame of the current series
  double frames_per_second = 0;        // decoded / seconds
  double latency_ms = 0, max_latency_ms = 0;  // arrival of a batch's oldest frame -> its products updated
  double busy_seconds = 0;             // the worker decoding and imaging batches (busy fraction = / seconds)
  std::size_t ring_peak_bytes = 0;
  nlohmann::json to_json() const;
};

// The products of the current (or last) series so far; positions not received are 0 (CoM: the detector centre)
// and flagged 0 in `received`.
struct LiveProducts {
  std::string series_id;
  bool finished = false;
  std::size_t scan_rows = 0, scan_cols = 0, det_rows = 0, det_cols = 0;
  std::vector<std::uint8_t> received;            // scan_rows x scan_cols: 1 = the frame is in
  std::uint64_t frames_received = 0;
  Image<std::uint64_t> sum_pattern;              // det_rows x det_cols
  std::map<std::string, Image<std::uint64_t>> images;  // each detector's image
  std::map<std::string, nlohmann::json> detectors;     // each detector's description
  Image<float> com_row, com_col;
  std::vector<std::string> problems;             // the first problems named (of the whole acquisition)
};

// A finished series: its dataset (an ordinary resident Dataset) and products.
struct FinishedSeries {
  Dataset dataset;
  LiveProducts products;
  std::string end_reason;  // "" = the stream's end message
};

class Acquisition : public Sink {
 public:
  explicit Acquisition(AcquisitionOptions options = {});
  ~Acquisition() override;
  Acquisition(const Acquisition&) = delete;
  Acquisition& operator=(const Acquisition&) = delete;

  // Sink (called by one receiver thread at a time).
  void series_start(const SeriesInfo& info) override;
  void frame(const FrameView& f) override;
  void series_end(const std::string& series_id, const std::string& reason) override;
  void problem(const std::string& what) override;

  // A virtual detector by name (replaced if present), applied between batches: its image is computed over every
  // frame received so far, then updated with each batch; set after a series ended, it is computed on that series
  // (products() and its FinishedSeries). Without any, the series' first batch sets "bf" (the fitted BF disk) and
  // "adf" (the default annulus).
  void set_detector(const std::string& name, detector::Mask mask);
  void remove_detector(const std::string& name);

  LiveProducts products() const;
  Stats stats() const;
  std::string backend() const { return backend_; }
  // Called on the worker thread for every finished series (the CLI writes its outputs there).
  void on_series_end(std::function<void(const FinishedSeries&)> f);
  // Called on the worker thread when a series' resident is made, before any of its frames is written: the growing
  // dataset (frames not yet received are zero), which others may query while the worker writes into it through
  // the guard below (qgpu serve --live).
  void on_series_start(std::function<void(const Dataset& resident)> f);
  // Every write of frames into the resident runs inside guard(write): a reader of the resident takes the same lock.
  void set_resident_guard(std::function<void(const std::function<void()>& write)> guard);
  // Waits until `n` series have finished (true) or timeout_s passed (false).
  bool wait_finished(std::size_t n, double timeout_s) const;
  // Finished series so far (shared datasets).
  std::vector<FinishedSeries> finished() const;
  // Decodes what is in the ring and stops the worker (the receiver must have stopped first).
  void close();

 private:
  struct Series;
  struct Entry {
    enum Kind { start, frame, end } kind = frame;
    std::uint64_t index = 0;
    std::size_t offset = 0, size = 0;
    std::chrono::steady_clock::time_point arrived;
    std::shared_ptr<SeriesInfo> info;  // start
    std::string reason;                // end
  };

  void worker();
  void process_batch(std::vector<Entry>& batch);
  void begin_series(const SeriesInfo& info);
  void finish_series(const std::string& reason);
  void apply_detector_changes();
  void open_saver(Series& s);  // options_.save_path: the series' file, at its first batch
  void note_problem(const std::string& what);  // products_mutex_ held or not: takes stats_mutex_
  bool reserve(std::size_t size, std::size_t* offset);  // ring_mutex_ held

  AcquisitionOptions options_;
  std::string backend_;

  // The ring (receiver -> worker).
  mutable std::mutex ring_mutex_;
  std::condition_variable ring_cv_;      // worker: entries arrived
  std::condition_variable room_cv_;      // receiver: room freed
  std::shared_ptr<std::uint8_t> ring_;  // pinned host memory on cuda
  std::size_t ring_size_ = 0;
  std::size_t head_ = 0, tail_ = 0;      // next write; oldest live byte (head_ == tail_ with entries: full)
  std::size_t ring_used_ = 0;
  std::deque<Entry> entries_;
  bool stopping_ = false;
  // Receiver side of the current series (ring_mutex_): to drop duplicates and frames outside the scan early.
  std::vector<std::uint8_t> seen_;
  bool series_open_ = false;
  std::string open_series_id_;
  std::string refused_series_id_;  // a series refused at its start (no scan shape): its frames are skipped quietly
  io::FrameCodecKind open_kind_ = io::FrameCodecKind::bitshuffle;
  bool kind_fixed_ = false;
  std::uint64_t rx_frames_ = 0, rx_bytes_ = 0;  // Stats' frames_received, bytes_received, ring_peak_bytes
  std::size_t rx_peak_bytes_ = 0;

  // Worker state.
  std::unique_ptr<Series> series_;
  std::thread worker_;

  // Products and stats (worker writes, anyone reads).
  mutable std::mutex products_mutex_;
  mutable std::condition_variable finished_cv_;
  LiveProducts products_;
  Stats stats_;
  std::vector<FinishedSeries> finished_;
  std::function<void(const FinishedSeries&)> on_series_end_;
  std::function<void(const Dataset&)> on_series_start_;
  std::function<void(const std::function<void()>&)> resident_guard_;
  std::vector<std::string> problems_;  // the first kMaxProblemsKept named, whatever the series
  std::map<std::string, std::optional<detector::Mask>> pending_detectors_;  // nullopt: remove
  std::map<std::string, std::optional<detector::Mask>> carried_detectors_;  // set between series: for the next
  std::chrono::steady_clock::time_point first_frame_;
  bool saved_once_ = false;  // worker: a series was saved (later ones get a _series<id> suffix)
};

}  // namespace qgpu::live
