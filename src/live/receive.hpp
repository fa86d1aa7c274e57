#pragma once
// Receivers: a detector's stream into a Sink (live/series.hpp), one thread each.
//   dectris://HOST[:PORT]     DECTRIS SIMPLON stream V2 (ZeroMQ PULL, CBOR; default port 31001)
//   dectris-v1://HOST[:PORT]  DECTRIS SIMPLON stream V1 (ZeroMQ PULL, JSON multipart; default port 9999)
//   merlin://HOST[:PORT]      Quantum Detectors Merlin data port (TCP, MPX framing; default port 6342), passive:
//                             the acquisition is started on the Merlin (or its control port) by the user
// Malformed messages are named to the sink and skipped; the receiver goes on. A Merlin connection that closes ends
// the open series ("disconnected") and is connected again.
#include <atomic>
#include <cstddef>
#include <string>

#include "live/series.hpp"

namespace qgpu::live {

struct Endpoint {
  std::string protocol;  // dectris-v2 | dectris-v1 | merlin
  std::string host;
  int port = 0;
  std::string url() const;
};

// InvalidArgument naming the URL when the scheme is none of the above or the port is not 1..65535.
Endpoint parse_endpoint(const std::string& url);
int default_port(const std::string& protocol);

struct ReceiveOptions {
  std::string channel;        // stream V2: the image channel ("" = the first each image lists)
  std::size_t series = 0;     // return after this many series ended (0 = until stop())
  double idle_timeout_s = 0;  // return when nothing arrived for this long (0 = never)
  // DECTRIS streams: threads that decode the messages and hand them to the sink while the socket thread only
  // receives (live/message_queue.hpp); the sink sees the messages in stream order whatever the count. 0 = the
  // socket thread decodes each message itself (the first design). Default 2: over loopback on the H200 (s14b) the
  // receiver took 280,283 frames/s with 2 parsers, 276,899 with 4, 253,815 with 1 and 245,128 inline.
  unsigned parse_threads = 2;
  std::size_t parse_batch = 64;                       // messages a parser takes at once (1..65536) ...
  unsigned parse_linger_us = 200;                     // ... waiting up to this long for them once one is in
  std::size_t queue_messages = 65536;                 // received messages waiting for a parser, at most ...
  std::size_t queue_bytes = std::size_t(256) << 20;   // ... and their bytes
  unsigned queue_wait_ms = 1000;  // a full queue: the socket thread waits this long, then drops (counted, named)
  int rcvhwm = 0;                 // ZMQ_RCVHWM in messages (0 = ZeroMQ's default, 1000)
  int rcvbuf = 0;                 // ZMQ_RCVBUF in bytes (0 = the system's)
};

// InvalidArgument naming the option when parse_threads > 64, parse_batch is 0 or > 65536, queue_messages is 0, or
// queue_bytes < 4096.
void validate(const ReceiveOptions& options);

class Receiver {
 public:
  Receiver(Endpoint endpoint, Sink& sink, ReceiveOptions options = {});
  // Receives until stop(), the series count or the idle timeout. IoError when the endpoint cannot be used (a host
  // that does not resolve).
  void run();
  void stop() { stop_ = true; }
  const Endpoint& endpoint() const { return endpoint_; }
  std::size_t messages() const { return messages_; }
  // Messages the socket thread dropped because the parsers fell behind (the queue stayed full queue_wait_ms).
  std::size_t dropped() const { return dropped_; }

 private:
  void run_dectris(bool v2);  // stream V2 (CBOR, one part) or V1 (JSON multipart)
  void run_merlin();
  Endpoint endpoint_;
  Sink& sink_;
  ReceiveOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> messages_{0};
  std::atomic<std::size_t> dropped_{0};
};

}  // namespace qgpu::live
