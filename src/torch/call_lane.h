// One lane of a hycc process group: a worker thread that runs the group's calls of some
// operations in the order they were made, on a gloo backend of its own (its wire). A group has
// two lanes, reductions and gathers, so that FSDP's parameter all-gathers overlap its gradient
// reduce-scatters as they do on gloo's own threads; one lane's calls use only its wire, so each
// wire sees every rank's calls in one order.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace hycc::torch_backend {

class CallLane {
 public:
  // `wire`: the lane's backend (null for a lane that only waits).
  explicit CallLane(c10::intrusive_ptr<c10d::Backend> wire);
  ~CallLane();
  CallLane(const CallLane&) = delete;
  CallLane& operator=(const CallLane&) = delete;

  // Runs `task` after the tasks queued before it (which catches what it throws).
  void push(std::function<void()> task);
  // Runs what is queued, then ends the thread (from the thread itself: lets it end alone).
  void stop();
  // Waits until every lane of the process is idle (nothing queued, no task running or being
  // destroyed), at most `timeout`; whether they all were. At the interpreter's exit (hycc.torch's
  // atexit), before Python finalizes: a lane that drops the last reference to a tensor Python
  // also holds takes the GIL to do so, and Python 3.11 ends a thread that asks for the GIL during
  // finalization with pthread_exit, which inside a destructor is std::terminate ("terminate
  // called without an active exception"; docs/torch.md, "Faults").
  static bool quiesce(std::chrono::milliseconds timeout);
  bool running() const { return thread_.joinable(); }
  const c10::intrusive_ptr<c10d::Backend>& wire() const { return wire_; }

 private:
  // Shared with the thread, which may outlive the lane (stop() from the thread itself).
  struct Queue {
    std::mutex mutex;
    std::condition_variable wake;
    std::condition_variable idle;
    std::deque<std::function<void()>> tasks;
    bool busy = false;  // a task runs or is being destroyed
    bool stopping = false;
  };
  static void loop(const std::shared_ptr<Queue>& queue);

  c10::intrusive_ptr<c10d::Backend> wire_;
  std::shared_ptr<Queue> queue_ = std::make_shared<Queue>();
  std::thread thread_;  // last: starts once the rest is ready
};

}  // namespace hycc::torch_backend
