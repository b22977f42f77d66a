// The thread budget of --jobs: every index runs once, errors come back in
// index order, nested calls finish, and a budget of one runs on the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "jobs/Jobs.h"

using namespace layergate;

TEST(Jobs, EveryIndexRunsOnce) {
  jobs::setLimit(4);
  std::vector<std::atomic<int>> runs(100);
  jobs::forEach(runs.size(), [&](std::size_t i) { ++runs[i]; });
  for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  jobs::forEach(0, [](std::size_t) { FAIL(); });
}

TEST(Jobs, TheLowestIndexErrorIsRethrownAfterAllRan) {
  jobs::setLimit(3);
  std::atomic<int> ran{0};
  try {
    jobs::forEach(10, [&](std::size_t i) {
      ++ran;
      if (i == 7 || i == 3) throw std::runtime_error(std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "3");
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(Jobs, NestedCallsFinishWithinTheBudget) {
  jobs::setLimit(2);
  std::atomic<int> inner{0}, running{0}, most{0};
  jobs::forEach(4, [&](std::size_t) {
    jobs::forEach(4, [&](std::size_t) {
      int now = ++running;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++inner;
      --running;
    });
  });
  EXPECT_EQ(inner.load(), 16);
  EXPECT_LE(most.load(), 2);
}

// The caller's own call is short, its helper's long: the caller, out of
// calls to make, waits, and lends its place to the calls nested in the
// helper's, which then run side by side.
TEST(Jobs, AWaitingCallerLendsItsPlaceToNestedCalls) {
  jobs::setLimit(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> claimed{0}, running{0}, most{0};
  std::mutex m;
  std::set<std::thread::id> inner_threads;
  jobs::forEach(2, [&](std::size_t) {
    ++claimed;
    if (std::this_thread::get_id() == caller) {
      // Short: done once the helper has the other call.
      for (int i = 0; i < 2000 && claimed.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the caller is waiting by now
    jobs::forEach(2, [&](std::size_t) {
      int now = ++running;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      --running;
      std::lock_guard<std::mutex> lock(m);
      inner_threads.insert(std::this_thread::get_id());
    });
  });
  EXPECT_EQ(claimed.load(), 2);
  EXPECT_EQ(inner_threads.size(), 2u);
  EXPECT_EQ(most.load(), 2);
}

TEST(Jobs, ABudgetOfOneRunsEverythingOnTheCaller) {
  jobs::setLimit(1);
  EXPECT_EQ(jobs::limit(), 1u);
  std::vector<std::thread::id> ids(8);
  jobs::forEach(ids.size(), [&](std::size_t i) { ids[i] = std::this_thread::get_id(); });
  for (const auto& id : ids) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_GE(jobs::available(), 1u);
}
