// quantem.gpu.live: a receiver thread feeding an Acquisition (live/), its products as numpy arrays while it runs,
// the finished series as ordinary Datasets; and the detector simulator.
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "convert.hpp"
#include "core/error.hpp"
#include "live/acquisition.hpp"
#include "live/receive.hpp"
#include "live/simulate.hpp"

namespace qgpu::py {

namespace {

template <class T> pyb::array_t<T> array2d(const std::vector<T>& v, std::size_t rows, std::size_t cols) {
  pyb::array_t<T> a({rows, cols});
  if (!v.empty()) std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

class Live {
 public:
  Live(const std::string& url, live::AcquisitionOptions ao, live::ReceiveOptions ro)
      : endpoint_(live::parse_endpoint(url)), acq_(std::make_unique<live::Acquisition>(std::move(ao))),
        receiver_(std::make_unique<live::Receiver>(endpoint_, *acq_, std::move(ro))) {
    acq_->on_series_start([this](const Dataset& resident) {
      std::lock_guard lk(resident_mutex_);
      resident_ = resident;
    });
    thread_ = std::thread([this] {
      try {
        receiver_->run();
      } catch (const std::exception& e) {
        acq_->problem(std::string("receiver stopped: ") + e.what());
      }
      running_ = false;
    });
  }
  ~Live() { close(); }

  void close() {
    if (closed_) return;
    closed_ = true;
    receiver_->stop();
    if (thread_.joinable()) thread_.join();
    acq_->close();
  }

  pyb::dict products() const {
    const live::LiveProducts p = acq_->products();
    pyb::dict d;
    d["series_id"] = p.series_id;
    d["finished"] = p.finished;
    d["scan_shape"] = pyb::make_tuple(p.scan_rows, p.scan_cols);
    d["detector_shape"] = pyb::make_tuple(p.det_rows, p.det_cols);
    d["received"] = array2d(p.received, p.scan_rows, p.scan_cols);
    d["frames_received"] = p.frames_received;
    d["sum_pattern"] = array2d(p.sum_pattern.data, p.det_rows, p.det_cols);
    pyb::dict images, detectors;
    for (const auto& [name, img] : p.images) images[pyb::str(name)] = array2d(img.data, img.rows, img.cols);
    for (const auto& [name, j] : p.detectors) detectors[pyb::str(name)] = to_python(j);
    d["images"] = images;
    d["detectors"] = detectors;
    d["com_row"] = array2d(p.com_row.data, p.com_row.rows, p.com_row.cols);
    d["com_col"] = array2d(p.com_col.data, p.com_col.rows, p.com_col.cols);
    d["problems"] = p.problems;
    return d;
  }

  pyb::object stats() const { return to_python(acq_->stats().to_json()); }
  void set_detector(const std::string& name, const pyb::object& mask) {
    const live::LiveProducts p = acq_->products();
    if (!p.det_rows) throw InvalidArgument("set_detector: no series has started yet (the detector shape is unknown)");
    const pyb::array w = mask_argument(mask, p.det_rows, p.det_cols, "mask");
    const auto u = pyb::array_t<std::uint64_t, pyb::array::c_style | pyb::array::forcecast>::ensure(w);
    if (!u) throw InvalidArgument("set_detector: the mask must be bool or non-negative integer weights");
    std::vector<std::uint32_t> weights(std::size_t(u.size()));
    for (pyb::ssize_t i = 0; i < u.size(); ++i) {
      if (u.data()[i] > 0xFFFFFFFFull) throw InvalidArgument("mask weight exceeds 2^32 - 1");
      weights[std::size_t(i)] = std::uint32_t(u.data()[i]);
    }
    detector::Mask m = detector::from_weights(p.det_rows, p.det_cols, std::move(weights));
    m.description = {{"kind", "python mask"}, {"name", name}};
    acq_->set_detector(name, std::move(m));
  }
  void remove_detector(const std::string& name) { acq_->remove_detector(name); }
  bool wait(std::size_t series, double timeout_s) const { return acq_->wait_finished(series, timeout_s); }
  std::vector<Dataset> datasets() const {
    std::vector<Dataset> out;
    for (const auto& f : acq_->finished()) out.push_back(f.dataset);
    return out;
  }
  // A host copy of the current series' frames so far (positions not received are zero), taken between two writes.
  std::optional<Dataset> current() {
    std::call_once(guard_set_, [this] {
      acq_->set_resident_guard([this](const std::function<void()>& write) {
        std::lock_guard lk(resident_mutex_);
        write();
      });
    });
    std::lock_guard lk(resident_mutex_);
    if (!resident_) return std::nullopt;
    HostArray4D copy = resident_->read();
    Provenance pv = resident_->provenance();
    pv.backend = "cpu";
    pv.parameters["snapshot"] = "host copy of a live acquisition's frames so far (qgpu.live current())";
    return Dataset::from_host(std::move(copy), resident_->metadata(), std::move(pv));
  }
  bool running() const { return running_; }
  std::string url() const { return endpoint_.url(); }
  std::string backend() const { return acq_->backend(); }

 private:
  live::Endpoint endpoint_;
  std::unique_ptr<live::Acquisition> acq_;
  std::unique_ptr<live::Receiver> receiver_;
  std::thread thread_;
  std::atomic<bool> running_{true};
  bool closed_ = false;
  std::mutex resident_mutex_;
  std::optional<Dataset> resident_;
  std::once_flag guard_set_;
};

}  // namespace

void bind_live(pyb::module_& m) {
  pyb::class_<Live>(m, "LiveSession", "A detector stream received into a growing dataset (quantem.gpu.live)")
      .def(pyb::init([](const std::string& url, std::size_t scan_rows, std::size_t scan_cols, const std::string& backend,
                        const std::string& channel, std::size_t series, double idle_timeout, std::size_t ring_mib,
                        const std::string& pixel_mask, std::size_t batch_frames, unsigned batch_ms,
                        const std::string& save) {
             live::AcquisitionOptions ao;
             ao.backend = backend;
             ao.scan_rows = scan_rows;
             ao.scan_cols = scan_cols;
             ao.ring_bytes = ring_mib << 20;
             ao.pixel_mask = pixel_mask;
             if (batch_frames) ao.batch_frames = batch_frames;
             if (batch_ms) ao.batch_ms = batch_ms;
             ao.save_path = save;
             live::ReceiveOptions ro;
             ro.channel = channel;
             ro.series = series;
             ro.idle_timeout_s = idle_timeout;
             return std::make_unique<Live>(url, std::move(ao), std::move(ro));
           }),
           pyb::arg("url"), pyb::arg("scan_rows"), pyb::arg("scan_cols"), pyb::arg("backend"), pyb::arg("channel"),
           pyb::arg("series"), pyb::arg("idle_timeout"), pyb::arg("ring_mib"), pyb::arg("pixel_mask"),
           pyb::arg("batch_frames"), pyb::arg("batch_ms"), pyb::arg("save"))
      .def("products", &Live::products)
      .def("stats", &Live::stats)
      .def("set_detector", &Live::set_detector, pyb::arg("name"), pyb::arg("mask"))
      .def("remove_detector", &Live::remove_detector, pyb::arg("name"))
      .def("wait", [](const Live& l, std::size_t series, double timeout) {
        return nogil([&] { return l.wait(series, timeout); });
      }, pyb::arg("series"), pyb::arg("timeout"))
      .def("datasets", &Live::datasets)
      .def("current", [](Live& l) { return nogil([&] { return l.current(); }); })
      .def("close", [](Live& l) { nogil([&] { l.close(); return 0; }); })
      .def_property_readonly("running", &Live::running)
      .def_property_readonly("url", &Live::url)
      .def_property_readonly("backend", &Live::backend);
  m.def("live_simulate", [](const PathArg& file, const std::string& protocol, const std::string& host, int port,
                            double rate, std::size_t repeat, std::size_t scan_rows, std::size_t scan_cols,
                            double wait) {
    live::SimulateOptions o;
    o.protocol = protocol;
    o.host = host;
    o.port = port;
    o.rate = rate;
    o.repeat = repeat;
    o.scan_rows = scan_rows;
    o.scan_cols = scan_cols;
    o.connect_timeout_s = wait;
    const live::SimulateReport r = nogil([&] { return live::simulate_detector(file.string(), o); });
    pyb::dict d;
    d["frames_sent"] = r.frames_sent;
    d["bytes_sent"] = r.bytes_sent;
    d["seconds"] = r.seconds;
    d["frames_per_second"] = r.frames_per_second;
    d["source"] = r.source;
    return d;
  }, pyb::arg("file"), pyb::arg("protocol"), pyb::arg("host"), pyb::arg("port"), pyb::arg("rate"),
     pyb::arg("repeat"), pyb::arg("scan_rows"), pyb::arg("scan_cols"), pyb::arg("wait"));
}

}  // namespace qgpu::py
