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

at::Tensor byte_tensor(size_t bytes) {
  return at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
}

// A compressed send: its size and its stream in flight on the wire; complete once both are.
class SendWork final : public c10d::Work {
 public:
  SendWork(int rank, at::Tensor size, at::Tensor stream, WorkPtr size_work, WorkPtr data_work)
      : Work(rank, c10d::OpType::SEND),
        size_(std::move(size)),
        stream_(std::move(stream)),
        size_work_(std::move(size_work)),
        data_work_(std::move(data_work)) {}

  bool wait(std::chrono::milliseconds timeout) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!waited_) {
      waited_ = true;
      try {
        size_work_->wait(timeout);
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
  at::Tensor size_, stream_;  // the bytes gloo sends from
  WorkPtr size_work_, data_work_;
  std::mutex mutex_;
  bool waited_ = false;
  std::exception_ptr error_;
};

}  // namespace

WorkPtr send_compressed(c10d::Backend& wire, const at::Tensor& t, const CodecConfig& codec, int dst,
                        int tag, size_t* stream_bytes) {
  const TensorView in = view_of(t);
  at::Tensor stream = byte_tensor(max_compressed_bytes(codec, in.dtype, in.count));
  const size_t n =
      compress(codec, in, std::span(static_cast<std::byte*>(stream.data_ptr()), stream.numel()));
  stream = stream.narrow(0, 0, static_cast<int64_t>(n));
  at::Tensor size = byte_tensor(sizeof(uint64_t));
  const uint64_t bytes = n;
  std::memcpy(size.data_ptr(), &bytes, sizeof(bytes));
  std::vector<at::Tensor> size_list{size}, stream_list{stream};
  WorkPtr size_work = wire.send(size_list, dst, tag);
  WorkPtr data_work = wire.send(stream_list, dst, tag + kPayloadTag);
  *stream_bytes = n;
  return c10::make_intrusive<SendWork>(wire.getRank(), size, stream, std::move(size_work),
                                       std::move(data_work));
}

PendingRecv post_recv(c10d::Backend& wire, int src, int tag) {
  PendingRecv p;
  p.src = src;
  p.tag = tag;
  p.size = byte_tensor(sizeof(uint64_t));
  std::vector<at::Tensor> size_list{p.size};
  p.size_work = wire.recv(size_list, src, tag);
  return p;
}

void finish_recv(c10d::Backend& wire, PendingRecv& pending, const CodecConfig& codec,
                 at::Tensor& t) {
  const TensorView out = view_of(t);
  pending.size_work->wait();
  uint64_t bytes = 0;
  std::memcpy(&bytes, pending.size.data_ptr(), sizeof(bytes));
  if (bytes == 0 || bytes > max_compressed_bytes(codec, out.dtype, out.count)) {
    throw CorruptStream(tagged("torch", "rank ", pending.src, " sent a stream of ", bytes,
                               " bytes for ", out.count, " elements in ", codec.spec()));
  }
  at::Tensor stream = byte_tensor(bytes);
  std::vector<at::Tensor> stream_list{stream};
  wire.recv(stream_list, pending.src, pending.tag + kPayloadTag)->wait();
  decompress(std::span(static_cast<const std::byte*>(stream.data_ptr()), bytes), out);
}

}  // namespace hycc::torch_backend
