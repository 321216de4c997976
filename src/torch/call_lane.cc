#include "torch/call_lane.h"

#include <utility>
#include <vector>

namespace hycc::torch_backend {
namespace {

// The queues of the process's lanes (a lane's thread may outlive it: its queue stays listed
// until the thread ends).
std::mutex& lanes_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::weak_ptr<void>>& lanes() {
  static auto* l = new std::vector<std::weak_ptr<void>>();  // never destroyed: used at exit
  return *l;
}

}  // namespace

CallLane::CallLane(c10::intrusive_ptr<c10d::Backend> wire)
    : wire_(std::move(wire)), thread_(loop, queue_) {
  const std::lock_guard<std::mutex> lock(lanes_mutex());
  auto& all = lanes();
  std::erase_if(all, [](const std::weak_ptr<void>& q) { return q.expired(); });
  all.push_back(queue_);
}

bool CallLane::quiesce(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::shared_ptr<Queue>> queues;
  {
    const std::lock_guard<std::mutex> lock(lanes_mutex());
    for (const auto& q : lanes()) {
      if (auto queue = std::static_pointer_cast<Queue>(q.lock())) queues.push_back(queue);
    }
  }
  bool all_idle = true;
  for (const auto& queue : queues) {
    std::unique_lock<std::mutex> lock(queue->mutex);
    all_idle &= queue->idle.wait_until(lock, deadline,
                                       [&] { return queue->tasks.empty() && !queue->busy; });
  }
  return all_idle;
}

CallLane::~CallLane() { stop(); }

void CallLane::push(std::function<void()> task) {
  {
    const std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->tasks.push_back(std::move(task));
  }
  queue_->wake.notify_one();
}

void CallLane::stop() {
  {
    const std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->stopping = true;
  }
  queue_->wake.notify_all();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // the last reference went in a call's completion: the loop ends by itself
  } else {
    thread_.join();
  }
}

void CallLane::loop(const std::shared_ptr<Queue>& queue) {
  for (;;) {
    {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(queue->mutex);
        queue->wake.wait(lock, [&] { return queue->stopping || !queue->tasks.empty(); });
        if (queue->tasks.empty()) return;  // stopping, nothing left
        task = std::move(queue->tasks.front());
        queue->tasks.pop_front();
        queue->busy = true;
      }
      task();
    }  // the task, and the tensors it holds, released before the lane counts as idle
    {
      const std::lock_guard<std::mutex> lock(queue->mutex);
      queue->busy = false;
    }
    queue->idle.notify_all();
  }
}

}  // namespace hycc::torch_backend
