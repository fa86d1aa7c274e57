// Live acquisition throughput and latency (issue 28): a file's frames as DECTRIS stream V2 chunks,
//   memory:   fed straight to the acquisition (the receiver's Sink) as fast as it takes them: the decoder and the
//             products alone, no socket;
//   loopback: the simulator pushing over ZeroMQ on loopback (as fast as it can, then at fixed rates) into the V2
//             receiver and the acquisition, in one process.
//   receiver: (DECTRIS only) the simulator into the receiver and a sink that only copies each frame (the ring's
//             memcpy) and counts, once per --parse-threads value: the receiver's own rate, from the start message
//             to the end message.
// Each row: frames decoded per second over the series, dropped frames, the largest latency from a batch's oldest
// frame arriving to its products being updated, and the fraction of the time the worker was busy.
// usage: bench_live FILE [--backend cuda|cpu] [--rows N (the first N scan rows)] [--rates R1,R2,...] [--batch F]
//        [--ring-mib M] [--port P] [--protocol dectris-v2|dectris-v1|merlin] [--parse-threads P1,P2,...]
//        [--parse-batch B] [--parse-linger-us U] [--rcvhwm H] [--repeat K (the series sent K times: K x the frames per row)]
//   sim only: (DECTRIS only) the simulator encoding every message with no socket: its own ceiling.
//   cbor:     (DECTRIS only) the receiver's decoding of every image message alone (one thread, no socket).
//   zmq only: (DECTRIS only) the simulator pushing as fast as it can into a bare ZeroMQ PULL socket that only counts
//             messages: the ceiling of the simulator and loopback ZeroMQ, beside which the loopback rows are read.
//   loopback: the max-rate row once per --parse-threads value (default 0,1,2,4; 0 = the socket thread decodes each
//             message itself, P > 0 = the socket thread only receives and P parser threads decode, in order); the
//             fixed-rate rows with the receiver's default.
// With --protocol merlin the frames are the file's .mib frames (or the file encoded as Merlin binary frames) sent
// over the Merlin TCP data port.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "io/merlin/mib_header.hpp"
#include "live/acquisition.hpp"
#include "live/protocol/stream2.hpp"
#include "live/receive.hpp"
#include "live/simulate.hpp"
#include "bench_guard.hpp"

using namespace qgpu;
using namespace qgpu::live;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Row {
  std::string mode;
  std::string parsers = "-";
  double rate = 0;
  std::uint64_t frames = 0;
  double seconds = 0;
  Stats st;
};

void print(const Row& r, const std::string& backend) {
  std::printf("| %-8s | %-4s | %7s | %9s | %8llu | %10.0f | %7llu | %7.1f | %5.1f%% |\n", r.mode.c_str(),
              backend.c_str(), r.parsers.c_str(),
              r.rate > 0 ? std::to_string(static_cast<long long>(r.rate)).c_str() : "max",
              static_cast<unsigned long long>(r.st.frames_decoded), double(r.st.frames_decoded) / r.seconds,
              static_cast<unsigned long long>(r.st.dropped), r.st.max_latency_ms,
              100.0 * r.st.busy_seconds / std::max(r.seconds, 1e-9));
  std::fflush(stdout);
}

// The receiver alone: a sink that copies each frame into a buffer (what the ring does) and counts, nothing decoded.
class CopySink : public Sink {
 public:
  CopySink() : buf_(std::size_t(64) << 20) {}
  void series_start(const SeriesInfo&) override {
    if (t0 == 0) t0 = now_s();
  }
  void frame(const FrameView& f) override {
    if (f.size > buf_.size()) return;
    if (at_ + f.size > buf_.size()) at_ = 0;
    std::memcpy(buf_.data() + at_, f.data, f.size);
    at_ += f.size;
    ++frames;
  }
  void series_end(const std::string&, const std::string&) override { t1 = now_s(); }
  void problem(const std::string&) override { ++problems; }
  std::uint64_t frames = 0, problems = 0;
  double t0 = 0, t1 = 0;

 private:
  std::vector<std::uint8_t> buf_;
  std::size_t at_ = 0;
};

}  // namespace

