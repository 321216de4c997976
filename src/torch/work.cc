#include "torch/work.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "hycc/error.h"

namespace hycc::torch_backend {
namespace {

// A future holding CUDA tensors must name their devices.
std::vector<c10::Device> devices_of(const std::vector<at::Tensor>& outputs) {
  std::vector<c10::Device> d;
  for (const at::Tensor& t : outputs) {
    if (t.is_cuda() && std::find(d.begin(), d.end(), t.device()) == d.end()) {
      d.push_back(t.device());
    }
  }
  return d;
}

// The Works hold_inner_work() holds; never destroyed (used at exit).
struct HeldWorks {
  std::mutex mutex;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
};
HeldWorks& held() {
  static auto* h = new HeldWorks();
  return *h;
}

// Whether only the holder refers to `work` (its backend's threads have let go of it).
bool released_by_backend(const c10::intrusive_ptr<c10d::Work>& work) {
  return work.use_count() == 1;
}

}  // namespace

void hold_inner_work(c10::intrusive_ptr<c10d::Work> work) {
  std::vector<c10::intrusive_ptr<c10d::Work>> done;  // released after the lock, on this thread
  HeldWorks& h = held();
  const std::lock_guard<std::mutex> lock(h.mutex);
  auto keep = std::partition(h.works.begin(), h.works.end(),
                             [](const auto& w) { return !released_by_backend(w); });
  std::move(keep, h.works.end(), std::back_inserter(done));
  h.works.erase(keep, h.works.end());
  h.works.push_back(std::move(work));
}

bool release_inner_works(std::chrono::steady_clock::time_point deadline) {
  HeldWorks& h = held();
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  {
    const std::lock_guard<std::mutex> lock(h.mutex);
    works.swap(h.works);
  }
  bool all = true;
  for (auto& w : works) {
    while (!released_by_backend(w) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!released_by_backend(w)) {
      w.release();  // still the backend's: left to it, never released here
      all = false;
    }
  }
  return all;  // the released ones go here, on the caller's thread
}

HyccWork::HyccWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), devices_of(outputs_))) {}

void HyccWork::complete(std::exception_ptr error) {
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

int HyccWork::sourceRank() const {
  if (source_ < 0) {
    throw InvalidArgument(
        tagged("torch", "sourceRank() of a Work that is not a completed ", "any-source receive"));
  }
  return source_;
}

c10::intrusive_ptr<c10d::Work> all_of(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                                      const std::vector<c10::intrusive_ptr<c10d::Work>>& parts,
                                      CallLane& waiter) {
  auto done = c10::make_intrusive<HyccWork>(rank, type, std::move(outputs));
  if (parts.empty()) {
    done->complete(nullptr);
    return done;
  }
  struct Count {
    std::mutex mutex;
    size_t left = 0;
    std::exception_ptr error;
  };
  auto count = std::make_shared<Count>();
  count->left = parts.size();
  auto ended = [done, count](std::exception_ptr error) {
    {
      const std::lock_guard<std::mutex> lock(count->mutex);
      if (error && !count->error) count->error = error;
      if (--count->left > 0) return;
      error = count->error;
    }
    done->complete(error);
  };
  for (const auto& part : parts) when_done(part, waiter, ended);
  return done;
}

void when_done(const c10::intrusive_ptr<c10d::Work>& work, CallLane& waiter,
               std::function<void(std::exception_ptr)> then) {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const std::exception&) {
    waiter.push([work, then = std::move(then)] {
      std::exception_ptr error;
      try {
        work->wait();
      } catch (...) {
        error = std::current_exception();
      }
      then(error);
    });
    return;
  }
  future->addCallback([then = std::move(then)](c10::ivalue::Future& f) {
    then(f.hasError() ? f.exception_ptr() : nullptr);
  });
}

}  // namespace hycc::torch_backend
