#include "interpose/runtime/progress.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hycc/error.h"
#include "interpose/runtime/completion.h"
#include "interpose/runtime/state.h"

namespace hycc::interpose {
namespace {

enum class Mode { kAuto, kThread, kOff };

// HYCC_PROGRESS; nullopt for a value that means nothing.
std::optional<Mode> mode_from_environment() {
  const char* v = std::getenv("HYCC_PROGRESS");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return Mode::kAuto;
  if (std::strcmp(v, "thread") == 0) return Mode::kThread;
  if (std::strcmp(v, "off") == 0) return Mode::kOff;
  return std::nullopt;
}

bool g_available = false;

// A collective left to the thread and the program's request for it.
struct Job {
  std::shared_ptr<coll::SplitCollective> split;
  MPI_Comm order = MPI_COMM_NULL;
  std::function<void()> complete;
  const char* call = nullptr;
  std::shared_ptr<Completion> done;
  std::shared_mutex* state_lock = nullptr;
};

class Driver {
 public:
  void add(std::shared_ptr<Job> job) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
      // Never destroyed: a program may exit without MPI_Finalize, and a joinable std::thread
      // destroyed at exit would end the process.
      if (thread_ == nullptr) thread_ = new std::thread([this] { run(); });
    }
    wake_.notify_one();
  }

  // No MPI call is made under mutex_: this runs inside MPI_Comm_free's attribute callback,
  // where an MPI may hold a lock of its own that the thread's MPI calls take.
  void free_when_unused(MPI_Comm comm) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (in_use(comm)) {
        unused_later_.push_back(comm);
        return;
      }
    }
    PMPI_Comm_free(&comm);
  }

  void stop() {
    std::thread* thread = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      std::swap(thread, thread_);
    }
    wake_.notify_one();
    if (thread != nullptr) {
      thread->join();
      delete thread;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = false;
  }

 private:
  void run() {
    const Inside guard;  // the collectives' MPI calls go to PMPI
    int idle = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
      }
      if (pass()) {
        idle = 0;
      } else if (++idle < kSpins) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(kNap);
      }
    }
  }

  // One look at every job, in call order: true when one moved on. A job's next exchange starts
  // only after those of the earlier jobs on its communicator.
  bool pass() {
    std::vector<std::shared_ptr<Job>> jobs;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      jobs = jobs_;
    }
    std::vector<MPI_Comm> held;  // an earlier job on it has not started its next exchange
    bool moved = false;
    for (const std::shared_ptr<Job>& job : jobs) {
      const bool before_next = job->split->has_next();
      int done = 0;
      if (!(before_next && std::count(held.begin(), held.end(), job->order) > 0)) {
        PMPI_Test(job->split->request(), &done, MPI_STATUS_IGNORE);
      }
      if (done == 0) {
        if (before_next) held.push_back(job->order);
        continue;
      }
      moved = true;
      if (const std::optional<int> error = advance(*job)) finished(job, *error);
    }
    return moved;
  }

  // After the job's exchange completed: starts the next (nullopt), or finishes the job and
  // returns what its request completes with.
  static std::optional<int> advance(Job& job) {
    std::shared_lock<std::shared_mutex> lock;
    if (job.state_lock != nullptr) lock = std::shared_lock<std::shared_mutex>(*job.state_lock);
    try {
      if (job.split->has_next()) {
        job.split->next();
        return std::nullopt;
      }
      job.split->finish();
      job.complete();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[hycc] %s: %s\n", job.call, e.what());
      std::fflush(stderr);
      return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
  }

  void finished(const std::shared_ptr<Job>& job, int error) {
    std::vector<MPI_Comm> unused;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), job));
      for (auto c = unused_later_.begin(); c != unused_later_.end();) {
        if (in_use(*c)) {
          ++c;
        } else {
          unused.push_back(*c);
          c = unused_later_.erase(c);
        }
      }
    }
    for (MPI_Comm& c : unused) PMPI_Comm_free(&c);
    complete(*job->done, error);
  }

  bool in_use(MPI_Comm comm) const {  // under mutex_
    return std::any_of(jobs_.begin(), jobs_.end(),
                       [comm](const std::shared_ptr<Job>& j) { return j->order == comm; });
  }

  // Idle passes spent yielding before napping between passes: a few microseconds of latency
  // for a collective just completed, without a core spinning through a long transfer.
  static constexpr int kSpins = 64;
  static constexpr std::chrono::microseconds kNap{50};

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Job>> jobs_;  // in call order
  std::vector<MPI_Comm> unused_later_;      // to free once no job uses them
  bool stop_ = false;
  std::thread* thread_ = nullptr;
};

Driver& driver() {
  static Driver* d = new Driver;  // never destroyed (see Driver::add)
  return *d;
}

}  // namespace

int init_thread_level(int required) {
  const std::optional<Mode> mode = mode_from_environment();
  return mode == Mode::kThread ? MPI_THREAD_MULTIPLE : required;
}

void start_progress() {
  const std::optional<Mode> mode = mode_from_environment();
  if (!mode) {
    throw InvalidArgument(tagged("interpose", "HYCC_PROGRESS=", std::getenv("HYCC_PROGRESS"),
                                 ": expected auto, thread or off"));
  }
  int level = MPI_THREAD_SINGLE;
  HYCC_CHECK_MPI(PMPI_Query_thread(&level));
  int usable = *mode != Mode::kOff && level == MPI_THREAD_MULTIPLE ? 1 : 0;
  // Every rank must take the same form of each collective.
  HYCC_CHECK_MPI(PMPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  g_available = usable == 1;
}

void stop_progress() {
  driver().stop();
  g_available = false;
}

bool progress_available() { return g_available; }

void drive(std::shared_ptr<coll::SplitCollective> split, MPI_Comm order,
           std::function<void()> complete, const char* call, MPI_Request* request,
           std::shared_mutex* state_lock) {
  auto job = std::make_shared<Job>();
  job->split = std::move(split);
  job->order = order;
  job->complete = std::move(complete);
  job->call = call;
  job->state_lock = state_lock;
  job->done = start_completion(request);
  driver().add(std::move(job));
}

void free_when_unused(MPI_Comm comm) { driver().free_when_unused(comm); }

}  // namespace hycc::interpose
