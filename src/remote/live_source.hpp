#pragma once
// qgpu serve --live: a detector stream received into a live acquisition (src/live) whose growing resident is served
// like any loaded dataset. The acquisition writes each batch of frames into the resident under the served dataset's
// `work` mutex (the routes compute under it too) and clears its cached products; a new series replaces the served
// dataset. The viewer polls GET /api/datasets/{id}/live and redraws while frames arrive.
#include <memory>
#include <optional>
#include <string>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "live/acquisition.hpp"
#include "live/receive.hpp"

namespace qgpu::remote {

struct ServedDataset;

class LiveSource {
 public:
  // Starts receiving `url` (live::parse_endpoint) at once.
  LiveSource(const std::string& url, live::AcquisitionOptions acquisition, live::ReceiveOptions receive = {});
  ~LiveSource();
  LiveSource(const LiveSource&) = delete;
  LiveSource& operator=(const LiveSource&) = delete;

  // The first series' resident, once it exists; nothing when timeout_s passes or the receiver stops first.
  std::optional<Dataset> wait_first_resident(double timeout_s);
  // Serves the acquisition through `s` (whose ds is the first resident): writes under s.work, new series swapped in.
  void attach(ServedDataset& s);
  // {url, backend, series_id, finished, frames_received, frames, receiving, stats, problems}.
  nlohmann::json status() const;
  live::LiveProducts products() const { return acq_->products(); }
  void stop();

 private:
  live::Endpoint endpoint_;
  std::unique_ptr<live::Acquisition> acq_;
  std::unique_ptr<live::Receiver> receiver_;
  std::thread thread_;
  std::atomic<bool> receiving_{true};
  std::mutex first_mutex_;
  std::condition_variable first_cv_;
  std::optional<Dataset> first_;
  ServedDataset* served_ = nullptr;  // set by attach (first_mutex_)
  ServedDataset* served();
};

}  // namespace qgpu::remote
