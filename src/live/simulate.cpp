#include "live/simulate.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/error.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/merlin/mib_decode.hpp"
#include "io/merlin/mib_writer.hpp"
#include "live/protocol/mpx.hpp"
#include "live/protocol/stream1.hpp"
#include "live/protocol/stream2.hpp"
#include "live/receive.hpp"

namespace qgpu::live {

namespace {

using Clock = std::chrono::steady_clock;

using Source = StreamSource;

void read_at(int fd, std::uint8_t* p, std::size_t n, std::uint64_t off, const std::string& file) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p + got, n - got, off_t(off + got));
    if (r <= 0) throw IoError("cannot read '" + file + "' at byte " + std::to_string(off + got));
    got += std::size_t(r);
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Source dectris_source(const std::string& file, const SimulateOptions& o) {
  io::LoadOptions lo;
  lo.backend = "cpu";
  lo.scan_rows = o.scan_rows;
  lo.scan_cols = o.scan_cols;
  const io::LoadPlan plan = io::plan_load(file, lo);
  const io::FileInfo& fi = plan.info;
  Source s;
  s.info.det_rows = fi.shape.det_rows;
  s.info.det_cols = fi.shape.det_cols;
  s.info.dtype = fi.dtype;
  if (fi.dtype != DType::u8 && fi.dtype != DType::u16 && fi.dtype != DType::u32)
    throw DTypeError("a DECTRIS stream carries uint8, uint16 or uint32 counts; '" + file + "' holds " +
                     dtype_name(fi.dtype));
  s.info.frames = fi.shape.frames();
  s.info.scan_rows = fi.shape.scan_rows;
  s.info.scan_cols = fi.shape.scan_cols;
  if (auto it = fi.calibration.find("energy_kev"); it != fi.calibration.end() && it->is_number())
    s.energy_ev = it->get<double>() * 1e3;
  bool verbatim = fi.codec.kind == io::FrameCodecKind::bitshuffle && fi.one_frame_per_chunk && !fi.swap_bytes();
  if (verbatim) verbatim = io::bitshuffle_params(fi).compression == io::codec::BlockCompression::lz4;
  if (verbatim) {
    const io::ChunkSources cs = io::locate_chunks(plan);
    std::vector<Fd> fds(cs.files.size());
    for (std::size_t i = 0; i < cs.files.size(); ++i) {
      fds[i].fd = ::open(cs.files[i].c_str(), O_RDONLY | O_CLOEXEC);
      if (fds[i].fd < 0) throw IoError("cannot open '" + cs.files[i] + "'");
    }
    s.frames.resize(s.info.frames);
    for (std::size_t k = 0; k < cs.chunks.size(); ++k) {
      const io::FrameChunk& c = cs.chunks[k];
      auto& f = s.frames[cs.frames[k]];
      f.resize(c.size);
      read_at(fds[c.file].fd, f.data(), f.size(), c.offset, cs.files[c.file]);
    }
    s.how = "verbatim chunks of " + fi.reader;
    return s;
  }
  const Dataset ds = io::load(file, lo);
  io::codec::BitshuffleParams p;
  p.elem_size = dtype_size(fi.dtype);
  p.block_elems = io::bitshuffle_default_block(p.elem_size);
  io::codec::encode_chunks(p, fi.shape.frame_pixels(), ds.host_bytes().data(), s.info.frames, s.frames);
  s.how = "encoded (bitshuffle+LZ4) from " + fi.reader;
  return s;
}

Source merlin_source(const std::string& file, const SimulateOptions& o) {
  io::SourceOptions so;
  so.scan_rows = o.scan_rows;
  so.scan_cols = o.scan_cols;
  so.need = io::ScanShapeNeed::optional;
  const io::FileInfo fi = io::inspect(file, so);
  Source s;
  s.info.det_rows = fi.shape.det_rows;
  s.info.det_cols = fi.shape.det_cols;
  s.info.frames = fi.frames;
  s.info.scan_rows = fi.shape.scan_rows;
  s.info.scan_cols = fi.shape.scan_cols;
  if (fi.reader == "merlin") {
    std::vector<Fd> fds(fi.records.files.size());
    for (std::size_t i = 0; i < fds.size(); ++i) {
      fds[i].fd = ::open(fi.records.files[i].c_str(), O_RDONLY | O_CLOEXEC);
      if (fds[i].fd < 0) throw IoError("cannot open '" + fi.records.files[i] + "'");
    }
    for (const io::RecordRun& r : fi.records.runs) {
      const std::uint64_t header = r.stride - r.bytes;
      for (std::uint64_t k = 0; k < r.frames; ++k) {
        std::vector<std::uint8_t> f(r.stride);
        read_at(fds[r.file].fd, f.data(), f.size(), r.offset + k * r.stride - header, fi.records.files[r.file]);
        s.frames.push_back(std::move(f));
      }
    }
    const auto hdr = fi.metadata.find("hdr_file");
    if (hdr != fi.metadata.end() && hdr->is_string()) {
      std::ifstream in(hdr->get<std::string>(), std::ios::binary);
      s.hdr.assign(std::istreambuf_iterator<char>(in), {});
    }
    if (s.hdr.empty()) {
      io::merlin::MibWriteSpec spec;
      spec.rows = std::uint32_t(s.info.det_rows);
      spec.cols = std::uint32_t(s.info.det_cols);
      s.hdr = io::merlin::format_acquisition_header(spec, s.info.frames, 0, s.info.scan_cols, s.info.scan_rows);
    }
    s.how = "verbatim .mib frames";
    return s;
  }
  io::LoadOptions lo;
  lo.backend = "cpu";
  lo.scan_rows = o.scan_rows;
  lo.scan_cols = o.scan_cols;
  const Dataset ds = io::load(file, lo);
  io::merlin::MibWriteSpec spec;
  spec.rows = std::uint32_t(ds.shape().det_rows);
  spec.cols = std::uint32_t(ds.shape().det_cols);
  switch (ds.dtype()) {
    case DType::u8: spec.counter_depth = 6; break;
    case DType::u16: spec.counter_depth = 12; break;
    case DType::u32: spec.counter_depth = 24; break;
    default: throw DTypeError("a Merlin stream carries counts; '" + file + "' holds " + dtype_name(ds.dtype()));
  }
  s.info.scan_rows = ds.shape().scan_rows;
  s.info.scan_cols = ds.shape().scan_cols;
  const io::merlin::PixelFormat pf = io::merlin::writer_format(spec);
  const std::size_t fb = ds.shape().frame_pixels() * dtype_size(ds.dtype());
  for (std::uint64_t k = 0; k < s.info.frames; ++k) {
    const std::string head = io::merlin::format_frame_header(io::merlin::writer_header(spec, k + 1));
    std::vector<std::uint8_t> f(head.begin(), head.end());
    f.resize(head.size() + pf.payload_bytes);
    io::merlin::encode_frame_host(pf, ds.host_bytes().data() + k * fb, f.data() + head.size());
    s.frames.push_back(std::move(f));
  }
  s.hdr = io::merlin::format_acquisition_header(spec, s.info.frames, s.info.scan_cols, s.info.scan_cols,
                                                s.info.scan_rows);
  s.how = "encoded (Merlin binary " + std::to_string(spec.counter_depth) + "-bit) from " + fi.reader;
  return s;
}

// The order frames go out in, with the faults asked for.
std::vector<std::uint64_t> send_order(std::uint64_t frames, const SimulateOptions& o) {
  const std::set<std::uint64_t> skip(o.skip.begin(), o.skip.end()), dup(o.duplicate.begin(), o.duplicate.end());
  std::vector<std::uint64_t> order;
  for (std::uint64_t i = 0; i < frames; ++i) {
    const std::uint64_t k = o.swap_pairs ? (i % 2 == 0 ? (i + 1 < frames ? i + 1 : i) : i - 1) : i;
    if (skip.count(k)) continue;
    order.push_back(k);
    if (dup.count(k)) order.push_back(k);
  }
  return order;
}

std::vector<std::uint8_t> corrupted(std::vector<std::uint8_t> f) {
  // Keep the 12-byte header (the size still says a frame), ruin the first block's length and its bytes.
  for (std::size_t i = 12; i < f.size() && i < 64; ++i) f[i] = 0xff;
  return f;
}

class Pacer {
 public:
  explicit Pacer(double rate) : rate_(rate), t0_(Clock::now()) {}
  void wait(std::uint64_t sent) {
    if (rate_ <= 0) return;
    std::this_thread::sleep_until(t0_ + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(double(sent) / rate_)));
  }

