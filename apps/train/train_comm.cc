#include "train_comm.h"

#include <chrono>
#include <cstring>
#include <vector>

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
  allreduce(comm, f32(data, count), f32(data, count), ReduceOp::kSum, c.policy(key));
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
  send(c.grid.pp(), ConstTensorView{DType::kF32, count, data}, stage, tag, c.policy());
}

void stage_recv(TrainComm& c, float* data, size_t count, int stage, int tag) {
  const Timed t(&c.seconds);
  recv(c.grid.pp(), f32(data, count), stage, tag);
}

void HyccTensorParallel::allreduce_sum(float* data, size_t count, const char* what) {
  if (c_.grid.tp().size() > 1) record_sent(c_, "tp", what, data, count);
  policy_allreduce(c_, c_.grid.tp(), data, count, 0);
}

}  // namespace hycc::train
