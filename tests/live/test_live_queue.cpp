// The receiver's split (live/message_queue.hpp, live/receive.cpp): the bounded queue between the socket thread and
// the parsers (a stalled consumer never grows it, drops are counted exactly, close never hangs), the turnstile that
// keeps the stream order, and the receiver with parser threads against the inline receiver over loopback.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/error.hpp"
#include "live/message_queue.hpp"
#include "live/receive.hpp"
#include "live/simulate.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using namespace qgpu::live;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<int> items_of(const std::vector<MessageQueue<int>::Slot>& slots) {
  std::vector<int> v;
  for (const auto& s : slots) v.push_back(s.item);
  return v;
}

}  // namespace

TEST(LiveQueue, KeepsTheOrderInNumberedBatches) {
  MessageQueue<int> q(100, 1 << 20);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.push(int(i), 10, 0ms));
  std::vector<MessageQueue<int>::Slot> out;
  std::uint64_t b = 99;
  ASSERT_TRUE(q.pop(4, out, &b));
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(items_of(out), (std::vector<int>{0, 1, 2, 3}));
  ASSERT_TRUE(q.pop(4, out, &b));
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(items_of(out), (std::vector<int>{4, 5, 6, 7}));
  ASSERT_TRUE(q.pop(4, out, &b));
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(items_of(out), (std::vector<int>{8, 9}));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.dropped(), 0u);
  EXPECT_EQ(q.peak_items(), 10u);
  EXPECT_EQ(q.peak_bytes(), 100u);
}

TEST(LiveQueue, AStalledConsumerNeverGrowsItAndEveryDropIsCounted) {
  MessageQueue<int> q(8, 1 << 20);
  const auto t0 = Clock::now();
  int queued = 0;
  for (int i = 0; i < 1000; ++i) queued += q.push(int(i), 100, 50ms) ? 1 : 0;
  // one wait of 50 ms for the first push that found it full, then every other push dropped at once
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_GE(seconds_since(t0), 0.045);
  EXPECT_EQ(queued, 8);
  EXPECT_EQ(q.dropped(), 992u);
  EXPECT_EQ(q.waits(), 1u);
  EXPECT_EQ(q.peak_items(), 8u);
  EXPECT_EQ(q.peak_bytes(), 800u);
  std::vector<MessageQueue<int>::Slot> out;
  std::uint64_t b = 0;
  ASSERT_TRUE(q.pop(100, out, &b));
  EXPECT_EQ(items_of(out), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (const auto& s : out) EXPECT_EQ(s.dropped_before, 0u);
  // the consumer caught up: the next item is queued and carries the gap before it, in stream order
  ASSERT_TRUE(q.push(1000, 100, 0ms));
  ASSERT_TRUE(q.pop(100, out, &b));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].item, 1000);
  EXPECT_EQ(out[0].dropped_before, 992u);
  EXPECT_EQ(q.take_pending_drops(), 0u);
}

TEST(LiveQueue, DropsResumeWaitingOnlyOnceHalfIsFree) {
  MessageQueue<int> q(4, 1 << 20);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(q.push(int(i), 1, 0ms));
  EXPECT_FALSE(q.push(4, 1, 1ms));  // waited 1 ms, dropped: drop mode
  std::vector<MessageQueue<int>::Slot> out;
  std::uint64_t b = 0;
  ASSERT_TRUE(q.pop(1, out, &b));  // 3 left: more than half, still dropping without a wait
  ASSERT_TRUE(q.push(5, 1, 0ms));  // room for one: queued
  const auto t0 = Clock::now();
  EXPECT_FALSE(q.push(6, 1, 10s));  // full again and still in drop mode: no wait at all
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_EQ(q.waits(), 1u);
  ASSERT_TRUE(q.pop(2, out, &b));  // 2 left of 4: half free, waits again from now on
  EXPECT_EQ(items_of(out), (std::vector<int>{1, 2}));
  EXPECT_EQ(q.take_pending_drops(), 1u);  // item 6, dropped after the last queued one
  EXPECT_EQ(q.dropped(), 2u);
}

