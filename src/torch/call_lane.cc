#include "torch/call_lane.h"

#include <utility>

namespace hycc::torch_backend {

CallLane::CallLane(c10::intrusive_ptr<c10d::Backend> wire)
    : wire_(std::move(wire)), thread_(loop, queue_) {}

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
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(queue->mutex);
      queue->wake.wait(lock, [&] { return queue->stopping || !queue->tasks.empty(); });
      if (queue->tasks.empty()) return;  // stopping, nothing left
      task = std::move(queue->tasks.front());
      queue->tasks.pop_front();
    }
    task();
  }
}

}  // namespace hycc::torch_backend
