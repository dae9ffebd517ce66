// devtime::collector — a fixed number of threads running posted tasks in order of posting:
// where agent sessions do their blocking work (token checks, SQL), so gRPC's callback
// threads never block and a thousand sessions share a handful of threads.
//
// Thread-safety: Post may be called from any thread; Stop from one.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace devtime::collector {

class WorkQueue {
 public:
  explicit WorkQueue(std::size_t threads);
  ~WorkQueue();  // Stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Runs `task` on one of the threads; after Stop() it is dropped.
  void Post(std::function<void()> task);
  // Runs the tasks already posted, then joins the threads.
  void Stop();

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace devtime::collector
