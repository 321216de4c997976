// The hycc c10d backend: what torch.distributed calls for a process group created with backend
// "hycc" (docs/torch.md). Two gloo backends on the same ranks sit under it: `inner` takes, on the
// caller's thread, every call hycc does not compress (other reductions, integer types, gather,
// scatter, object collectives, point to point); `wire` carries hycc's own traffic. The calls hycc
// runs (allreduce, reduce_scatter_tensor, all_gather_into_tensor, broadcast, all_to_all_single
// on float32/bf16/f16 CPU tensors) go, in the order they were made, to one worker thread that
// runs them through the policy (hycc's collectives on a Communicator over the wire); each returns
// a Work whose future completes, or fails with hycc's message, when the call is done.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "hycc/collectives.h"
#include "hycc/comm.h"

namespace hycc {
class PolicyEngine;
}

namespace hycc::torch_backend {

// The dimension a group's description names (Megatron-core's group names, DeviceMesh dimension
// names, "default_pg"): "dp", "tp", "pp", "embedding", "zero" or "" (docs/torch.md, the table).
std::string dimension_from_description(const std::string& description);

class HyccBackend final : public c10d::Backend {
 public:
  HyccBackend(c10::intrusive_ptr<c10d::Backend> inner, c10::intrusive_ptr<c10d::Backend> wire);
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

  // The calls hycc leaves to the inner backend.
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
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
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  // Runs `call` on the worker after the calls before it; the Work completes with `outputs`.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         std::function<void()> call);
  void work_loop();
  void stop_worker();
  // The communicator of the calls (made on the worker at the first call, when torch has set the
  // group's description).
  // On a dp group, reduce_scatter and allgather run on a communicator named "zero" (FSDP).
  const Communicator& communicator(Operation op);

  c10::intrusive_ptr<c10d::Backend> inner_;
  c10::intrusive_ptr<c10d::Backend> wire_;
  std::optional<Communicator> comm_;
  std::optional<Communicator> zero_comm_;
  std::string dimension_;
  bool dimension_set_ = false;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

// The process's policy engine, shared by every hycc group: HYCC_POLICY (a preset or a TOML file;
// default baseline) unless set_policy chose one before the first call.
PolicyEngine& engine();
void set_policy(const std::string& preset_or_path);

}  // namespace hycc::torch_backend