static int bench_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_live FILE [--backend cuda|cpu] [--rows N] [--rates R,...] [--batch F] "
                         "[--ring-mib M] [--port P]\n");
    return 2;
  }
  const std::string file = argv[1];
  std::string backend = "cuda", rates = "0,120000,240000", protocol = "dectris-v2";
  std::string parse_threads = "0,1,2,4";
  std::size_t rows = 0, batch = 4096, ring_mib = 2048, parse_batch = ReceiveOptions{}.parse_batch, repeat = 1;
  int rcvhwm = 0;
  unsigned parse_linger_us = ReceiveOptions{}.parse_linger_us;
  int port = 31777;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--backend") backend = v;
    else if (k == "--rows") rows = std::stoul(v);
    else if (k == "--rates") rates = v;
    else if (k == "--batch") batch = std::stoul(v);
    else if (k == "--ring-mib") ring_mib = std::stoul(v);
    else if (k == "--port") port = std::stoi(v);
    else if (k == "--protocol") protocol = v;
    else if (k == "--parse-threads") parse_threads = v;
    else if (k == "--parse-batch") parse_batch = std::stoul(v);
    else if (k == "--parse-linger-us") parse_linger_us = unsigned(std::stoul(v));
    else if (k == "--rcvhwm") rcvhwm = std::stoi(v);
    else if (k == "--repeat") repeat = std::stoul(v);
  }
  SimulateOptions so;
  so.protocol = protocol;
  so.repeat = std::max<std::size_t>(repeat, 1);
  const bool merlin = protocol == "merlin";
  const double t0 = now_s();
  StreamSource src = stream_source(file, so);
  if (rows && rows < src.info.scan_rows) {
    src.frames.resize(rows * src.info.scan_cols);
    src.info.scan_rows = rows;
    src.info.frames = src.frames.size();
  }
  std::size_t bytes = 0;
  for (const auto& f : src.frames) bytes += f.size();
  std::printf("source: %s, %zu x %zu scan of %zu x %zu %s, %.2f GB of chunks (%s), read in %.1f s\n", file.c_str(),
              src.info.scan_rows, src.info.scan_cols, src.info.det_rows, src.info.det_cols,
              dtype_name(src.info.dtype).c_str(), double(bytes) / 1e9, src.how.c_str(), now_s() - t0);
  std::printf("| mode     | back | parsers | rate fps  | frames   | decoded/s  | dropped | max lat | busy   |\n");
  std::printf("|----------|------|---------|-----------|----------|------------|---------|---------|--------|\n");
  const auto options = [&] {
    AcquisitionOptions o;
    o.backend = backend;
    o.batch_frames = batch;
    o.ring_bytes = ring_mib << 20;
    return o;
  };
  {  // memory: the acquisition alone
    Acquisition a(options());
    SeriesInfo info = src.info;
    info.protocol = "memory";
    info.series_id = "1";
    info.codec.kind = merlin ? io::FrameCodecKind::merlin : io::FrameCodecKind::bitshuffle;
    std::size_t header = 0;  // Merlin: the frames carry their MQ1 header; the acquisition takes the pixels
    if (merlin) {
      const auto h = io::merlin::parse_frame_header(src.frames[0].data(), src.frames[0].size(), {"bench", 0, 0});
      info.codec.merlin = io::merlin::pixel_format(h, 0, {"bench", 0, 0});
      info.dtype = info.codec.merlin.out_dtype;
      header = h.header_bytes;
    }
    const double t = now_s();
    a.series_start(info);
    for (std::size_t k = 0; k < src.frames.size(); ++k)
      a.frame({k, src.frames[k].data() + header, src.frames[k].size() - header, info.codec.kind});
    a.series_end("1", "");
    a.wait_finished(1, 3600);
    print({"memory", "-", 0, src.frames.size(), now_s() - t, a.stats()}, backend);
  }
  if (!merlin) {  // the simulator's encoding alone: every image message built as it sends them, no socket
    const double t = now_s();
    std::size_t total = 0;
    for (std::size_t rpt = 0; rpt < so.repeat; ++rpt)
      for (std::size_t k = 0; k < src.frames.size(); ++k)
        total += stream2::encode_image(1, k, src.info.det_rows, src.info.det_cols, src.info.dtype, "bslz4",
                                       src.frames[k].data(), src.frames[k].size()).size();
    const double secs = now_s() - t;
    const std::size_t n = src.frames.size() * so.repeat;
    std::printf("| %-8s | %-4s | %7s | %9s | %8zu | %10.0f |       - |       - |      - |\n", "sim only", "-", "-",
                "max", n, double(n) / std::max(secs, 1e-9));
    std::printf("  image messages encoded, no socket: %.2f GB/s\n", double(total) / std::max(secs, 1e-9) / 1e9);
  }
  if (!merlin) {  // the receiver's CBOR walk alone: every image message decoded (stream2::decode), no socket
    std::vector<std::vector<std::uint8_t>> msgs;
    for (std::size_t k = 0; k < src.frames.size(); ++k)
      msgs.push_back(stream2::encode_image(1, k, src.info.det_rows, src.info.det_cols, src.info.dtype, "bslz4",
                                           src.frames[k].data(), src.frames[k].size()));
    std::size_t check = 0;
    stream2::Message msg;  // reused, as the receiver does
    const double t = now_s();
    for (std::size_t rpt = 0; rpt < so.repeat; ++rpt)
      for (const auto& m : msgs) {
        stream2::decode(m.data(), m.size(), "", msg);
        check += msg.image.size;
      }
    const double secs = now_s() - t;
    const std::size_t n = msgs.size() * so.repeat;
    std::printf("| %-8s | %-4s | %7s | %9s | %8zu | %10.0f |       - |       - |      - |\n", "cbor", "-", "1",
                "max", n, double(n) / std::max(secs, 1e-9));
    std::printf("  image messages decoded (CBOR walk, one thread, no socket, no copy): %.2f GB/s of pixels' bytes\n",
                double(check) / std::max(secs, 1e-9) / 1e9);
  }
  if (!merlin) {  // transport: simulator -> ZeroMQ -> a PULL socket that counts messages and does nothing else
    SimulateOptions o = so;
    o.port = port++;
    zmq::context_t ctx(1);
    zmq::socket_t pull(ctx, zmq::socket_type::pull);
    pull.set(zmq::sockopt::rcvtimeo, 2000);
    pull.connect("tcp://127.0.0.1:" + std::to_string(o.port));
    SimulateReport rep;
    std::thread sim([&] { rep = simulate_detector(src, o); });
    std::uint64_t messages = 0, received = 0;
    double t = 0;
    for (;;) {
      zmq::message_t m;
      if (!pull.recv(m)) break;  // 2 s without a message: the series is over
      if (messages++ == 0) t = now_s();
      received += m.size();
    }
    const double secs = now_s() - t - 2.0;
    sim.join();
    const std::uint64_t frames = messages >= 2 * so.repeat ? messages - 2 * so.repeat : 0;  // less starts and ends
    std::printf("| %-8s | %-4s | %7s | %9s | %8llu | %10.0f |       - |       - |      - |\n", "zmq only", "-", "-",
                "max",
                static_cast<unsigned long long>(frames), double(frames) / std::max(secs, 1e-9));
    std::printf("  messages received, nothing decoded: %.2f GB/s; simulator sent %.0f frames/s\n",
                double(received) / std::max(secs, 1e-9) / 1e9, rep.frames_per_second);
    std::fflush(stdout);
  }
  std::vector<unsigned> parsers_list;
  {
    std::stringstream ps(parse_threads);
    std::string p;
    while (std::getline(ps, p, ',')) parsers_list.push_back(unsigned(std::stoul(p)));
  }
  if (!merlin)
    for (const unsigned parsers : parsers_list) {  // the receiver alone, as fast as the simulator sends
      SimulateOptions o = so;
      o.port = port++;
      CopySink sink;
      ReceiveOptions ro{"", o.repeat, 60};
      ro.parse_threads = parsers;
      ro.parse_batch = parse_batch;
      ro.parse_linger_us = parse_linger_us;
      ro.rcvhwm = rcvhwm;
      Receiver rx(Endpoint{protocol, "127.0.0.1", o.port}, sink, ro);
      SimulateReport rep;
      std::thread sim([&] { rep = simulate_detector(src, o); });
      rx.run();
      sim.join();
      const double secs = std::max(sink.t1 - sink.t0, 1e-9);
      std::printf("| %-8s | %-4s | %7u | %9s | %8llu | %10.0f | %7zu |       - |      - |\n", "receiver", "-", parsers,
                  "max", static_cast<unsigned long long>(sink.frames), double(sink.frames) / secs, rx.dropped());
      std::printf("  the receiver into a sink that only copies the frames (no decoding); simulator sent %.0f frames/s\n",
                  rep.frames_per_second);
      std::fflush(stdout);
    }
  std::stringstream ss(rates);
  std::string r;
  while (std::getline(ss, r, ',')) {  // loopback: simulator thread -> ZeroMQ -> receiver -> acquisition
    const double rate = std::stod(r);
    std::vector<unsigned> variants = {ReceiveOptions{}.parse_threads};
    if (rate <= 0 && !merlin) variants = parsers_list;  // the max-rate row: every receiver variant
    for (const unsigned parsers : variants) {
      SimulateOptions o = so;
      o.rate = rate;
      o.port = port++;
      Acquisition a(options());
      ReceiveOptions ro{"", o.repeat, 60};
      ro.parse_threads = parsers;
      ro.parse_batch = parse_batch;
      ro.parse_linger_us = parse_linger_us;
      ro.rcvhwm = rcvhwm;
      Receiver rx(Endpoint{protocol, "127.0.0.1", o.port}, a, ro);
      SimulateReport rep;
      std::thread sim([&] { rep = simulate_detector(src, o); });
      const double t = now_s();
      rx.run();
      sim.join();
      a.wait_finished(o.repeat, 3600);
      const double secs = now_s() - t;
      Row row{"loopback", merlin ? "-" : std::to_string(parsers), o.rate, src.frames.size(), secs, a.stats()};
      if (o.repeat > 1) {  // every series: the acquisition's stats cover the last one
        std::uint64_t decoded = 0;
        for (const auto& f : a.finished()) decoded += f.products.frames_received;
        row.st.frames_decoded = decoded;
      }
      print(row, backend);
      std::printf("  simulator sent %llu frames at %.0f frames/s (%.2f GB/s); receiver dropped %zu messages\n",
                  static_cast<unsigned long long>(rep.frames_sent), rep.frames_per_second,
                  double(rep.bytes_sent) / std::max(rep.seconds, 1e-9) / 1e9, rx.dropped());
    }
  }
  return 0;
}

QGPU_BENCH_MAIN("usage: bench_live FILE [--backend cuda|cpu] [--rows N (the first N scan rows)] [--rates R1,R2,...] [--batch F]")
