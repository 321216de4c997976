#include "torch/p2p.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "hycc/error.h"
#include "torch/tensors.h"

namespace hycc::torch_backend {
namespace {

using WorkPtr = c10::intrusive_ptr<c10d::Work>;

constexpr size_t kHeaderBytes = 2 * sizeof(uint64_t);

at::Tensor byte_tensor(size_t bytes) {
  return at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
}

// A compressed send: its size and its stream in flight on the wire; complete once both are.
class SendWork final : public c10d::Work {
 public:
  SendWork(int rank, at::Tensor header, at::Tensor stream, WorkPtr header_work, WorkPtr data_work)
      : Work(rank, c10d::OpType::SEND),
        header_(std::move(header)),
        stream_(std::move(stream)),
        header_work_(std::move(header_work)),
        data_work_(std::move(data_work)) {}

  bool wait(std::chrono::milliseconds timeout) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!waited_) {
      waited_ = true;
      try {
        header_work_->wait(timeout);
        data_work_->wait(timeout);
      } catch (...) {
        error_ = std::current_exception();
      }
      finish(error_);
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  at::Tensor header_, stream_;  // the bytes gloo sends from
  WorkPtr header_work_, data_work_;
  std::mutex mutex_;
  bool waited_ = false;
  std::exception_ptr error_;
};

}  // namespace

uint64_t P2pOrder::next_send(int dst, int tag) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return sent_[{dst, tag}]++;
}

void P2pOrder::in_turn(int src, int tag, uint64_t place, const std::function<void()>& post) {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t& posted = posted_[{src, tag}];
  turn_.wait(lock, [&] { return posted == place; });
  lock.unlock();
  std::exception_ptr error;
  try {
    post();
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  ++posted;
  lock.unlock();
  turn_.notify_all();
  if (error) std::rethrow_exception(error);
}

WorkPtr send_compressed(c10d::Backend& wire, const at::Tensor& t, const CodecConfig& codec, int dst,
                        int tag, uint64_t place, size_t* stream_bytes) {
  const TensorView in = view_of(t);
  at::Tensor stream = byte_tensor(max_compressed_bytes(codec, in.dtype, in.count));
  const size_t n =
      compress(codec, in, std::span(static_cast<std::byte*>(stream.data_ptr()), stream.numel()));
  stream = stream.narrow(0, 0, static_cast<int64_t>(n));
  at::Tensor header = byte_tensor(kHeaderBytes);
  const uint64_t fields[2] = {n, place};
  std::memcpy(header.data_ptr(), fields, sizeof(fields));
  std::vector<at::Tensor> header_list{header}, stream_list{stream};
  WorkPtr header_work = wire.send(header_list, dst, tag);
  WorkPtr data_work = wire.send(stream_list, dst, tag + kPayloadTag);
  *stream_bytes = n;
  return c10::make_intrusive<SendWork>(wire.getRank(), header, stream, std::move(header_work),
                                       std::move(data_work));
}

PendingRecv post_recv(c10d::Backend& wire, int src, int tag) {
  PendingRecv p;
  p.src = src;
  p.tag = tag;
  p.header = byte_tensor(kHeaderBytes);
  std::vector<at::Tensor> header_list{p.header};
  p.header_work = src < 0 ? wire.recvAnysource(header_list, tag) : wire.recv(header_list, src, tag);
  return p;
}

void finish_recv(c10d::Backend& wire, P2pOrder& order, PendingRecv& pending,
                 const CodecConfig& codec, at::Tensor& t) {
  const TensorView out = view_of(t);
  pending.header_work->wait();
  pending.source = pending.src >= 0 ? pending.src : pending.header_work->sourceRank();
  uint64_t fields[2] = {0, 0};
  std::memcpy(fields, pending.header.data_ptr(), sizeof(fields));
  const uint64_t bytes = fields[0], place = fields[1];
  at::Tensor stream;
  WorkPtr payload;
  order.in_turn(pending.source, pending.tag, place, [&] {
    // Checked in turn: a later payload from the peer waits for this one's receive.
    if (bytes == 0 || bytes > max_compressed_bytes(codec, out.dtype, out.count)) {
      throw CorruptStream(tagged("torch", "rank ", pending.source, " sent a stream of ", bytes,
                                 " bytes for ", out.count, " elements in ", codec.spec()));
    }
    stream = byte_tensor(bytes);
    std::vector<at::Tensor> stream_list{stream};
    payload = wire.recv(stream_list, pending.source, pending.tag + kPayloadTag);
  });
  payload->wait();
  decompress(std::span(static_cast<const std::byte*>(stream.data_ptr()), bytes), out);
}

}  // namespace hycc::torch_backend
