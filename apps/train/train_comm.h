// Every byte the parallel trainer sends, through hycc: collectives and point to point on the
// grid's named communicators with the PolicyEngine (the policy picks the codec or gradient
// compressor by dimension: tp, pp, dp, zero, embedding), and exact scalar reductions with
// default options (native MPI, uncompressed). Each call is timed into TrainComm::seconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpt_model.h"
#include "hycc/collectives.h"
#include "hycc/grid.h"
#include "hycc/policy_engine.h"
#include "tensor_dump.h"

namespace hycc::train {

struct TrainComm {
  TrainComm(const ParallelGrid& g, PolicyEngine& e) : grid(g), engine(e) {}

  const ParallelGrid& grid;
  PolicyEngine& engine;
  double seconds = 0.0;        // time inside hycc calls since the caller last reset it
  TensorDump* dump = nullptr;  // --dump-tensors: samples of what is sent
  // The element type of every tensor the trainer sends (activations, their gradients, weight
  // gradients, ZeRO parameters): float32, or bf16 (--precision bf16, rounded to nearest even).
  DType wire = DType::kF32;

  // Options handing the call to the engine; `key` identifies the tensor for error feedback.
  CollectiveOptions policy(uint64_t key = 0) const;
};

// A float32 buffer as it travels: itself, or (wire bf16) its bf16 rounding in a scratch buffer
// that store() widens back into it.
class WireTensor {
 public:
  // `fill`: round data into the scratch (false for a buffer that only receives).
  WireTensor(const TrainComm& c, float* data, size_t count, bool fill = true);
  WireTensor(const TrainComm& c, const float* data, size_t count);  // a send buffer
  TensorView view() { return view_; }
  // The received values back into the float32 buffer (nothing to do for float32).
  void store();

 private:
  float* data_;
  std::vector<uint16_t> scratch_;
  TensorView view_;
};

// Hands what a dimension is about to send to the tensor dump, if there is one.
void record_sent(TrainComm& c, std::string_view dimension, std::string_view kind, const float* data,
                 size_t count);

// data (count) = sum over comm, in place, decided by the policy (the comm's dimension).
void policy_allreduce(TrainComm& c, const Communicator& comm, float* data, size_t count,
                      uint64_t key);

// Sum of one double per rank of comm, identical on every rank and exact to the last bit: the
// values travel as bytes (an uncompressed allgather of two floats each) and every rank adds
// them in rank order.
double exact_sum(TrainComm& c, const Communicator& comm, double value);

// The value of `root` on every rank of comm (uncompressed broadcast).
float exact_broadcast(TrainComm& c, const Communicator& comm, float value, int root);

// Point to point on the pipeline communicator (by stage), under the pp policy.
void stage_send(TrainComm& c, const float* data, size_t count, int stage, int tag);
void stage_recv(TrainComm& c, float* data, size_t count, int stage, int tag);

// Megatron's tensor-parallel reductions on grid.tp() under the tp policy.
class HyccTensorParallel final : public TensorParallelOps {
 public:
  explicit HyccTensorParallel(TrainComm& c) : c_(c) {}
  void allreduce_sum(float* data, size_t count, const char* what) override;

 private:
  TrainComm& c_;
};

}  // namespace hycc::train
