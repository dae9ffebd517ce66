#include "services/collector/rpc/work_queue.h"

namespace devtime::collector {

WorkQueue::WorkQueue(std::size_t threads) {
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkQueue::~WorkQueue() { Stop(); }

void WorkQueue::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void WorkQueue::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void WorkQueue::Work() {
  std::unique_lock lock(mu_);
  while (true) {
    ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing left to run
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace devtime::collector
