// The hycc c10d backend: what torch.distributed calls for a process group created with backend
// "hycc" (docs/torch.md). Four gloo backends on the same ranks sit under it: `inner` takes, on
// the caller's thread, every call hycc does not compress (other reductions, integer types,
// gather, scatter, object collectives, uncompressed point to point); two wires carry hycc's own
// collectives, one per lane (call_lane.h): reductions (allreduce, reduce_scatter_tensor) and
// gathers (all_gather_into_tensor, all_gather, broadcast, all_to_all_single); the fourth its
// compressed point to point (p2p.h). For the calls hycc takes (on float32/bf16/f16 CPU tensors)
// the policy decides on the caller's thread where its rules alone decide: a call it leaves
// uncompressed is the inner backend's at once, as on gloo. The others go to their lane in the
// order they were made, where the policy runs them (hycc's collectives on a Communicator over the
// lane's wire), their gradient state keyed by their place in the step (step_keys.h). Each
// returns a Work whose future completes, or fails with hycc's message, when the call is done.
//
// CUDA tensors (docs/torch.md, "CUDA tensors"): a fifth backend, NCCL on the same ranks, takes
// the calls on them hycc leaves, as gloo takes the CPU ones; the calls hycc compresses go to the
// same lanes, where hycc's device collectives run them on a stream of the lane ordered after the
// caller's current stream (cuda_order.h), over NCCL between the ranks (payload sizes and the
// small collectives on the lane's gloo wire) or staged over gloo where NCCL cannot run.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/policy.h"
#include "torch/call_lane.h"
#include "torch/p2p.h"
#include "torch/step_keys.h"

namespace hycc {
class PolicyEngine;
}
namespace hycc::torch_backend {
class CudaOrder;
}

namespace hycc::torch_backend {

// The dimension a group's description names (Megatron-core's group names, DeviceMesh dimension
// names, "default_pg"): "dp", "tp", "pp", "embedding", "zero" or "" (docs/torch.md, the table).
std::string dimension_from_description(const std::string& description);

class HyccBackend final : public c10d::Backend {
 public:
  // `cuda_inner`: NCCL for CUDA tensors, or null where the process has no GPU.
  HyccBackend(c10::intrusive_ptr<c10d::Backend> inner,
              c10::intrusive_ptr<c10d::Backend> reductions_wire,
              c10::intrusive_ptr<c10d::Backend> gathers_wire,
              c10::intrusive_ptr<c10d::Backend> p2p_wire,
              c10::intrusive_ptr<c10d::Backend> cuda_inner = {});
  ~HyccBackend() override;

  const std::string getBackendName() const override { return "hycc"; }
  // Runs the calls made so far, then shuts the inner and wire backends down
  // (destroy_process_group).
  void shutdown() override;

