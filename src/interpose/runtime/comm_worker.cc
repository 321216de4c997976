#include "interpose/runtime/comm_worker.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "interpose/runtime/completion.h"

namespace hycc::interpose {

class CommWorker {
 public:
  explicit CommWorker(MPI_Comm twin) : twin_(twin), thread_([this] { run(); }) {}
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  void queue(std::function<void(MPI_Comm)> job) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

  void retire() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      retired_ = true;
    }
    wake_.notify_one();
  }

  void join() {
    if (thread_.joinable()) thread_.join();
  }

  // True once the thread has ended (retired, nothing left): join() returns at once.
  bool ended() const { return ended_.load(); }

 private:
  void run() {
    for (;;) {
      std::function<void(MPI_Comm)> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return retired_ || !jobs_.empty(); });
        if (jobs_.empty()) break;  // retired, nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(twin_);
    }
    PMPI_Comm_free(&twin_);  // and with it the twin's shadows (its state's attribute)
    ended_ = true;
  }

  MPI_Comm twin_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void(MPI_Comm)>> jobs_;
  bool retired_ = false;
  std::atomic<bool> ended_{false};
  std::thread thread_;
};

namespace {

// Every worker made, for stop_workers(); never destroyed (a program may exit without
// MPI_Finalize, and a joinable std::thread destroyed at exit would end the process).
std::mutex g_mutex;
std::vector<std::shared_ptr<CommWorker>>& workers() {
  static auto* all = new std::vector<std::shared_ptr<CommWorker>>;
  return *all;
}

CommWorker& worker_of(CommState& s) {
  if (s.worker == nullptr) {
    MPI_Comm twin = MPI_COMM_NULL;
    HYCC_CHECK_MPI(PMPI_Comm_dup(s.collective_shadow, &twin));
    adopt_twin(twin, s.name);
    s.worker = std::make_shared<CommWorker>(twin);
    const std::lock_guard<std::mutex> lock(g_mutex);
    // The workers of freed communicators that have ended are joined here, so that a program
    // making and freeing many communicators does not keep their threads.
    std::vector<std::shared_ptr<CommWorker>>& all = workers();
    for (auto w = all.begin(); w != all.end();) {
      if ((*w)->ended()) {
        (*w)->join();
        w = all.erase(w);
      } else {
        ++w;
      }
    }
    all.push_back(s.worker);
  }
  return *s.worker;
}

}  // namespace

void run_on_worker(CommState& s, std::function<int(MPI_Comm twin)> call, MPI_Request* request) {
  CommWorker& w = worker_of(s);
  std::shared_ptr<Completion> done = start_completion(request);
  w.queue([done, call = std::move(call)](MPI_Comm twin) { complete(*done, call(twin)); });
}

void rename_worker(CommState& s) {
  if (s.worker == nullptr) return;
  s.worker->queue([name = s.name](MPI_Comm twin) { adopt_twin(twin, name); });
}

void retire_worker(CommState& s) {
  if (s.worker != nullptr) s.worker->retire();
}

void stop_workers() {
  std::vector<std::shared_ptr<CommWorker>> all;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    all.swap(workers());
  }
  for (const std::shared_ptr<CommWorker>& w : all) {
    w->retire();
    w->join();
  }
}

}  // namespace hycc::interpose
