#include "grad/exchange.h"

#include <chrono>

#include "hycc/error.h"

namespace hycc::grad {
namespace {

// Runs fn and adds its duration to `seconds`.
template <typename Fn>
void timed(double& seconds, Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Words travel as float32 elements: with codec none the collectives copy their bits unchanged.
ConstTensorView words_view(std::span<const uint32_t> w) {
  return {DType::kF32, w.size(), w.data()};
}
TensorView words_view(std::span<uint32_t> w) { return {DType::kF32, w.size(), w.data()}; }

}  // namespace

void Exchange::allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) {
  if (all.size() != mine.size() * static_cast<size_t>(size())) {
    throw InvalidArgument(tagged("grad", "allgather: ", all.size(), " words for ", size(),
                                 " ranks of ", mine.size()));
  }
  timed(seconds_, [&] { do_allgather(mine, all); });
}

void Exchange::alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) {
  if (send.size() != recv.size() || send.size() % static_cast<size_t>(size()) != 0) {
    throw InvalidArgument(tagged("grad", "alltoall: ", send.size(), " and ", recv.size(),
                                 " words for ", size(), " ranks"));
  }
  timed(seconds_, [&] { do_alltoall(send, recv); });
}

void Exchange::allreduce(std::span<float> data, ReduceOp op) {
  timed(seconds_, [&] { do_allreduce(data, op); });
}

void Exchange::reduce_scatter(std::span<float> data, ReduceOp op) {
  timed(seconds_, [&] { do_reduce_scatter(data, op); });
}

CommExchange::CommExchange(const Communicator& comm, int tag) : comm_(comm) {
  options_.codec = CodecConfig();  // none: uncompressed, bit for bit
  options_.tag = tag;
}

void CommExchange::do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) {
  hycc::allgather(comm_, words_view(mine), words_view(all), options_);
}

void CommExchange::do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) {
  hycc::alltoall(comm_, words_view(send), words_view(recv), options_);
}

void CommExchange::do_allreduce(std::span<float> data, ReduceOp op) {
  const TensorView v{DType::kF32, data.size(), data.data()};
  hycc::allreduce(comm_, v, v, op, options_);
}

void CommExchange::do_reduce_scatter(std::span<float> data, ReduceOp op) {
  const ChunkRange mine = chunk_range(data.size(), size(), rank());
  hycc::reduce_scatter(comm_, {DType::kF32, data.size(), data.data()},
                       {DType::kF32, mine.count, data.data() + mine.offset}, op, options_);
}

}  // namespace hycc::grad