 private:
  double rate_;
  Clock::time_point t0_;
};

std::vector<std::vector<std::uint8_t>> single(std::vector<std::uint8_t> m) {
  std::vector<std::vector<std::uint8_t>> v;
  v.push_back(std::move(m));
  return v;
}

bool stopped(const std::atomic<bool>* stop) { return stop && stop->load(); }

// Sends one ZeroMQ message (multipart when several), retrying while the peer is absent until stop or the timeout.
void zsend(zmq::socket_t& sock, const std::vector<std::vector<std::uint8_t>>& parts, const std::atomic<bool>* stop,
           double timeout_s, Clock::time_point since) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto flags = i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    for (;;) {
      if (sock.send(zmq::buffer(parts[i].data(), parts[i].size()), flags)) break;
      if (stopped(stop)) return;
      if (std::chrono::duration<double>(Clock::now() - since).count() > timeout_s)
        throw IoError("no receiver took the stream within " + std::to_string(timeout_s) + " s");
    }
  }
}

SimulateReport run_dectris(const Source& src, const SimulateOptions& o, const std::atomic<bool>* stop) {
  zmq::context_t ctx(1);
  zmq::socket_t sock(ctx, zmq::socket_type::push);
  sock.set(zmq::sockopt::sndtimeo, 100);
  sock.set(zmq::sockopt::linger, 10000);
  const int port = o.port ? o.port : default_port(o.protocol);
  try {
    sock.bind("tcp://" + o.host + ":" + std::to_string(port));
  } catch (const zmq::error_t& e) {
    throw IoError("cannot bind tcp://" + o.host + ":" + std::to_string(port) + ": " + e.what());
  }
  const bool v2 = o.protocol == "dectris-v2";
  SeriesInfo info = src.info;
  if (!o.announce_scan_shape) info.scan_rows = info.scan_cols = 0;
  SimulateReport rep;
  rep.source = src.how;
  const std::set<std::uint64_t> bad(o.corrupt.begin(), o.corrupt.end());
  const std::string comp = "bslz4", enc = "bs" + std::to_string(8 * dtype_size(info.dtype)) + "-lz4<";
  const auto since = Clock::now();
  const auto one = [&](const std::vector<std::vector<std::uint8_t>>& parts) {
    zsend(sock, parts, stop, o.connect_timeout_s, since);
    for (const auto& p : parts) rep.bytes_sent += p.size();
  };
  if (o.stale_end_first) one(v2 ? single(stream2::encode_end(0)) : stream1::encode_end(0));
  auto t0 = Clock::now();
  std::optional<Pacer> pace;
  std::uint64_t series = 0;
  for (std::size_t rpt = 0; rpt < std::max<std::size_t>(o.repeat, 1) && !stopped(stop); ++rpt) {
    ++series;
    one(v2 ? single(stream2::encode_start(series, info, src.energy_ev, {}))
           : stream1::encode_header(series, info, src.energy_ev));
    if (!pace) {  // the clock starts once a receiver took the first message
      t0 = Clock::now();
      pace.emplace(o.rate);
    }
    std::uint64_t in_series = 0;
    for (std::uint64_t k : send_order(info.frames, o)) {
      if (stopped(stop)) break;
      if (o.restart_after && series == 1 && in_series == o.restart_after) {
        ++series;  // the detector restarts: a new start, no end for the first
        one(v2 ? single(stream2::encode_start(series, info, src.energy_ev, {}))
               : stream1::encode_header(series, info, src.energy_ev));
      }
      pace->wait(rep.frames_sent);
      const std::vector<std::uint8_t> damaged = bad.count(k) ? corrupted(src.frames[k]) : std::vector<std::uint8_t>{};
      const std::vector<std::uint8_t>& f = bad.count(k) ? damaged : src.frames[k];
      if (v2)
        one({stream2::encode_image(series, k, info.det_rows, info.det_cols, info.dtype, comp, f.data(), f.size())});
      else
        one(stream1::encode_image(series, k, info.det_rows, info.det_cols, info.dtype, enc, f.data(), f.size()));
      ++rep.frames_sent;
      ++in_series;
    }
    one(v2 ? single(stream2::encode_end(series)) : stream1::encode_end(series));
  }
  rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rep.frames_per_second = rep.seconds > 0 ? double(rep.frames_sent) / rep.seconds : 0;
  return rep;
}