TEST(LiveQueue, TheByteBoundHoldsAndOneLargeItemStillPasses) {
  MessageQueue<int> q(100, 100);
  EXPECT_TRUE(q.push(0, 40, 0ms));
  EXPECT_TRUE(q.push(1, 40, 0ms));
  EXPECT_FALSE(q.push(2, 40, 1ms));
  EXPECT_EQ(q.peak_bytes(), 80u);
  std::vector<MessageQueue<int>::Slot> out;
  std::uint64_t b = 0;
  ASSERT_TRUE(q.pop(10, out, &b));
  EXPECT_TRUE(q.push(3, 1000, 0ms));  // larger than the bound, into an empty queue
  EXPECT_FALSE(q.push(4, 1, 0ms));
  EXPECT_EQ(q.dropped(), 2u);
}

TEST(LiveQueue, CloseWakesAWaitingProducerAndConsumerAtOnce) {
  MessageQueue<int> empty(4, 1 << 20);
  std::atomic<int> popped{-1};
  std::thread consumer([&] {
    std::vector<MessageQueue<int>::Slot> out;
    std::uint64_t b = 0;
    popped = empty.pop(1, out, &b) ? 1 : 0;
  });
  MessageQueue<int> full(1, 1 << 20);
  ASSERT_TRUE(full.push(0, 1, 0ms));
  std::atomic<int> pushed{-1};
  std::thread producer([&] { pushed = full.push(1, 1, 600s) ? 1 : 0; });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(popped, -1);
  EXPECT_EQ(pushed, -1);
  const auto t0 = Clock::now();
  empty.close();
  full.close();
  consumer.join();
  producer.join();
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(popped, 0);
  EXPECT_EQ(pushed, 0);
  EXPECT_EQ(full.dropped(), 0u);  // closed is not a drop
  EXPECT_FALSE(full.push(2, 1, 0ms));
  // a closed queue still hands out what it holds, then says closed
  std::vector<MessageQueue<int>::Slot> out;
  std::uint64_t b = 0;
  ASSERT_TRUE(full.pop(5, out, &b));
  EXPECT_EQ(items_of(out), (std::vector<int>{0}));
  EXPECT_FALSE(full.pop(5, out, &b));
}

