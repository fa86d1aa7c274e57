#include "live/receive.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/error.hpp"
#include "io/merlin/mib_header.hpp"
#include "live/message_queue.hpp"
#include "live/protocol/frame_bytes.hpp"
#include "live/protocol/mpx.hpp"
#include "live/protocol/stream1.hpp"
#include "live/protocol/stream2.hpp"

namespace qgpu::live {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPollMs = 100;

std::string zmq_address(const Endpoint& e) { return "tcp://" + e.host + ":" + std::to_string(e.port); }

// Series bookkeeping shared by the receivers: the open series, the count of ended ones.
struct Tracker {
  std::optional<std::string> open;
  std::size_t ended = 0;
};

// Checks an image against the series' start; false (and the sink told) when it does not belong.
bool image_fits(Sink& sink, const SeriesInfo& s, std::uint64_t index, std::size_t rows, std::size_t cols, DType dtype) {
  if (rows == s.det_rows && cols == s.det_cols && dtype == s.dtype) return true;
  sink.problem("series " + s.series_id + ": image " + std::to_string(index) + " is " + std::to_string(rows) + " x " +
               std::to_string(cols) + " " + dtype_name(dtype) + "; the series announced " + std::to_string(s.det_rows) +
               " x " + std::to_string(s.det_cols) + " " + dtype_name(s.dtype) + ": skipped");
  return false;
}

// A frame to the sink, decoding plain-LZ4 frames on the host first.
void deliver(Sink& sink, std::uint64_t index, const std::uint8_t* data, std::size_t size, const std::string& comp,
             const SeriesInfo& s, std::vector<std::uint8_t>& scratch) {
  if (comp == "lz4") {
    scratch.resize(s.frame_bytes());
    try {
      frame_bytes::decode_lz4(data, size, scratch.data(), scratch.size());
    } catch (const FormatError& e) {
      sink.problem("series " + s.series_id + ": image " + std::to_string(index) + ": " + e.what() + ": skipped");
      return;
    }
    sink.frame({index, scratch.data(), scratch.size(), io::FrameCodecKind::plain});
    return;
  }
  sink.frame({index, data, size, comp.empty() ? io::FrameCodecKind::plain : io::FrameCodecKind::bitshuffle});
}

}  // namespace

std::string Endpoint::url() const {
  const std::string scheme = protocol == "dectris-v2" ? "dectris" : protocol;
  return scheme + "://" + host + ":" + std::to_string(port);
}

int default_port(const std::string& protocol) {
  if (protocol == "dectris-v2") return 31001;
  if (protocol == "dectris-v1") return 9999;
  if (protocol == "merlin") return 6342;
  throw InvalidArgument("unknown live protocol '" + protocol + "' (dectris-v2, dectris-v1 or merlin)");
}

Endpoint parse_endpoint(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos)
    throw InvalidArgument("live source '" + url + "': give dectris://HOST[:PORT], dectris-v1://HOST[:PORT] or "
                          "merlin://HOST[:PORT]");
  const std::string scheme = url.substr(0, sep);
  Endpoint e;
  if (scheme == "dectris" || scheme == "dectris-v2") e.protocol = "dectris-v2";
  else if (scheme == "dectris-v1") e.protocol = "dectris-v1";
  else if (scheme == "merlin") e.protocol = "merlin";
  else
    throw InvalidArgument("live source '" + url + "': unknown scheme '" + scheme +
                          "' (dectris, dectris-v1 or merlin)");
  std::string rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']') == std::string::npos) {
    e.host = rest.substr(0, colon);
    const std::string p = rest.substr(colon + 1);
    char* end = nullptr;
    const long v = std::strtol(p.c_str(), &end, 10);
    if (p.empty() || *end || v < 1 || v > 65535)
      throw InvalidArgument("live source '" + url + "': port '" + p + "' is not 1..65535");
    e.port = int(v);
  } else {
    e.host = rest;
    e.port = default_port(e.protocol);
  }
  if (e.host.empty()) throw InvalidArgument("live source '" + url + "': no host");
  return e;
}

Receiver::Receiver(Endpoint endpoint, Sink& sink, ReceiveOptions options)
    : endpoint_(std::move(endpoint)), sink_(sink), options_(std::move(options)) {}

void Receiver::run() {
  if (endpoint_.protocol == "dectris-v2") return run_dectris(true);
  if (endpoint_.protocol == "dectris-v1") return run_dectris(false);
  if (endpoint_.protocol == "merlin") return run_merlin();
  throw InvalidArgument("unknown live protocol '" + endpoint_.protocol + "'");
}

