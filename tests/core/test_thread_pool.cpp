// The process's waiting threads (core/thread_pool.hpp): every item once, the lowest failing item's error, several
// callers at once, a call inside a call, and a forked child (whose pool threads stayed in the parent).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.hpp"

using namespace qgpu;

namespace {

// pool_for_first_error over n items: how often each ran.
std::vector<int> runs_of(std::size_t n, unsigned threads) {
  std::vector<std::atomic<int>> count(n);
  pool_for_first_error(n, [&](std::size_t i) { ++count[i]; }, threads);
  std::vector<int> out;
  for (auto& c : count) out.push_back(c.load());
  return out;
}

}  // namespace

TEST(ThreadPool, EveryItemRunsOnce) {
  for (unsigned threads : {1u, 2u, 16u, 64u})
    for (std::size_t n : {0u, 1u, 7u, 1000u}) EXPECT_EQ(runs_of(n, threads), std::vector<int>(n, 1)) << threads << " " << n;
}

TEST(ThreadPool, TheLowestFailingItemsErrorAfterEveryItemRan) {
  std::atomic<int> ran{0};
  try {
    pool_for_first_error(100, [&](std::size_t i) {
      ++ran;
      if (i == 71 || i == 13 || i == 40) throw std::runtime_error("item " + std::to_string(i));
    }, 8);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item 13");
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(ThreadPool, SeveralCallersAndNestedCalls) {
  std::vector<std::thread> callers;
  std::vector<long> sums(6, 0);
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&, c] {
      std::atomic<long> sum{0};
      pool_for_first_error(200, [&](std::size_t i) {
        std::atomic<long> inner{0};
        pool_for_first_error(10, [&](std::size_t j) { inner += long(j); }, 4);  // 45 each time
        sum += long(i) + inner.load();
      }, 16);
      sums[c] = sum.load();
    });
  for (auto& t : callers) t.join();
  for (long s : sums) EXPECT_EQ(s, 199L * 200 / 2 + 200L * 45);
}

TEST(ThreadPool, AForkedChildRunsTheWorkItself) {
  EXPECT_EQ(runs_of(50, 8), std::vector<int>(50, 1));  // the pool exists in this process now
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(20);  // a hang ends the child with SIGALRM
    const std::vector<int> r = runs_of(5000, 8);
    ::_exit(r == std::vector<int>(5000, 1) ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