bool send_all(int fd, const std::vector<std::uint8_t>& m) {
  std::size_t done = 0;
  while (done < m.size()) {
    const ssize_t r = ::send(fd, m.data() + done, m.size() - done, MSG_NOSIGNAL);
    if (r <= 0) return false;
    done += std::size_t(r);
  }
  return true;
}

SimulateReport run_merlin(const Source& src, const SimulateOptions& o, const std::atomic<bool>* stop) {
  const int port = o.port ? o.port : default_port("merlin");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(o.host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    throw IoError("cannot resolve '" + o.host + "'");
  Fd lfd;
  lfd.fd = ::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  const int one = 1;
  setsockopt(lfd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (lfd.fd < 0 || ::bind(lfd.fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(lfd.fd, 4) != 0) {
    freeaddrinfo(res);
    throw IoError("cannot listen on " + o.host + ":" + std::to_string(port) + ": " + std::strerror(errno));
  }
  freeaddrinfo(res);
  SimulateReport rep;
  rep.source = src.how;
  const auto t_wait = Clock::now();
  const auto accept_one = [&]() -> int {
    for (;;) {
      pollfd p{lfd.fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) return ::accept(lfd.fd, nullptr, nullptr);
      if (stopped(stop)) return -1;
      if (std::chrono::duration<double>(Clock::now() - t_wait).count() > o.connect_timeout_s)
        throw IoError("no receiver connected to the Merlin data port " + std::to_string(port) + " within " +
                      std::to_string(o.connect_timeout_s) + " s");
    }
  };
  Fd conn;
  conn.fd = accept_one();
  if (conn.fd < 0) return rep;
  const auto t0 = Clock::now();
  Pacer pace(o.rate);
  const std::set<std::uint64_t> bad(o.corrupt.begin(), o.corrupt.end());
  for (std::size_t rpt = 0; rpt < std::max<std::size_t>(o.repeat, 1) && !stopped(stop); ++rpt) {
    const auto hdr = mpx::message(reinterpret_cast<const std::uint8_t*>(src.hdr.data()), src.hdr.size());
    if (!send_all(conn.fd, hdr)) throw IoError("the receiver closed the Merlin data connection");
    std::uint64_t in_series = 0;
    for (std::uint64_t k : send_order(src.info.frames, o)) {
      if (stopped(stop)) break;
      if (o.disconnect_after && rpt == 0 && in_series == o.disconnect_after) {
        ::close(conn.fd);  // the connection drops mid-acquisition; the receiver connects again
        conn.fd = accept_one();
        if (conn.fd < 0) return rep;
        break;             // and the next acquisition begins (with its header)
      }
      pace.wait(rep.frames_sent);
      std::vector<std::uint8_t> f = src.frames[k];
      if (bad.count(k)) f.resize(f.size() / 2);  // a short frame: its header's size disagrees
      if (!send_all(conn.fd, mpx::message(f.data(), f.size())))
        throw IoError("the receiver closed the Merlin data connection");
      rep.bytes_sent += f.size() + mpx::kPrefixBytes;
      ++rep.frames_sent;
      ++in_series;
    }
  }
  ::shutdown(conn.fd, SHUT_WR);
  char sink[256];
  while (!stopped(stop) && ::recv(conn.fd, sink, sizeof sink, 0) > 0) {
  }
  rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rep.frames_per_second = rep.seconds > 0 ? double(rep.frames_sent) / rep.seconds : 0;
  return rep;
}

}  // namespace

namespace {
void check_options(const SimulateOptions& o) {
  if (o.protocol != "dectris-v2" && o.protocol != "dectris-v1" && o.protocol != "merlin")
    throw InvalidArgument("simulate-detector: protocol '" + o.protocol + "' (dectris-v2, dectris-v1 or merlin)");
  if (o.rate < 0) throw InvalidArgument("simulate-detector: a negative rate");
}
}  // namespace

StreamSource stream_source(const std::string& file, const SimulateOptions& o) {
  check_options(o);
  return o.protocol == "merlin" ? merlin_source(file, o) : dectris_source(file, o);
}

SimulateReport simulate_detector(const StreamSource& src, const SimulateOptions& o, const std::atomic<bool>* stop) {
  check_options(o);
  return o.protocol == "merlin" ? run_merlin(src, o, stop) : run_dectris(src, o, stop);
}

SimulateReport simulate_detector(const std::string& file, const SimulateOptions& o, const std::atomic<bool>* stop) {
  const StreamSource src = stream_source(file, o);
  if (o.log)
    o.log("simulating " + o.protocol + " from '" + file + "' (" + src.how + "): " + std::to_string(src.info.frames) +
          " frames of " + std::to_string(src.info.det_rows) + " x " + std::to_string(src.info.det_cols) + " " +
          dtype_name(src.info.dtype));
  return simulate_detector(src, o, stop);
}

}  // namespace qgpu::live