namespace {

// A DECTRIS message of either stream version, as the receiver acts on it.
struct DectrisEvent {
  enum Kind { start, image, end } kind = end;
  std::string series;
  SeriesInfo info;                 // start
  std::uint64_t index = 0;         // image
  std::size_t rows = 0, cols = 0;
  DType dtype = DType::u16;
  std::string compression;         // "" (plain), "bslz4", "lz4"
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

// Fills `e` (reused: a start's SeriesInfo is moved in only for a start).
void event_of(stream2::Message& m, DectrisEvent& e) {
  e.series = std::to_string(m.series_id);
  e.kind = m.kind == stream2::Kind::start ? DectrisEvent::start
           : m.kind == stream2::Kind::image ? DectrisEvent::image : DectrisEvent::end;
  if (m.kind == stream2::Kind::start) e.info = std::move(m.start);
  e.index = m.image.image_id;
  e.rows = m.image.rows;
  e.cols = m.image.cols;
  e.dtype = m.image.dtype;
  e.compression = m.image.compression;
  e.data = m.image.data;
  e.size = m.image.size;
}

void event_of(stream1::Message&& m, DectrisEvent& e) {
  e.series = std::to_string(m.series);
  e.kind = m.kind == stream1::Kind::header ? DectrisEvent::start
           : m.kind == stream1::Kind::image ? DectrisEvent::image : DectrisEvent::end;
  if (m.kind == stream1::Kind::header) e.info = std::move(m.start);
  e.index = m.frame;
  e.rows = m.rows;
  e.cols = m.cols;
  e.dtype = m.dtype;
  e.compression = m.encoding == "<" ? "" : m.encoding == "lz4<" ? "lz4" : "bslz4";
  e.data = m.blob.data;
  e.size = m.blob.size;
}

}  // namespace

namespace {

// One received DECTRIS message, kept alive until the sink has it (its decoded event points into it).
struct Received {
  zmq::message_t first;
  std::vector<zmq::message_t> more;  // stream V1: the other parts
  std::size_t number = 0;            // the receiver's count (named in problems)
  std::size_t bytes() const {
    std::size_t n = first.size();
    for (const auto& m : more) n += m.size();
    return n;
  }
};

// Receives one whole message (every part); false when nothing came within the socket's timeout.
bool recv_message(zmq::socket_t& sock, Received& r, const Endpoint& e) {
  r.more.clear();
  try {
    if (!sock.recv(r.first)) return false;
    bool more = r.first.more();
    while (more) {  // the parts of a message arrive together
      zmq::message_t m;
      if (!sock.recv(m)) break;
      more = m.more();
      r.more.push_back(std::move(m));
    }
  } catch (const zmq::error_t& ex) {
    throw IoError("receiving from " + e.url() + ": " + ex.what());
  }
  return true;
}

// A message decoded, or why it could not be.
struct Decoded {
  DectrisEvent event;
  std::string error;  // "" = decoded
  std::size_t number = 0;
  std::uint64_t dropped_before = 0;  // messages the socket thread dropped just before this one
};

// A decoding thread's scratch, reused from message to message.
struct Scratch {
  stream2::Message v2;
  std::vector<stream1::Part> views;
};

void decode_into(const Received& r, bool v2, const std::string& channel, Scratch& sc, Decoded& d) {
  d.number = r.number;
  d.error.clear();
  try {
    if (v2) {
      if (!r.more.empty())
        throw FormatError("DECTRIS stream V2 message of " + std::to_string(1 + r.more.size()) + " parts");
      stream2::decode(static_cast<const std::uint8_t*>(r.first.data()), r.first.size(), channel, sc.v2);
      event_of(sc.v2, d.event);
    } else {
      sc.views.clear();
      sc.views.push_back({static_cast<const std::uint8_t*>(r.first.data()), r.first.size()});
      for (const auto& p : r.more) sc.views.push_back({static_cast<const std::uint8_t*>(p.data()), p.size()});
      event_of(stream1::decode(sc.views), d.event);
    }
  } catch (const std::exception& ex) {
    d.error = ex.what();
    if (d.error.empty()) d.error = "undecodable";
  }
}

// The series logic of the DECTRIS receivers: decoded messages, in stream order, to the sink.
class DectrisDispatch {
 public:
  DectrisDispatch(Sink& sink, const ReceiveOptions& o) : sink_(sink), o_(o) {}
  // True when the series count is reached (the receiver returns).
  bool operator()(Decoded& d) {
    if (d.dropped_before)
      sink_.problem(std::to_string(d.dropped_before) + " message(s) before message " + std::to_string(d.number) +
                    " dropped: the parsers fell behind (the receive queue stayed full for " +
                    std::to_string(o_.queue_wait_ms) + " ms)");
    if (!d.error.empty()) {
      sink_.problem("message " + std::to_string(d.number) + ": " + d.error + ": skipped");
      return false;
    }
    DectrisEvent& e = d.event;
    try {  // whatever one message does, the stream goes on
      switch (e.kind) {
        case DectrisEvent::start:
          current_ = std::move(e.info);
          t_.open = e.series;
          sink_.series_start(current_);
          break;
        case DectrisEvent::image:
          if (!t_.open || *t_.open != e.series) {
            sink_.problem("image " + std::to_string(e.index) + " of series " + e.series + " while " +
                          (t_.open ? "series " + *t_.open + " is open" : "no series is open") + ": skipped");
            break;
          }
          if (image_fits(sink_, current_, e.index, e.rows, e.cols, e.dtype))
            deliver(sink_, e.index, e.data, e.size, e.compression, current_, scratch_);
          break;
        case DectrisEvent::end:
          sink_.series_end(e.series, "");
          if (t_.open && *t_.open == e.series) {
            t_.open.reset();
            if (o_.series && ++t_.ended >= o_.series) return true;
          }
          break;
      }
    } catch (const std::exception& ex) {
      sink_.problem("message " + std::to_string(d.number) + ": " + ex.what() + ": skipped");
    }
    return false;
  }
  // The receiver stops: the open series ends ("stopped").
  void finish() {
    if (t_.open) sink_.series_end(*t_.open, "stopped");
    t_.open.reset();
  }