TEST(LiveQueue, ALingeringConsumerTakesAWholeBatchOrWhatCameWithinTheLinger) {
  MessageQueue<int> q(100, 1 << 20);
  std::thread producer([&] {
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(10ms);
      q.push(int(i), 1, 0ms);
    }
  });
  std::vector<MessageQueue<int>::Slot> out;
  std::uint64_t b = 0;
  const auto t0 = Clock::now();
  ASSERT_TRUE(q.pop(4, out, &b, std::chrono::microseconds(20'000'000)));  // 20 s linger: woken by the 4th item
  producer.join();
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_EQ(items_of(out), (std::vector<int>{0, 1, 2, 3}));
  ASSERT_TRUE(q.push(4, 1, 0ms));
  const auto t1 = Clock::now();
  ASSERT_TRUE(q.pop(4, out, &b, std::chrono::microseconds(30'000)));  // one item: returned after the 30 ms linger
  EXPECT_GE(seconds_since(t1), 0.025);
  EXPECT_EQ(items_of(out), (std::vector<int>{4}));
  // close ends a linger at once
  ASSERT_TRUE(q.push(5, 1, 0ms));
  std::thread closer([&] {
    std::this_thread::sleep_for(20ms);
    q.close();
  });
  const auto t2 = Clock::now();
  ASSERT_TRUE(q.pop(4, out, &b, std::chrono::microseconds(60'000'000)));
  closer.join();
  EXPECT_LT(seconds_since(t2), 10.0);
  EXPECT_EQ(items_of(out), (std::vector<int>{5}));
  EXPECT_FALSE(q.pop(4, out, &b, std::chrono::microseconds(60'000'000)));
}

TEST(LiveQueue, TheTurnstileLetsBatchesThroughInOrderAndCancelFreesEveryone) {
  Turnstile t;
  std::mutex m;
  std::vector<std::uint64_t> order;
  std::vector<std::thread> th;
  for (std::uint64_t k = 8; k-- > 0;)  // started last to first
    th.emplace_back([&, k] {
      ASSERT_TRUE(t.wait(k));
      {
        std::lock_guard lk(m);
        order.push_back(k);
      }
      t.done(k);
    });
  for (auto& x : th) x.join();
  EXPECT_EQ(order, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  Turnstile c;
  std::atomic<int> r{-1};
  std::thread w([&] { r = c.wait(5) ? 1 : 0; });
  std::this_thread::sleep_for(20ms);
  c.cancel();
  w.join();
  EXPECT_EQ(r, 0);
}

namespace {

sample::SampleSpec spec() {
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = 20;
  s.det_cols = 24;
  s.dtype = DType::u16;
  return s;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// Records what the receiver hands it, in order; frames can be made slow.
class RecordingSink : public Sink {
 public:
  explicit RecordingSink(unsigned frame_us = 0) : frame_us_(frame_us) {}
  void series_start(const SeriesInfo& info) override {
    add("start " + info.series_id + " " + std::to_string(info.det_rows) + "x" + std::to_string(info.det_cols));
  }
  void frame(const FrameView& f) override {
    if (frame_us_) std::this_thread::sleep_for(std::chrono::microseconds(frame_us_));
    // the bytes themselves: a checksum, so that a message freed too early shows
    const std::uint64_t sum = std::accumulate(f.data, f.data + f.size, std::uint64_t(0));
    add("frame " + std::to_string(f.index) + " " + std::to_string(f.size) + " " + std::to_string(sum));
    ++frames;
  }
  void series_end(const std::string& id, const std::string& reason) override { add("end " + id + " " + reason); }
  void problem(const std::string& what) override { add("problem " + what); }
  std::vector<std::string> events;
  std::atomic<std::size_t> frames{0};
  std::atomic<int> concurrent{0}, max_concurrent{0};

 private:
  void add(std::string e) {
    const int c = ++concurrent;
    int m = max_concurrent;
    while (c > m && !max_concurrent.compare_exchange_weak(m, c)) {
    }
    events.push_back(std::move(e));  // not locked: the receiver calls one at a time (max_concurrent checks it)
    --concurrent;
  }
  unsigned frame_us_;
};

struct Outcome {
  std::vector<std::string> events;
  std::size_t messages = 0, dropped = 0, frames = 0;
  int max_concurrent = 0;
};

Outcome receive(const std::string& file, SimulateOptions so, ReceiveOptions ro, unsigned frame_us = 0) {
  so.port = free_port();
  so.connect_timeout_s = 20;
  RecordingSink sink(frame_us);
  Receiver r(Endpoint{so.protocol, "127.0.0.1", so.port}, sink, ro);
  std::exception_ptr err;
  std::thread sim([&] {
    try {
      simulate_detector(file, so);
    } catch (...) {
      err = std::current_exception();
    }
  });
  r.run();
  sim.join();
  if (err) std::rethrow_exception(err);
  return {sink.events, r.messages(), r.dropped(), sink.frames, sink.max_concurrent};
}

ReceiveOptions with_parsers(unsigned threads, std::size_t batch, std::size_t series) {
  ReceiveOptions ro;
  ro.parse_threads = threads;
  ro.parse_batch = batch;
  ro.series = series;
  ro.idle_timeout_s = 20;
  return ro;
}

}  // namespace

TEST(LiveReceiverSplit, ParserThreadsHandTheSinkExactlyWhatTheInlineReceiverDoes) {
  const std::string path = test::write_small_sample("s.h5", spec());
  for (const std::string protocol : {"dectris-v2", "dectris-v1"}) {
    SCOPED_TRACE(protocol);
    SimulateOptions so;
    so.protocol = protocol;
    so.stale_end_first = true;   // an end before any start
    so.swap_pairs = true;        // 1, 0, 3, 2 ...
    so.skip = {7};
    so.duplicate = {12};
    so.corrupt = {20};           // the frame is delivered (the acquisition finds it corrupt)
    so.restart_after = 30;       // series 2 starts before series 1 ended
    so.repeat = 2;               // series 2 ends, series 3 runs whole
    const Outcome inline_run = receive(path, so, with_parsers(0, 1, 2));
    // the reference: every message in order
    ASSERT_FALSE(inline_run.events.empty());
    EXPECT_EQ(inline_run.events.front(), "end 0 ");  // the stale end, handed on as the stream said
    EXPECT_EQ(inline_run.events[1], "start 1 20x24");
    EXPECT_EQ(inline_run.events[2].rfind("frame 1 ", 0), 0u);
    EXPECT_EQ(inline_run.events[3].rfind("frame 0 ", 0), 0u);
    EXPECT_EQ(inline_run.events.back(), "end 3 ");
    // series 1: the first 30 sent (the swapped order less 7, 12 twice); series 2: the other 18; series 3: all 48
    EXPECT_EQ(inline_run.frames, 30u + 18u + 48u);
    EXPECT_EQ(inline_run.dropped, 0u);
    for (const auto& [threads, batch] : std::vector<std::pair<unsigned, std::size_t>>{{1, 64}, {4, 1}, {3, 5}}) {
      SCOPED_TRACE("parse_threads " + std::to_string(threads) + ", parse_batch " + std::to_string(batch));
      const Outcome split = receive(path, so, with_parsers(threads, batch, 2));
      EXPECT_EQ(split.events, inline_run.events);
      EXPECT_EQ(split.messages, inline_run.messages);
      EXPECT_EQ(split.dropped, 0u);
      EXPECT_EQ(split.max_concurrent, 1);
    }
  }
}

TEST(LiveReceiverSplit, ASlowSinkMakesTheSocketDropAndCountButNeverBlock) {
  const std::string path = test::write_small_sample("s.h5", spec());
  SimulateOptions so;
  so.protocol = "dectris-v2";
  so.repeat = 4;  // 4 x (start + 48 frames + end) = 200 messages
  ReceiveOptions ro;
  ro.parse_threads = 2;
  ro.parse_batch = 1;
  ro.queue_messages = 2;
  ro.queue_wait_ms = 1;
  ro.idle_timeout_s = 1;  // an end may be dropped: return on silence instead of a series count
  const auto t0 = Clock::now();
  const Outcome run = receive(path, so, ro, 20000);  // 20 ms a frame: 4 s for the 200 messages, far slower than sent
  EXPECT_LT(seconds_since(t0), 30.0);
  EXPECT_EQ(run.messages, 200u);
  EXPECT_GT(run.dropped, 0u);
  std::size_t delivered = 0, named = 0;
  const auto starts = [](const std::string& e, const char* p) { return e.rfind(p, 0) == 0; };
  for (const auto& e : run.events) {
    // a message handed on: a frame, a start, an end (not one the receiver made up when stopping), an image of a
    // series whose start was dropped
    if (starts(e, "frame ") || starts(e, "start ") || (starts(e, "end ") && e.find("stopped") == std::string::npos) ||
        starts(e, "problem image "))
      ++delivered;
    const auto p = e.find(" message(s) ");
    if (starts(e, "problem ") && p != std::string::npos && e.find("dropped") != std::string::npos)
      named += std::stoul(e.substr(8, p - 8));
  }
  // every message either reached the sink or was dropped, counted and named
  EXPECT_EQ(named, run.dropped);
  EXPECT_EQ(delivered + run.dropped, 200u);
  EXPECT_EQ(run.max_concurrent, 1);
}

TEST(LiveReceiverSplit, StopReturnsWhileTheSinkIsSlow) {
  const std::string path = test::write_small_sample("s.h5", spec());
  SimulateOptions so;
  so.protocol = "dectris-v2";
  so.repeat = 50;
  so.port = free_port();
  so.connect_timeout_s = 5;
  RecordingSink sink(2000);
  ReceiveOptions ro;
  ro.parse_threads = 2;
  Receiver r(Endpoint{"dectris-v2", "127.0.0.1", so.port}, sink, ro);
  std::atomic<bool> stop_sim{false};
  std::thread sim([&] {
    try {
      simulate_detector(path, so, &stop_sim);
    } catch (...) {
    }
  });
  std::thread rx([&] { r.run(); });
  while (sink.frames < 5) std::this_thread::sleep_for(1ms);
  const auto t0 = Clock::now();
  r.stop();
  rx.join();
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_LT(sink.frames, 50u * 48u);  // stopped: what was queued is not worked through
  EXPECT_EQ(sink.events.back().rfind("end ", 0), 0u);
  EXPECT_NE(sink.events.back().find("stopped"), std::string::npos);
  stop_sim = true;
  sim.join();
}

TEST(LiveReceiverSplit, OptionsOutsideTheirRangesAreNamed) {
  ReceiveOptions o;
  o.parse_threads = 65;
  test::expect_error<InvalidArgument>([&] { validate(o); }, {"parse_threads 65"});
  o = {};
  o.parse_batch = 0;
  test::expect_error<InvalidArgument>([&] { validate(o); }, {"parse_batch 0"});
  o = {};
  o.queue_bytes = 10;
  test::expect_error<InvalidArgument>([&] { validate(o); }, {"queue_bytes 10"});
  o = {};
  o.parse_linger_us = 2000000;
  test::expect_error<InvalidArgument>([&] { validate(o); }, {"parse_linger_us 2000000"});
  o = {};
  o.queue_messages = 0;
  test::expect_error<InvalidArgument>([&] { validate(o); }, {"queue_messages 0"});
  EXPECT_NO_THROW(validate(ReceiveOptions{}));
}