  // Names the group's dimension before its first call ("dp", "tp", "pp", "embedding", "zero",
  // "zero_grad", "zero_param" or "" for the description's); after it, an InvalidArgument.
  void set_dimension(const std::string& dimension);
  // The dimension the calls of this group take ("" before the first call, unless set).
  std::string dimension() const;
  // The shapes of the tensors laid end to end in `bucket` (a DDP gradient bucket:
  // hycc.torch.register_ddp), for the next allreduce of it: a PowerSGD rule compresses each
  // matrix among them instead of the flat buffer's square view (docs/gradients.md). Shapes that
  // do not tile the bucket: InvalidArgument.
  void set_bucket_shapes(const at::Tensor& bucket, std::vector<std::vector<size_t>> shapes);

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Coalesced calls (coalesced.cc; torch's _coalescing_manager and functional collectives): each
  // tensor under its own rule, as the same calls one by one would run, in one Work. The
  // compressed ones run on their lane in the call's order; the others go to the inner backend's
  // coalesced call together (gloo's bits, as a gloo group gives). Tensors of mixed element types
  // or devices, or ones hycc does not take, make the whole call the inner backend's.
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  // _coalescing_manager(device=...): the calls between the two complete with endCoalescing's
  // Work (each call still returns its own).
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // dist.set_timeout: the timeout of every backend under this one (the calls made after it).
  void setTimeout(std::chrono::milliseconds timeout) override;
  // The group's options as torch reads them (`group._get_backend(device).options`): the backend's
  // name and its timeout.
  c10::intrusive_ptr<Options> getBackendOptions() override;

  // The calls hycc leaves to the inner backend.
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  enum Lane { kReductions = 0, kGathers = 1 };
  static Lane lane_of(Operation op);
  // Runs `call` on the lane of `op` after the calls before it; the Work completes with `outputs`.
  c10::intrusive_ptr<c10d::Work> enqueue(Operation op, c10d::OpType type,
                                         std::vector<at::Tensor> outputs,
                                         std::function<void()> call);
  // The communicator of a call on the lane of `op` (made at the group's first call, when torch
  // has set its description). On a dp group, reduce_scatter and allgather run on a communicator
  // named "zero" (FSDP).
  const Communicator& communicator(Operation op);
  // The policy's decision for a call of `bytes` (the size the policy path decides on: the
  // gathered size of an allgather) of `like`'s element type, taken here when its rules alone
  // decide (no adaptive rule; otherwise none, and the lane's call decides). A call it leaves
  // uncompressed runs at once on the inner backend, through direct(); the others go to their
  // lane with the decision, which the policy path takes instead of deciding again.
  struct Routing {
    std::optional<PolicyDecision> decision;
    bool compresses = true;
  };
  Routing route(Operation op, size_t bytes, const at::Tensor& like);
  // The state key of a gradient call (allreduce, reduce_scatter) on `t` that goes to its lane
  // (step_keys.h), after the states it makes stale are dropped. On the caller's thread, in the
  // program's order.
  uint64_t gradient_key(Operation op, const at::Tensor& t);
  // A call (or a coalesced call's tensor) hycc leaves to the inner backend: its decision and
  // size, for the engine's statistics.
  struct NativeCall {
    PolicyDecision decision;
    size_t bytes = 0;
  };
  // A Work that completes with `work` of the inner backend after `after` (AVG's division) ran,
  // recording `calls` in the engine's statistics as the policy path records native ones.
  c10::intrusive_ptr<c10d::Work> direct(Operation op, std::vector<NativeCall> calls,
                                        const c10::intrusive_ptr<c10d::Work>& work,
                                        std::vector<at::Tensor> outputs,
                                        std::function<void()> after = {});
  // The lane's part of the compressed calls (on the lane's thread): hycc's collective on the
  // host, or for a CUDA tensor (`order` set) its device collective on the lane's stream.
  // `reduce`: the caller's reduction (PREMUL_SUM's factor), `op` hycc's; `decision` and `key` as
  // policy_options() takes them.
  // `pieces`: the bucket's shapes (set_bucket_shapes), or none.
  void run_allreduce(at::Tensor t, const c10d::ReduceOp& reduce, ReduceOp op,
                     const std::optional<PolicyDecision>& decision, uint64_t key,
                     const std::shared_ptr<CudaOrder>& order,
                     const std::shared_ptr<const std::vector<std::vector<size_t>>>& pieces = {});
  // The shapes set for `t`'s memory (set_bucket_shapes), taken out; none if none were.
  std::shared_ptr<const std::vector<std::vector<size_t>>> take_bucket_shapes(const at::Tensor& t);
  void run_reduce_scatter(at::Tensor out, const at::Tensor& in, const c10d::ReduceOp& reduce,
                          ReduceOp op, const std::optional<PolicyDecision>& decision, uint64_t key,
                          const std::shared_ptr<CudaOrder>& order);
  void run_allgather(at::Tensor out, const at::Tensor& in,
                     const std::optional<PolicyDecision>& decision,
                     const std::shared_ptr<CudaOrder>& order);
  // The Work of a call made between startCoalescing() and endCoalescing() joins the group's.
  c10::intrusive_ptr<c10d::Work> made(c10::intrusive_ptr<c10d::Work> work);
  // A coalesced call's one Work (coalesced.cc): that of its tensors hycc leaves (`native`, null
  // if none) and that of its `compressed` calls, run in turn on the lane of `op`, joined.
  c10::intrusive_ptr<c10d::Work> coalesced_work(Operation op, c10d::OpType type,
                                                const std::vector<at::Tensor>& outputs,
                                                c10::intrusive_ptr<c10d::Work> native,
                                                std::vector<std::function<void()>> compressed);
  void stop_lanes();
  // The backend that takes a call on `t` hycc leaves: gloo for a CPU tensor, NCCL for a CUDA one
  // (InvalidArgument if the group has none).
  const c10::intrusive_ptr<c10d::Backend>& inner_for(const at::Tensor& t) const;
  // A CUDA call hycc leaves, `work` of the NCCL backend, recorded in the engine's statistics
  // when it is made (its time is NCCL's, on the caller's stream).
  c10::intrusive_ptr<c10d::Work> cuda_direct(Operation op, const std::vector<NativeCall>& calls,
                                             c10::intrusive_ptr<c10d::Work> work);
  // The policy's decision for a point-to-point call on `t` (none for a tensor hycc does not
  // take), its codec the one a compressed call sends with; both sides decide alike from their
  // tensor. A send left uncompressed is recorded as a native call.
  Routing p2p_route(const at::Tensor& t);
  // The thread that finishes the compressed receives from `src` (-1: any source) with `tag`, in
  // their order.
  CallLane& receiver(int src, int tag);
  // A compressed receive from `src` (-1: any source) into `t` with `codec`.
  c10::intrusive_ptr<c10d::Work> recv_compressed(const at::Tensor& t, const CodecConfig& codec,
                                                 int src, int tag);

  c10::intrusive_ptr<c10d::Backend> inner_;
  c10::intrusive_ptr<c10d::Backend> cuda_inner_;  // null without a GPU
  StepKeys keys_;
  std::array<std::unique_ptr<CallLane>, 2> lanes_;
  std::unique_ptr<CallLane> waiter_;       // completes direct() Works whose gloo Work has no future
  c10::intrusive_ptr<c10d::Backend> p2p_;  // compressed point to point (p2p.h)
  std::shared_ptr<P2pOrder> p2p_order_ = std::make_shared<P2pOrder>();
  std::map<std::pair<int, int>, std::unique_ptr<CallLane>> receivers_;  // under mutex_
  struct LaneComms {
    std::optional<Communicator> comm;
    std::optional<Communicator> zero;
  };
  std::array<LaneComms, 2> comms_;
  std::string dimension_;
  bool dimension_set_ = false;
  c10::intrusive_ptr<Options> options_;  // under mutex_
  // set_bucket_shapes(): by the bucket's address and element count; under mutex_.
  std::map<std::pair<const void*, int64_t>, std::shared_ptr<const std::vector<std::vector<size_t>>>>
      bucket_shapes_;
  std::atomic<bool> coalescing_ = false;  // startCoalescing() to endCoalescing(); set under mutex_
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;  // the calls made meanwhile
  bool started_ = false;                                   // a lane's communicators exist
  mutable std::mutex mutex_;
};

// The process's policy engine, shared by every hycc group: HYCC_POLICY (a preset or a TOML file;
// default baseline) unless set_policy chose one before the first call.
PolicyEngine& engine();
void set_policy(const std::string& preset_or_path);

}  // namespace hycc::torch_backend