 private:
  Sink& sink_;
  const ReceiveOptions& o_;
  Tracker t_;
  SeriesInfo current_;
  std::vector<std::uint8_t> scratch_;
};

}  // namespace

void validate(const ReceiveOptions& o) {
  if (o.parse_threads > 64)
    throw InvalidArgument("parse_threads " + std::to_string(o.parse_threads) + ": 0 (inline) .. 64");
  if (o.parse_batch == 0 || o.parse_batch > 65536)
    throw InvalidArgument("parse_batch " + std::to_string(o.parse_batch) + ": 1..65536 messages");
  if (o.parse_linger_us > 1000000)
    throw InvalidArgument("parse_linger_us " + std::to_string(o.parse_linger_us) + ": at most 1000000 (1 s)");
  if (o.queue_messages == 0) throw InvalidArgument("queue_messages 0: at least 1");
  if (o.queue_bytes < 4096) throw InvalidArgument("queue_bytes " + std::to_string(o.queue_bytes) + ": at least 4096");
  if (o.rcvhwm < 0 || o.rcvbuf < 0) throw InvalidArgument("rcvhwm and rcvbuf: 0 (the default) or positive");
}

void Receiver::run_dectris(bool v2) {
  validate(options_);
  zmq::context_t ctx(1);
  zmq::socket_t sock(ctx, zmq::socket_type::pull);
  sock.set(zmq::sockopt::rcvtimeo, kPollMs);
  sock.set(zmq::sockopt::linger, 0);
  if (options_.rcvhwm > 0) sock.set(zmq::sockopt::rcvhwm, options_.rcvhwm);
  if (options_.rcvbuf > 0) sock.set(zmq::sockopt::rcvbuf, options_.rcvbuf);
  try {
    sock.connect(zmq_address(endpoint_));
  } catch (const zmq::error_t& e) {
    throw IoError("cannot connect to " + endpoint_.url() + ": " + e.what());
  }
  DectrisDispatch dispatch(sink_, options_);
  auto last = Clock::now();
  const auto idle = [&] {
    return options_.idle_timeout_s > 0 &&
           std::chrono::duration<double>(Clock::now() - last).count() > options_.idle_timeout_s;
  };
  if (options_.parse_threads == 0) {  // inline: the socket thread decodes and delivers each message
    Received r;
    Decoded d;
    Scratch sc;
    while (!stop_) {
      if (!recv_message(sock, r, endpoint_)) {
        if (idle()) break;
        continue;
      }
      last = Clock::now();
      r.number = ++messages_;
      decode_into(r, v2, options_.channel, sc, d);
      if (dispatch(d)) return;
    }
    dispatch.finish();
    return;
  }
  // Split: this thread only receives; parse_threads parsers decode batches in parallel and hand them to the sink
  // one batch at a time, in the order received (the turnstile).
  using Queue = MessageQueue<Received>;
  Queue queue(options_.queue_messages, options_.queue_bytes);
  Turnstile turn;
  std::atomic<bool> done{false};  // the series count is reached
  const auto linger = std::chrono::microseconds(options_.parse_linger_us);
  const auto parser = [&] {
    std::vector<Queue::Slot> slots;
    std::vector<Decoded> decoded;
    Scratch sc;
    std::uint64_t b = 0;
    try {
      while (queue.pop(options_.parse_batch, slots, &b, linger)) {
        if (decoded.size() < slots.size()) decoded.resize(slots.size());
        if (!done && !stop_)
          for (std::size_t i = 0; i < slots.size(); ++i) {
            decode_into(slots[i].item, v2, options_.channel, sc, decoded[i]);
            decoded[i].dropped_before = slots[i].dropped_before;
          }
        if (!turn.wait(b)) break;
        for (std::size_t i = 0; i < slots.size() && !done && !stop_; ++i)
          if (dispatch(decoded[i])) done = true;
        turn.done(b);
      }
    } catch (...) {  // dispatch names every exception; this is the last guard of the thread
      turn.cancel();
      done = true;
    }
  };
  std::vector<std::thread> parsers;
  const auto join = [&](bool drain) {
    if (!drain) turn.cancel();
    queue.close();
    for (auto& th : parsers) th.join();
    parsers.clear();
  };
  try {
    for (unsigned i = 0; i < options_.parse_threads; ++i) parsers.emplace_back(parser);
    const auto wait = std::chrono::milliseconds(options_.queue_wait_ms);
    while (!stop_ && !done) {
      Received r;
      if (!recv_message(sock, r, endpoint_)) {
        if (idle()) break;
        continue;
      }
      last = Clock::now();
      r.number = ++messages_;
      const std::size_t bytes = r.bytes();
      if (!queue.push(std::move(r), bytes, wait)) ++dropped_;
    }
  } catch (...) {
    join(false);
    throw;
  }
  join(!stop_);  // what was received is delivered, unless stopped
  if (done) return;
  if (const std::uint64_t n = queue.take_pending_drops())
    sink_.problem(std::to_string(n) + " message(s) dropped at the end: the parsers fell behind (the receive queue "
                  "stayed full for " + std::to_string(options_.queue_wait_ms) + " ms)");
  dispatch.finish();
}

namespace {

// A TCP connection to the Merlin data port, reads with a short timeout so that stop() is seen.
class Tcp {
 public:
  ~Tcp() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool open() const { return fd_ >= 0; }
  // True when connected; false when refused (the Merlin not listening yet). IoError when the host does not resolve.
  bool connect(const Endpoint& e) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(e.host.c_str(), std::to_string(e.port).c_str(), &hints, &res);
    if (rc != 0) throw IoError("cannot resolve '" + e.host + "' (" + e.url() + "): " + gai_strerror(rc));
    for (addrinfo* a = res; a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        timeval tv{0, kPollMs * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        int big = 8 << 20;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        fd_ = fd;
        break;
      }
      ::close(fd);
    }
    freeaddrinfo(res);
    return fd_ >= 0;
  }
  // Reads exactly n bytes: 1 done, 0 the peer closed, -1 stopped.
  int read_exact(std::uint8_t* p, std::size_t n, const std::atomic<bool>& stop) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd_, p + got, n - got, 0);
      if (r > 0) {
        got += std::size_t(r);
        continue;
      }
      if (r == 0) return 0;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        if (stop) return -1;
        continue;
      }
      return 0;  // reset: as closed
    }
    return 1;
  }

 private:
  int fd_ = -1;
};

}  // namespace

