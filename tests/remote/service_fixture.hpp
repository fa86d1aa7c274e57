#pragma once
// A running `qgpu serve` in-process: one small simulated dataset loaded on the cpu backend, served on an
// ephemeral loopback port, plus an httplib client for it.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"
#include "remote/server.hpp"
#include "support/temp_files.hpp"

namespace qgpu::test {

// A float32 response body (format=f32) as floats.
inline std::vector<float> floats(const std::string& body) {
  std::vector<float> v(body.size() / sizeof(float));
  std::memcpy(v.data(), body.data(), v.size() * sizeof(float));
  return v;
}

// The sample file, written once per test binary: 8x8 scan, 32x32 detector, uint16.
inline const std::string& remote_sample_path() {
  static const std::string path = [] {
    sample::SampleSpec s;
    s.scan_rows = s.scan_cols = 8;
    s.det_rows = s.det_cols = 32;
    s.threads = 2;
    // One file per process: ctest runs the tests of this binary as parallel processes.
    const std::string p = (temp_dir() / ("remote_service_sample_" + std::to_string(::getpid()) + ".h5")).string();
    sample::write_sample(p, s);
    return p;
  }();
  return path;
}

inline Dataset load_cpu(const std::string& path) {
  io::LoadOptions o;
  o.backend = "cpu";
  return io::load(path, o);
}

class RunningServer {
 public:
  explicit RunningServer(remote::ServeOptions options = {}, Dataset ds = load_cpu(remote_sample_path()))
      : ds_(ds) {
    options.host = "127.0.0.1";
    options.port = 0;
    options.log_requests = false;
    remote::Catalog catalog;
    id_ = catalog.add("sample", ds);
    server_ = std::make_unique<remote::Server>(std::move(catalog), options);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->listen(); });
  }
  ~RunningServer() {
    server_->stop();
    thread_.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    return c;
  }
  std::string api(const std::string& rest) const { return "/api/datasets/" + id_ + rest; }
  int port() const { return port_; }
  const Dataset& dataset() const { return ds_; }

 private:
  Dataset ds_;
  std::string id_;
  std::unique_ptr<remote::Server> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace qgpu::test
