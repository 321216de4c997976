// The transport over a torch process group's point to point (comm/transport.h).
//
// What c10d's send and recv (gloo's) allow shapes it: a receive must name the exact size, which
// only the sender knows; a transfer starts only once its receive is posted; and a Work of theirs
// completes only inside wait() (isCompleted() stays false until then), which may be called once.
// So every payload goes as two messages, its size (8 bytes) on the call's tag and its bytes on
// tag + kDataTagOffset. Size receives are posted as receives are announced; a thread of the
// transport (the poster) waits for each size in announcement order and posts the payload's
// receive at once, so that payloads flow while the algorithm computes. wait_recv waits for the
// poster, then for the payload. A send's Works are waited for in reclaim.
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "hycc/error.h"
#include "torch/torch_group.h"

namespace hycc::torch_backend {
namespace {

using comm::Payload;
using Work = c10::intrusive_ptr<c10d::Work>;

at::Tensor bytes_tensor(void* data, size_t bytes) {
  return at::from_blob(data, {static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
}

void wait_for(const Work& work, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw CommError(tagged("torch", what, " failed: ", e.what()));
  }
}

struct Send {
  uint64_t size = 0;
  Payload payload;
  Work size_work, data_work;
};

struct Recv {
  int peer = 0;
  size_t capacity = 0;
  uint64_t size = 0;
  comm::Memory buffer;
  Work size_work, data_work;
  bool posted = false;       // by the poster: size in, payload receive posted
  std::exception_ptr error;  // the poster's failure
};

// What the poster shares with the transport (kept alive by the poster if the transport goes
// while a size has not arrived: an exception left the algorithm).
struct Receives {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::shared_ptr<Recv>> queue;  // announced, not yet completed by wait_recv
  size_t next = 0;                          // queue[next] is the poster's next
  bool stopping = false;
};

void post_payloads(const std::shared_ptr<Receives>& state, c10d::Backend& wire,
                   comm::DeviceOps& host, int tag) {
  for (;;) {
    std::shared_ptr<Recv> r;
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->changed.wait(lock,
                          [&] { return state->stopping || state->next < state->queue.size(); });
      if (state->next >= state->queue.size()) return;  // stopping, nothing announced
      r = state->queue[state->next];
    }
    try {
      wait_for(r->size_work, "receiving a payload's size");
      if (r->size > r->capacity) {
        throw CorruptStream(tagged("torch", "rank ", r->peer, " sent a payload of ", r->size,
                                   " bytes where at most ", r->capacity, " were expected"));
      }
      r->buffer = comm::allocate_payload(host, r->capacity);
      if (r->size > 0) {
        std::vector<at::Tensor> data{bytes_tensor(r->buffer.data(), r->size)};
        r->data_work = wire.recv(data, r->peer, tag + kDataTagOffset);
      }
    } catch (...) {
      r->error = std::current_exception();
    }
    const std::lock_guard<std::mutex> lock(state->mutex);
    r->posted = true;
    ++state->next;
    state->changed.notify_all();
    if (r->error) return;  // later receives cannot be matched any more
  }
}

class TorchTransport final : public comm::Transport {
 public:
  TorchTransport(c10d::Backend& wire, comm::DeviceOps& host, int tag)
      : wire_(wire), host_(host), tag_(tag), state_(std::make_shared<Receives>()) {}

  ~TorchTransport() override {
    bool sizes_pending = false;
    {
      const std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
      sizes_pending = state_->next < state_->queue.size();
    }
    state_->changed.notify_all();
    if (poster_.joinable()) {
      // A size that never comes (a peer failed) would hold the poster: it keeps what it uses.
      if (sizes_pending) {
        poster_.detach();
      } else {
        poster_.join();
      }
    }
    // Payload receives still in flight (an exception left the algorithm): c10d cannot take them
    // back, so their buffers stay for the life of the process rather than be freed under it.
    for (const auto& r : state_->queue) {
      if (r->data_work) abandoned().push_back(r);
    }
    for (Send& s : sends_) {
      try {
        s.size_work->wait();
        if (s.data_work) s.data_work->wait();
      } catch (const std::exception&) {
        abandoned_sends().push_back(std::make_shared<Send>(std::move(s)));
      }
    }
  }

  const char* name() const override { return "torch"; }

  void post_send(int peer, Payload&& payload, uint64_t /*round*/) override {
    Send& s = sends_.emplace_back();
    s.size = payload.size;
    s.payload = std::move(payload);
    std::vector<at::Tensor> size{bytes_tensor(&s.size, sizeof s.size)};
    s.size_work = wire_.send(size, peer, tag_);
    if (s.payload.size > 0) {
      std::vector<at::Tensor> data{bytes_tensor(s.payload.data(), s.payload.size)};
      s.data_work = wire_.send(data, peer, tag_ + kDataTagOffset);
    }
  }

  void post_recv(int peer, size_t capacity, uint64_t /*round*/) override {
    auto r = std::make_shared<Recv>();
    r->peer = peer;
    r->capacity = capacity;
    std::vector<at::Tensor> size{bytes_tensor(&r->size, sizeof r->size)};
    r->size_work = wire_.recv(size, peer, tag_);
    {
      const std::lock_guard<std::mutex> lock(state_->mutex);
      state_->queue.push_back(std::move(r));
    }
    if (!poster_.joinable()) {
      poster_ = std::thread(post_payloads, state_, std::ref(wire_), std::ref(host_), tag_);
    }
    state_->changed.notify_all();
  }

  void receives_announced() override {}

  void wait_recv(Payload& into) override {
    std::shared_ptr<Recv> r;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      r = state_->queue.front();
      state_->changed.wait(lock, [&] { return r->posted; });
    }
    if (r->error) std::rethrow_exception(r->error);
    if (r->data_work) wait_for(r->data_work, "receiving a payload");
    into.size = r->size;
    std::swap(into.memory, r->buffer);
    into.rewritten();
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->queue.pop_front();
    --state_->next;
  }

  void progress() override {}

  void reclaim(std::vector<Payload>& free, bool wait) override {
    if (!wait) return;  // a send's completion shows only in wait()
    while (!sends_.empty()) {
      Send& s = sends_.front();
      wait_for(s.size_work, "sending a payload's size");
      if (s.data_work) wait_for(s.data_work, "sending a payload");
      free.push_back(std::move(s.payload));
      sends_.pop_front();
    }
  }

 private:
  static std::vector<std::shared_ptr<Recv>>& abandoned() {
    static auto* kept = new std::vector<std::shared_ptr<Recv>>;
    return *kept;
  }
  static std::vector<std::shared_ptr<Send>>& abandoned_sends() {
    static auto* kept = new std::vector<std::shared_ptr<Send>>;
    return *kept;
  }

  c10d::Backend& wire_;
  comm::DeviceOps& host_;
  int tag_;
  std::shared_ptr<Receives> state_;
  std::thread poster_;
  std::deque<Send> sends_;
};

}  // namespace

std::unique_ptr<comm::Transport> make_torch_transport(c10d::Backend& wire, comm::DeviceOps& host,
                                                      int tag) {
  return std::make_unique<TorchTransport>(wire, host, tag);
}

}  // namespace hycc::torch_backend
