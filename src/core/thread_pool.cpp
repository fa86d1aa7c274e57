#include "core/thread_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace qgpu {

namespace {

// One call's work: pool threads enter it while it is open; the caller closes it and waits for those inside.
struct Job {
  const std::function<void()>* work = nullptr;
  std::mutex mutex;
  std::condition_variable left;
  int inside = 0;
  bool closed = false;

  bool enter() {
    std::lock_guard lock(mutex);
    if (closed) return false;
    ++inside;
    return true;
  }
  void leave() {
    std::lock_guard lock(mutex);
    if (--inside == 0) left.notify_all();
  }
  void close_and_wait() {
    std::unique_lock lock(mutex);
    closed = true;
    left.wait(lock, [&] { return inside == 0; });
  }
};

class Pool {
 public:
  Pool() : pid_(::getpid()) {
    const unsigned n = std::clamp(std::thread::hardware_concurrency(), 2u, 64u) - 1;
    for (unsigned i = 0; i < n; ++i) {
      try {
        std::thread([this] { serve(); }).detach();
        ++threads_;
      } catch (...) {  // fewer threads to be had: the callers do more themselves
        break;
      }
    }
  }
  unsigned threads() const { return threads_; }
  bool here() const { return ::getpid() == pid_; }
  void post(const std::shared_ptr<Job>& job, unsigned copies) {
    {
      std::lock_guard lock(mutex_);
      for (unsigned i = 0; i < copies; ++i) queue_.push_back(job);
    }
    copies == 1 ? ready_.notify_one() : ready_.notify_all();
  }

 private:
  void serve() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!job->enter()) continue;  // its caller has finished
      (*job->work)();
      job->leave();
    }
  }

  const pid_t pid_;
  unsigned threads_ = 0;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> queue_;
};

Pool& pool() {
  static Pool* const p = new Pool;  // never destroyed: its threads wait on it until the process ends
  return *p;
}

}  // namespace

void run_on_pool(unsigned threads, const std::function<void()>& work) {
  if (threads <= 1) return work();
  Pool& p = pool();
  if (!p.here() || p.threads() == 0) return work();  // a forked child: the pool's threads stayed in the parent
  auto job = std::make_shared<Job>();
  job->work = &work;
  p.post(job, std::min(threads - 1, p.threads()));
  work();
  job->close_and_wait();
}

}  // namespace qgpu
