#include "train_comm.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "codec/float_io.h"

namespace hycc::train {
namespace {

// Adds the wall time of its lifetime to *seconds.
class Timed {
 public:
  explicit Timed(double* seconds) : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    *seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double* seconds_;
  std::chrono::steady_clock::time_point start_;
};

TensorView f32(float* data, size_t count) { return {DType::kF32, count, data}; }

}  // namespace

WireTensor::WireTensor(const TrainComm& c, float* data, size_t count, bool fill)
    : data_(data), view_{DType::kF32, count, data} {
  if (c.wire == DType::kF32) return;
  scratch_.resize(count);
  if (fill) codec::store_from_float(data, count, {DType::kBF16, count, scratch_.data()}, 0);
  view_ = {DType::kBF16, count, scratch_.data()};
}

WireTensor::WireTensor(const TrainComm& c, const float* data, size_t count)
    : WireTensor(c, const_cast<float*>(data), count) {
  data_ = nullptr;  // never written: store() has nothing to do
}

void WireTensor::store() {
  if (view_.dtype == DType::kF32 || data_ == nullptr) return;
  codec::load_as_float(view_, 0, view_.count, data_);
}

CollectiveOptions TrainComm::policy(uint64_t key) const {
  CollectiveOptions o;
  o.policy = &engine;
  o.key = key;
  return o;
}

void record_sent(TrainComm& c, std::string_view dimension, std::string_view kind, const float* data,
                 size_t count) {
  if (c.dump != nullptr) c.dump->record(dimension, kind, data, count);
}

void policy_allreduce(TrainComm& c, const Communicator& comm, float* data, size_t count,
                      uint64_t key) {
  if (comm.size() == 1 || count == 0) return;
  const Timed t(&c.seconds);
  WireTensor w(c, data, count);
  allreduce(comm, w.view(), w.view(), ReduceOp::kSum, c.policy(key));
  w.store();
}

double exact_sum(TrainComm& c, const Communicator& comm, double value) {
  if (comm.size() == 1) return value;
  static_assert(sizeof(double) == 2 * sizeof(float));
  std::vector<float> all(2 * static_cast<size_t>(comm.size()));
  float mine[2];
  std::memcpy(mine, &value, sizeof(value));
  {
    const Timed t(&c.seconds);
    allgather(comm, ConstTensorView{DType::kF32, 2, mine}, f32(all.data(), all.size()));
  }
  double sum = 0.0;
  for (int r = 0; r < comm.size(); ++r) {
    double v;
    std::memcpy(&v, all.data() + 2 * r, sizeof(v));
    sum += v;
  }
  return sum;
}

float exact_broadcast(TrainComm& c, const Communicator& comm, float value, int root) {
  if (comm.size() == 1) return value;
  const Timed t(&c.seconds);
  broadcast(comm, f32(&value, 1), root);
  return value;
}

void stage_send(TrainComm& c, const float* data, size_t count, int stage, int tag) {
  record_sent(c, "pp", stage > c.grid.pp().rank() ? "activation" : "gradient", data, count);
  const Timed t(&c.seconds);
  WireTensor w(c, data, count);
  send(c.grid.pp(), w.view(), stage, tag, c.policy());
}

void stage_recv(TrainComm& c, float* data, size_t count, int stage, int tag) {
  const Timed t(&c.seconds);
  WireTensor w(c, data, count, false);
  recv(c.grid.pp(), w.view(), stage, tag);
  w.store();
}

void HyccTensorParallel::allreduce_sum(float* data, size_t count, const char* what) {
  if (c_.grid.tp().size() > 1) record_sent(c_, "tp", what, data, count);
  policy_allreduce(c_, c_.grid.tp(), data, count, 0);
}

}  // namespace hycc::train