void Receiver::run_merlin() {
  Tracker t;
  std::size_t acquisitions = 0;
  std::optional<io::merlin::AcquisitionHeader> hdr;
  std::string hdr_text_source;
  SeriesInfo current;
  std::uint64_t first_sequence = 0, delivered = 0;
  std::vector<std::uint8_t> payload;
  auto last = Clock::now();
  const auto idle = [&] {
    return options_.idle_timeout_s > 0 &&
           std::chrono::duration<double>(Clock::now() - last).count() > options_.idle_timeout_s;
  };
  const auto end_open = [&](const std::string& reason) -> bool {  // true: the series count is reached
    if (!t.open) return false;
    sink_.series_end(*t.open, reason);
    t.open.reset();
    return options_.series && ++t.ended >= options_.series;
  };
  while (!stop_) {
    Tcp tcp;
    while (!stop_ && !tcp.connect(endpoint_)) {
      if (idle()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
    }
    if (stop_) break;
    std::uint8_t prefix[mpx::kPrefixBytes];
    for (;;) {
      int r = tcp.read_exact(prefix, sizeof prefix, stop_);
      if (r < 0) {
        if (idle()) {
          end_open("stopped");
          return;
        }
        if (stop_) break;
        continue;
      }
      if (r == 0) break;  // closed
      last = Clock::now();
      std::uint64_t n = 0;
      try {
        n = mpx::payload_bytes(prefix);
      } catch (const FormatError& e) {
        sink_.problem(std::string(e.what()) + ": the stream is out of step; connecting again");
        break;
      }
      payload.resize(std::size_t(n));
      do {
        r = tcp.read_exact(payload.data(), payload.size(), stop_);
      } while (r < 0 && !stop_);
      if (r <= 0) break;
      const std::size_t k = ++messages_;
      if (n >= 4 && std::memcmp(payload.data(), "HDR,", 4) == 0) {
        if (end_open(delivered >= current.frames && current.frames ? "" : "restart: a new acquisition header came"))
          return;
        try {
          hdr = io::merlin::parse_acquisition_header(payload.data(), payload.size(), "Merlin acquisition header");
        } catch (const FormatError& e) {
          sink_.problem("message " + std::to_string(k) + ": " + e.what() + ": the acquisition's frames need a scan "
                        "shape given");
          hdr.reset();
        }
        first_sequence = 0;
        delivered = 0;
        continue;
      }
      if (n < 4 || std::memcmp(payload.data(), "MQ1,", 4) != 0) {
        sink_.problem("message " + std::to_string(k) + ": neither an acquisition header (HDR,) nor a frame (MQ1,): "
                      "skipped");
        continue;
      }
      io::merlin::FrameHeader fh;
      io::merlin::PixelFormat pf;
      try {
        const io::merlin::Where where{"Merlin stream " + endpoint_.url(), delivered, 0};
        fh = io::merlin::parse_frame_header(payload.data(), payload.size(), where);
        pf = io::merlin::pixel_format(fh, hdr ? hdr->counter_depth : 0, where);
      } catch (const Error& e) {
        sink_.problem("message " + std::to_string(k) + ": " + e.what() + ": skipped");
        continue;
      }
      if (payload.size() != fh.header_bytes + pf.payload_bytes) {
        sink_.problem("message " + std::to_string(k) + ": frame " + std::to_string(fh.sequence) + " holds " +
                      std::to_string(payload.size() - fh.header_bytes) + " pixel bytes; its header says " +
                      std::to_string(pf.payload_bytes) + ": skipped");
        continue;
      }
      try {
      if (!t.open) {
        current = SeriesInfo{};
        current.protocol = "merlin";
        current.series_id = std::to_string(++acquisitions);
        current.det_rows = pf.rows;
        current.det_cols = pf.cols;
        current.dtype = pf.out_dtype;
        current.codec.kind = io::FrameCodecKind::merlin;
        current.codec.merlin = pf;
        if (hdr) {
          current.frames = hdr->frames_in_acquisition.value_or(0);
          if (hdr->scan_x && hdr->scan_y) {
            current.scan_rows = std::size_t(*hdr->scan_y);
            current.scan_cols = std::size_t(*hdr->scan_x);
            current.scan_shape_source = "acquisition header ScanY x ScanX";
          } else if (const std::uint64_t fpt = hdr->frames_per_trigger.value_or(0);
                     fpt > 1 && current.frames && current.frames % fpt == 0) {
            // the file reader's rule: one trigger per scan row
            current.scan_rows = std::size_t(current.frames / fpt);
            current.scan_cols = std::size_t(fpt);
            current.scan_shape_source = "acquisition header Frames per Trigger (one trigger per scan row)";
          }
          for (const auto& [key, value] : hdr->entries) current.metadata[key] = value;
        }
        first_sequence = fh.sequence;
        t.open = current.series_id;
        sink_.series_start(current);
      }
      if (fh.sequence < first_sequence) {
        sink_.problem("frame sequence " + std::to_string(fh.sequence) + " before the acquisition's first (" +
                      std::to_string(first_sequence) + "): skipped");
        continue;
      }
      sink_.frame({fh.sequence - first_sequence, payload.data() + fh.header_bytes, std::size_t(pf.payload_bytes),
                   io::FrameCodecKind::merlin});
      } catch (const std::exception& e) {  // whatever one message does, the stream goes on
        sink_.problem("message " + std::to_string(k) + ": " + e.what() + ": skipped");
        continue;
      }
      ++delivered;
      if (current.frames && delivered >= current.frames && end_open("")) return;
    }
    if (t.open && !stop_) {
      if (end_open("disconnected")) return;
    }
  }
  end_open("stopped");
}

}  // namespace qgpu::live
