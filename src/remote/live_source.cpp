#include "remote/live_source.hpp"

#include <chrono>

#include "detector/disk_fit.hpp"
#include "remote/catalog.hpp"

namespace qgpu::remote {

namespace {

// The products cached for a served dataset: stale once new frames are in.
void clear_caches(ServedDataset& s) {  // with s.work held
  s.com_cache.reset();
  s.ssb_cache.reset();
  s.max_cache.reset();
  s.rotation_cache.reset();
  s.dpc_cache.reset();
  s.field_cache.reset();
  s.binned_field_cache.clear();
  // Everything derived from the counts: the disk fit, and the frame totals the cuda/vulkan ADF subtracts from
  // (kept, they made an ADF during the acquisition use the totals of the frames that had arrived before).
  s.ds.forget_all_cached();
}

}  // namespace

LiveSource::LiveSource(const std::string& url, live::AcquisitionOptions acquisition, live::ReceiveOptions receive)
    : endpoint_(live::parse_endpoint(url)), acq_(std::make_unique<live::Acquisition>(std::move(acquisition))) {
  // Set before any frame: the resident is served (so never moved out at a series' end, live/acquisition.hpp).
  acq_->set_resident_guard([this](const std::function<void()>& write) {
    ServedDataset* s = served();
    if (!s) return write();
    std::lock_guard lk(s->work);
    write();
    clear_caches(*s);
  });
  acq_->on_series_start([this](const Dataset& resident) {
    if (ServedDataset* s = served()) {
      std::lock_guard work(s->work);
      std::lock_guard ds(s->ds_mutex);
      s->ds = resident;
      clear_caches(*s);
      return;
    }
    std::lock_guard lk(first_mutex_);
    if (!first_) first_ = resident;
    first_cv_.notify_all();
  });
  receiver_ = std::make_unique<live::Receiver>(endpoint_, *acq_, std::move(receive));
  thread_ = std::thread([this] {
    try {
      receiver_->run();
    } catch (const std::exception& e) {
      acq_->problem(std::string("receiver stopped: ") + e.what());
    }
    receiving_ = false;
    first_cv_.notify_all();
  });
}

LiveSource::~LiveSource() { stop(); }

void LiveSource::stop() {
  receiver_->stop();
  if (thread_.joinable()) thread_.join();
  acq_->close();
}

std::optional<Dataset> LiveSource::wait_first_resident(double timeout_s) {
  std::unique_lock lk(first_mutex_);
  first_cv_.wait_for(lk, std::chrono::duration<double>(timeout_s), [&] { return first_.has_value() || !receiving_; });
  return first_;
}

void LiveSource::attach(ServedDataset& s) {
  std::lock_guard lk(first_mutex_);
  served_ = &s;
}

ServedDataset* LiveSource::served() {
  std::lock_guard lk(first_mutex_);
  return served_;
}

nlohmann::json LiveSource::status() const {
  const live::LiveProducts p = acq_->products();
  return {{"url", endpoint_.url()},
          {"backend", acq_->backend()},
          {"series_id", p.series_id},
          {"finished", p.finished},
          {"frames_received", p.frames_received},
          {"frames", p.scan_rows * p.scan_cols},
          {"receiving", receiving_.load()},
          {"stats", acq_->stats().to_json()},
          {"problems", p.problems}};
}

}  // namespace qgpu::remote
