#include "torch/backend.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <utility>

#include "common/xxh3.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/error.h"
#include "hycc/policy.h"
#include "hycc/policy_engine.h"
#include "policy/comm_names.h"
#include "policy/engine_calls.h"
#include "torch/call_args.h"
#include "torch/cuda_order.h"
#include "torch/p2p.h"
#include "torch/tensors.h"
#include "torch/torch_group.h"
#include "torch/work.h"

namespace hycc::torch_backend {
namespace {

using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// `decision`: the one route() took on the caller's thread, if any; `key`: the call's gradient
// state key (gradient_key(), 0 for the engine's buffer key).
CollectiveOptions policy_options(const std::optional<PolicyDecision>& decision, uint64_t key = 0) {
  CollectiveOptions o;
  o.policy = &engine();
  o.decision = decision ? &*decision : nullptr;
  o.key = key;
  return o;
}

// The options of a device collective on a lane's stream (cuda_order.h); as policy_options.
DeviceCollectiveOptions device_options(const std::optional<PolicyDecision>& decision, uint64_t key,
                                       DeviceStream stream) {
  DeviceCollectiveOptions o;
  o.policy = &engine();
  o.decision = decision ? &*decision : nullptr;
  o.key = key;
  o.stream = stream;
  o.backend = DeviceBackend::kCuda;
  return o;
}

// Where a lane runs a call: on the host for a CPU tensor (no order), or for a CUDA one under a
// CudaScope, on the lane's stream of its device.
class Placed {
 public:
  explicit Placed(const std::shared_ptr<CudaOrder>& order) {
    if (order) scope_.emplace(*order);
  }
  bool on_device() const { return scope_.has_value(); }
  DeviceStream stream() const { return scope_->stream(); }
  // The call's last step: on the device, waits for the lane's stream.
  void finish() const {
    if (scope_) scope_->finish();
  }

 private:
  std::optional<CudaScope> scope_;
};

// A group's identity for its step keys: the order in which this process made its hycc groups,
// and the group's size (the same in every run of the program).
uint64_t group_identity(int size) {
  static std::atomic<uint64_t> made{0};
  const uint64_t fields[] = {made.fetch_add(1), uint64_t(size)};
  return xxh3(fields, sizeof(fields));
}

std::mutex& engine_mutex() {
  static std::mutex m;
  return m;
}
std::unique_ptr<PolicyEngine>& engine_slot() {
  static std::unique_ptr<PolicyEngine> e;
  return e;
}

// HYCC_TORCH_DIMENSIONS: DESCRIPTION=DIMENSION pairs that override the table (parsed on every
// backend's creation until it parses, so that a bad value fails init_process_group).
const CommNames& description_overrides() {
  static const CommNames names = [] {
    const char* spec = std::getenv("HYCC_TORCH_DIMENSIONS");
    return CommNames::parse(spec != nullptr ? spec : "", "HYCC_TORCH_DIMENSIONS");
  }();
  return names;
}

bool contains(const std::string& text, std::string_view word) {
  return text.find(word) != std::string::npos;
}

}  // namespace

PolicyEngine& engine() {
  const std::lock_guard<std::mutex> lock(engine_mutex());
  auto& e = engine_slot();
  if (!e) e = std::make_unique<PolicyEngine>(PolicyEngine::from_environment("baseline"));
  return *e;
}

void set_policy(const std::string& preset_or_path) {
  auto e = std::make_unique<PolicyEngine>(Policy::load(preset_or_path));
  const std::lock_guard<std::mutex> lock(engine_mutex());
  if (engine_slot()) {
    throw InvalidArgument(tagged(
        "torch", "set_policy('", preset_or_path, "'): a hycc group already runs with policy '",
        engine_slot()->policy().name(), "'; set it before the first call"));
  }
  engine_slot() = std::move(e);
}

std::string dimension_from_description(const std::string& description) {
  const std::string& listed = description_overrides().apply(description);
  if (listed != description) return listed;
  std::string d = description;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  // Megatron-core's group names.
  if (contains(d, "tensor_model_parallel") || contains(d, "tensor_and_")) return "tp";
  if (contains(d, "pipeline_model_parallel")) return "pp";
  if (contains(d, "embedding") || contains(d, "position_embedding")) return "embedding";
  if (contains(d, "data_parallel") || contains(d, "data_modulo")) return "dp";
  // DeviceMesh dimensions ("mesh_dp", "mesh_tp", ...) and torchtitan's names.
  const size_t mesh = d.rfind("mesh_");
  const std::string dim = mesh == std::string::npos ? d : d.substr(mesh + 5);
  static const std::array<std::pair<std::string_view, std::string_view>, 10> kMeshNames{{
      {"dp", "dp"},
      {"ddp", "dp"},
      {"replicate", "dp"},
      {"dp_replicate", "dp"},
      {"fsdp", "zero"},
      {"dp_shard", "zero"},
      {"shard", "zero"},
      {"tp", "tp"},
      {"pp", "pp"},
      {"cp", "tp"},
  }};
  for (const auto& [name, dimension] : kMeshNames) {
    if (dim == name) return std::string(dimension);
  }
  if (d == "default_pg") return "dp";
  return "";
}

HyccBackend::HyccBackend(c10::intrusive_ptr<c10d::Backend> inner,
                         c10::intrusive_ptr<c10d::Backend> reductions_wire,
                         c10::intrusive_ptr<c10d::Backend> gathers_wire,
                         c10::intrusive_ptr<c10d::Backend> p2p_wire,
                         c10::intrusive_ptr<c10d::Backend> cuda_inner)
    : Backend(inner->getRank(), inner->getSize()),
      inner_(std::move(inner)),
      cuda_inner_(std::move(cuda_inner)),
      keys_(group_identity(inner_->getSize())) {
  description_overrides();  // a bad HYCC_TORCH_DIMENSIONS fails init_process_group
  lanes_[kReductions] = std::make_unique<CallLane>(std::move(reductions_wire));
  lanes_[kGathers] = std::make_unique<CallLane>(std::move(gathers_wire));
  waiter_ = std::make_unique<CallLane>(nullptr);
  p2p_ = std::move(p2p_wire);
}

HyccBackend::~HyccBackend() { stop_lanes(); }

void HyccBackend::stop_lanes() {
  for (auto& lane : lanes_) {
    if (lane) lane->stop();
  }
  if (waiter_) waiter_->stop();
  for (auto& [from, lane] : receivers_) lane->stop();
}

HyccBackend::Lane HyccBackend::lane_of(Operation op) {
  return op == Operation::kAllreduce || op == Operation::kReduceScatter ? kReductions : kGathers;
}

void HyccBackend::shutdown() {
  // The default group ends the program's hycc traffic (destroy_process_group): HYCC_LOG's summary
  // and JSON statistics of all ranks, as the drop-in library writes them at MPI_Finalize.
  if (getGroupDesc() == "default_pg" && lanes_[kReductions]->running()) {
    enqueue(Operation::kAllreduce, c10d::OpType::UNKNOWN, {}, [this] {
      engine().finish(communicator(Operation::kAllreduce));
    })->wait();
  }
  stop_lanes();  // the calls made so far run first
  inner_->shutdown();
  if (cuda_inner_) cuda_inner_->shutdown();
  for (auto& lane : lanes_) lane->wire()->shutdown();
}

void HyccBackend::set_dimension(const std::string& dimension) {
  if (!dimension.empty() && dimension_of(dimension, Operation::kAllreduce) == Dimension::kOther) {
    throw InvalidArgument(tagged("torch", "set_dimension('", dimension,
                                 "'): expected dp, tp, pp, zero or embedding"));
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  if (started_) {
    throw InvalidArgument(tagged("torch", "set_dimension('", dimension, "') on group '",
                                 getGroupDesc(), "' after its first call (it runs as '",
                                 comms_[kReductions].comm->name(), "')"));
  }
  dimension_ = dimension;
  dimension_set_ = true;
}

std::string HyccBackend::dimension() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return started_ ? comms_[kReductions].comm->name() : dimension_;
}

const Communicator& HyccBackend::communicator(Operation op) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) {
    const std::string name =
        dimension_set_ ? dimension_ : dimension_from_description(getGroupDesc());
    for (size_t l = 0; l < lanes_.size(); ++l) {
      auto group = std::make_shared<TorchGroup>(lanes_[l]->wire(), getGroupDesc());
      comms_[l].comm = Communicator::over(group, name);
      // On a data-parallel group, DDP reduces with allreduce; FSDP (ZeRO-3) reduce-scatters the
      // gradients (zero_grad) and all-gathers the parameters (zero_param).
      if (name == "dp") comms_[l].zero = Communicator::over(group, "zero");
    }
    started_ = true;
  }
  const LaneComms& c = comms_[lane_of(op)];
  if (c.zero && (op == Operation::kReduceScatter || op == Operation::kAllgather)) return *c.zero;
  return *c.comm;
}

WorkPtr HyccBackend::enqueue(Operation op, c10d::OpType type, std::vector<at::Tensor> outputs,
                             std::function<void()> call) {
  auto work = c10::make_intrusive<HyccWork>(getRank(), type, std::move(outputs));
  lanes_[lane_of(op)]->push([work, call = std::move(call)] {
    std::exception_ptr error;
    try {
      call();
    } catch (...) {
      error = std::current_exception();
    }
    work->complete(error);
  });
  return work;
}

uint64_t HyccBackend::gradient_key(Operation op, const at::Tensor& t) {
  StepKeys::Key k = keys_.next(op, *hycc_dtype(t), static_cast<size_t>(t.numel()));
  if (k.leaving_buffer_keys) policy::EngineCalls::drop_buffer_states(engine());
  if (!k.stale.empty()) policy::EngineCalls::drop_grad_states(engine(), k.stale);
  return k.key;
}

HyccBackend::Routing HyccBackend::route(Operation op, size_t bytes, const at::Tensor& like) {
  PolicyEngine& e = engine();
  if (e.policy().adaptive()) return {};  // its choice needs the lane's measurements
  const Communicator& comm = communicator(op);
  Routing r;
  r.decision = e.decide(comm, op, bytes, *hycc_dtype(like));
  const PolicyDecision& d = *r.decision;
  // What the policy path would compress (policy_calls.cc): everything else runs as gloo's own.
  r.compresses = getSize() > 1 && bytes > 0 && bytes >= d.threshold_bytes &&
                 (d.gradient || d.options.codec.id() != CodecId::kNone);
  if (!r.compresses) policy::EngineCalls::log_decision(e, comm, op, bytes, d);
  return r;
}

WorkPtr HyccBackend::direct(Operation op, std::vector<NativeCall> calls, const WorkPtr& work,
                            std::vector<at::Tensor> outputs, std::function<void()> after) {
  auto done = c10::make_intrusive<HyccWork>(getRank(), work->retrieveOpType(), std::move(outputs));
  const Communicator* comm = &communicator(op);  // lives as long as the backend
  const auto start = std::chrono::steady_clock::now();
  auto finish = [done, comm, op, calls = std::move(calls), start,
                 after = std::move(after)](std::exception_ptr error) {
    if (!error) {
      try {
        if (after) after();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        for (const NativeCall& c : calls) {
          CollectiveStats call;
          call.algorithm = Algorithm::kNative;
          call.message_bytes = call.raw_bytes = call.wire_bytes = c.bytes;
          call.seconds = seconds / static_cast<double>(calls.size());
          policy::EngineCalls::record(engine(), *comm, op, c.decision, call);
        }
      } catch (...) {
        error = std::current_exception();
      }
    }
    done->complete(error);
  };
  hold_inner_work(work);  // released once gloo's thread has let go of it (work.h)
  when_done(work, *waiter_, std::move(finish));
  return done;
}

const c10::intrusive_ptr<c10d::Backend>& HyccBackend::inner_for(const at::Tensor& t) const {
  if (!t.defined() || !t.is_cuda()) return inner_;
  if (!cuda_inner_) {
    throw InvalidArgument(tagged("torch", "a CUDA tensor on group '", getGroupDesc(),
                                 "', which has no NCCL backend under it (made where ",
                                 "torch.cuda.is_available() was false, or by a hycc backend ",
                                 "built without CUDA)"));
  }
  return cuda_inner_;
}

WorkPtr HyccBackend::cuda_direct(Operation op, const std::vector<NativeCall>& calls, WorkPtr work) {
  for (const NativeCall& c : calls) {
    CollectiveStats call;
    call.algorithm = Algorithm::kNative;
    call.message_bytes = call.raw_bytes = call.wire_bytes = c.bytes;
    policy::EngineCalls::record(engine(), communicator(op), op, c.decision, call);
  }
  return work;
}

// ---- the calls hycc runs ------------------------------------------------------------------------
//
// Each runs on its lane as the host collective (CPU tensors) or, under a CudaScope, as the
// device collective on the lane's stream (CUDA tensors, `order` set). A CUDA call hycc leaves
// goes to NCCL as the caller made it (NCCL reduces AVG and PREMUL_SUM itself).

WorkPtr HyccBackend::allreduce(std::vector<at::Tensor>& tensors,
                               const c10d::AllreduceOptions& opts) {
  const std::optional<ReduceOp> op = hycc_reduction(opts.reduceOp);
  if (tensors.size() != 1 || !hycc_takes(tensors[0]) || !op) {
    return made(inner_for(first(tensors))->allreduce(tensors, opts));
  }
  const Routing r = route(Operation::kAllreduce, tensors[0].nbytes(), tensors[0]);
  auto pieces = take_bucket_shapes(tensors[0]);
  if (!r.compresses && tensors[0].is_cuda()) {
    return made(cuda_direct(Operation::kAllreduce, {{*r.decision, tensors[0].nbytes()}},
                            inner_for(tensors[0])->allreduce(tensors, opts)));
  }
  if (!r.compresses) {
    at::Tensor t = tensors[0];
    premultiply(opts.reduceOp, t);
    c10d::AllreduceOptions sum = opts;
    sum.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
    std::function<void()> after;
    if (*op == ReduceOp::kAverage) after = [t, p = getSize()]() mutable { t.div_(p); };
    return made(direct(Operation::kAllreduce, {{*r.decision, t.nbytes()}},
                       inner_->allreduce(tensors, sum), tensors, std::move(after)));
  }
  return made(enqueue(Operation::kAllreduce, c10d::OpType::ALLREDUCE, tensors,
                      [this, t = tensors[0], reduce = opts.reduceOp, op = *op,
                       decision = r.decision, key = gradient_key(Operation::kAllreduce, tensors[0]),
                       order = cuda_order(tensors[0]), pieces = std::move(pieces)] {
                        run_allreduce(t, reduce, op, decision, key, order, pieces);
                      }));
}

void HyccBackend::run_allreduce(
    at::Tensor t, const c10d::ReduceOp& reduce, ReduceOp op,
    const std::optional<PolicyDecision>& decision, uint64_t key,
    const std::shared_ptr<CudaOrder>& order,
    const std::shared_ptr<const std::vector<std::vector<size_t>>>& pieces) {
  const Communicator& comm = communicator(Operation::kAllreduce);
  const Placed at(order);
  premultiply(reduce, t);
  const TensorView v = view_of(t);
  if (at.on_device()) {
    allreduce_device(comm, v, v, op, device_options(decision, key, at.stream()));
  } else {
    CollectiveOptions o = policy_options(decision, key);
    if (pieces) o.pieces = *pieces;
    hycc::allreduce(comm, v, v, op, o);
  }
  at.finish();
}

void HyccBackend::set_bucket_shapes(const at::Tensor& bucket,
                                    std::vector<std::vector<size_t>> shapes) {
  size_t elements = 0;
  for (const auto& shape : shapes) {
    size_t n = shape.empty() ? 0 : 1;
    for (size_t d : shape) n *= d;
    elements += n;
  }
  if (shapes.empty() || elements != static_cast<size_t>(bucket.numel())) {
    throw InvalidArgument(tagged("torch", "bucket shapes of ", elements,
                                 " elements for a bucket of ", bucket.numel()));
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  bucket_shapes_[{bucket.data_ptr(), bucket.numel()}] =
      std::make_shared<const std::vector<std::vector<size_t>>>(std::move(shapes));
}

std::shared_ptr<const std::vector<std::vector<size_t>>> HyccBackend::take_bucket_shapes(
    const at::Tensor& t) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (bucket_shapes_.empty()) return nullptr;
  auto it = bucket_shapes_.find({t.data_ptr(), t.numel()});
  if (it == bucket_shapes_.end()) return nullptr;
  auto shapes = std::move(it->second);
  bucket_shapes_.erase(it);
  return shapes;
}

WorkPtr HyccBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                          const c10d::ReduceScatterOptions& opts) {
  const std::optional<ReduceOp> op = hycc_reduction(opts.reduceOp);
  if (!hycc_takes(output) || !hycc_takes(input) || !op || !alike(output, input) ||
      input.numel() != output.numel() * getSize()) {
    return made(inner_for(input)->_reduce_scatter_base(output, input, opts));
  }
  const Routing r = route(Operation::kReduceScatter, input.nbytes(), input);
  if (!r.compresses && input.is_cuda()) {
    return made(cuda_direct(Operation::kReduceScatter, {{*r.decision, input.nbytes()}},
                            inner_for(input)->_reduce_scatter_base(output, input, opts)));
  }
  if (!r.compresses) {
    at::Tensor send = input;
    if (opts.reduceOp.op_ == c10d::ReduceOp::PREMUL_SUM) {
      send = input.clone();  // the caller's input stays as it is
      premultiply(opts.reduceOp, send);
    }
    c10d::ReduceScatterOptions sum = opts;
    sum.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
    std::function<void()> after;
    if (*op == ReduceOp::kAverage) after = [out = output, p = getSize()]() mutable { out.div_(p); };
    return made(direct(Operation::kReduceScatter, {{*r.decision, input.nbytes()}},
                       inner_->_reduce_scatter_base(output, send, sum), {output},
                       std::move(after)));
  }
  return made(enqueue(
      Operation::kReduceScatter, c10d::OpType::_REDUCE_SCATTER_BASE, {output},
      [this, out = output, in = input, reduce = opts.reduceOp, op = *op, decision = r.decision,
       key = gradient_key(Operation::kReduceScatter, input), order = cuda_order(input)] {
        run_reduce_scatter(out, in, reduce, op, decision, key, order);
      }));
}

void HyccBackend::run_reduce_scatter(at::Tensor out, const at::Tensor& in,
                                     const c10d::ReduceOp& reduce, ReduceOp op,
                                     const std::optional<PolicyDecision>& decision, uint64_t key,
                                     const std::shared_ptr<CudaOrder>& order) {
  const Communicator& comm = communicator(Operation::kReduceScatter);
  const Placed at(order);
  at::Tensor send = in;
  if (reduce.op_ == c10d::ReduceOp::PREMUL_SUM) {
    send = in.clone();  // the caller's input stays as it is
    premultiply(reduce, send);
  }
  if (at.on_device()) {
    reduce_scatter_device(comm, view_of(send), view_of(out), op,
                          device_options(decision, key, at.stream()));
  } else {
    hycc::reduce_scatter(comm, view_of(send), view_of(out), op, policy_options(decision, key));
  }
  at.finish();
}

WorkPtr HyccBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                     const c10d::AllgatherOptions& opts) {
  if (!hycc_takes(output) || !hycc_takes(input) || !alike(output, input) ||
      output.numel() != input.numel() * getSize()) {
    return made(inner_for(input)->_allgather_base(output, input, opts));
  }
  const Routing r = route(Operation::kAllgather, output.nbytes(), output);
  if (!r.compresses && input.is_cuda()) {
    return made(cuda_direct(Operation::kAllgather, {{*r.decision, output.nbytes()}},
                            inner_for(input)->_allgather_base(output, input, opts)));
  }
  if (!r.compresses) {
    return made(direct(Operation::kAllgather, {{*r.decision, output.nbytes()}},
                       inner_->_allgather_base(output, input, opts), {output}));
  }
  return made(enqueue(Operation::kAllgather, c10d::OpType::_ALLGATHER_BASE, {output},
                      [this, out = output, in = input, decision = r.decision,
                       order = cuda_order(input)] { run_allgather(out, in, decision, order); }));
}

void HyccBackend::run_allgather(at::Tensor out, const at::Tensor& in,
                                const std::optional<PolicyDecision>& decision,
                                const std::shared_ptr<CudaOrder>& order) {
  const Communicator& comm = communicator(Operation::kAllgather);
  const Placed at(order);
  if (at.on_device()) {
    allgather_device(comm, view_of(in), view_of(out), device_options(decision, 0, at.stream()));
  } else {
    hycc::allgather(comm, view_of(in), view_of(out), policy_options(decision));
  }
  at.finish();
}

WorkPtr HyccBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                               std::vector<at::Tensor>& inputs,
                               const c10d::AllgatherOptions& opts) {
  const bool same = inputs.size() == 1 && outputs.size() == 1 &&
                    static_cast<int>(outputs[0].size()) == getSize() && hycc_takes(inputs[0]) &&
                    std::all_of(outputs[0].begin(), outputs[0].end(), [&](const at::Tensor& o) {
                      return hycc_takes(o) && alike(o, inputs[0]) && o.numel() == inputs[0].numel();
                    });
  if (!same) {
    return made(inner_for(first(inputs))->allgather(outputs, inputs, opts));
  }
  const size_t bytes = inputs[0].nbytes() * outputs[0].size();
  const Routing r = route(Operation::kAllgather, bytes, inputs[0]);
  if (!r.compresses && inputs[0].is_cuda()) {
    return made(cuda_direct(Operation::kAllgather, {{*r.decision, bytes}},
                            inner_for(inputs[0])->allgather(outputs, inputs, opts)));
  }
  if (!r.compresses) {
    return made(direct(Operation::kAllgather, {{*r.decision, bytes}},
                       inner_->allgather(outputs, inputs, opts), outputs[0]));
  }
  return made(enqueue(
      Operation::kAllgather, c10d::OpType::ALLGATHER, outputs[0],
      [this, outs = outputs[0], in = inputs[0], decision = r.decision,
       order = cuda_order(inputs[0])] {
        const Communicator& comm = communicator(Operation::kAllgather);
        const Placed at(order);
        at::Tensor flat = at::empty({in.numel() * static_cast<int64_t>(outs.size())}, in.options());
        if (at.on_device()) {
          allgather_device(comm, view_of(in), view_of(flat),
                           device_options(decision, 0, at.stream()));
        } else {
          hycc::allgather(comm, view_of(in), view_of(flat), policy_options(decision));
        }
        for (size_t j = 0; j < outs.size(); ++j) {
          outs[j].view({-1}).copy_(
              flat.narrow(0, in.numel() * static_cast<int64_t>(j), in.numel()));
        }
        at.finish();
      }));
}

WorkPtr HyccBackend::broadcast(std::vector<at::Tensor>& tensors,
                               const c10d::BroadcastOptions& opts) {
  if (tensors.size() != 1 || !hycc_takes(tensors[0]) || opts.rootTensor != 0) {
    return made(inner_for(first(tensors))->broadcast(tensors, opts));
  }
  const Routing r = route(Operation::kBroadcast, tensors[0].nbytes(), tensors[0]);
  if (!r.compresses && tensors[0].is_cuda()) {
    return made(cuda_direct(Operation::kBroadcast, {{*r.decision, tensors[0].nbytes()}},
                            inner_for(tensors[0])->broadcast(tensors, opts)));
  }
  if (!r.compresses) {
    return made(direct(Operation::kBroadcast, {{*r.decision, tensors[0].nbytes()}},
                       inner_->broadcast(tensors, opts), tensors));
  }
  return made(enqueue(Operation::kBroadcast, c10d::OpType::BROADCAST, tensors,
                      [this, t = tensors[0], root = static_cast<int>(opts.rootRank),
                       decision = r.decision, order = cuda_order(tensors[0])] {
                        const Communicator& comm = communicator(Operation::kBroadcast);
                        const Placed at(order);
                        if (at.on_device()) {
                          broadcast_device(comm, view_of(t), root,
                                           device_options(decision, 0, at.stream()));
                        } else {
                          hycc::broadcast(comm, view_of(t), root, policy_options(decision));
                        }
                        at.finish();
                      }));
}

WorkPtr HyccBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                   std::vector<int64_t>& output_split_sizes,
                                   std::vector<int64_t>& input_split_sizes,
                                   const c10d::AllToAllOptions& opts) {
  if (!output_split_sizes.empty() || !input_split_sizes.empty() || !hycc_takes(output) ||
      !hycc_takes(input) || !alike(output, input) || output.numel() != input.numel() ||
      input.numel() % getSize() != 0) {
    return made(inner_for(input)->alltoall_base(output, input, output_split_sizes,
                                                input_split_sizes, opts));
  }
  const Routing r = route(Operation::kAlltoall, input.nbytes(), input);
  if (!r.compresses) {
    WorkPtr work =
        inner_for(input)->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
    if (input.is_cuda())
      return made(cuda_direct(Operation::kAlltoall, {{*r.decision, input.nbytes()}}, work));
    return made(direct(Operation::kAlltoall, {{*r.decision, input.nbytes()}}, work, {output}));
  }
  return made(
      enqueue(Operation::kAlltoall, c10d::OpType::ALLTOALL_BASE, {output},
              [this, out = output, in = input, decision = r.decision, order = cuda_order(input)] {
                const Communicator& comm = communicator(Operation::kAlltoall);
                const Placed at(order);
                if (at.on_device()) {
                  alltoall_device(comm, view_of(in), view_of(out),
                                  device_options(decision, 0, at.stream()));
                } else {
                  hycc::alltoall(comm, view_of(in), view_of(out), policy_options(decision));
                }
                at.finish();
              }));
}

WorkPtr HyccBackend::barrier(const c10d::BarrierOptions& opts) {
  // After the inner backend's calls (its own barrier) and each lane's: the gathers lane barriers
  // its wire and says so; the reductions lane barriers its own, waits for that and the inner one.
  WorkPtr inner = inner_->barrier(opts);
  auto gathers_done = std::make_shared<std::promise<void>>();
  std::shared_future<void> gathers = gathers_done->get_future().share();
  lanes_[kGathers]->push([wire = lanes_[kGathers]->wire(), gathers_done] {
    try {
      wire->barrier()->wait();
      gathers_done->set_value();
    } catch (...) {
      gathers_done->set_exception(std::current_exception());
    }
  });
  return made(enqueue(Operation::kAllreduce, c10d::OpType::BARRIER, {},
                      [wire = lanes_[kReductions]->wire(), gathers, inner] {
                        wire->barrier()->wait();
                        gathers.get();
                        inner->wait();
                      }));
}

// ---- the calls left to the inner backend --------------------------------------------------------

WorkPtr HyccBackend::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  return made(inner_for(first(tensors))->reduce(tensors, opts));
}
WorkPtr HyccBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                         std::vector<at::Tensor>& inputs,
                                         const c10d::AllgatherOptions& opts) {
  return made(inner_for(first(inputs))->allgather_coalesced(outputs, inputs, opts));
}
WorkPtr HyccBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                            std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  return made(inner_for(first(inputs))->gather(outputs, inputs, opts));
}
WorkPtr HyccBackend::scatter(std::vector<at::Tensor>& outputs,
                             std::vector<std::vector<at::Tensor>>& inputs,
                             const c10d::ScatterOptions& opts) {
  return made(inner_for(first(outputs))->scatter(outputs, inputs, opts));
}
WorkPtr HyccBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                    std::vector<std::vector<at::Tensor>>& inputs,
                                    const c10d::ReduceScatterOptions& opts) {
  return made(inner_for(first(outputs))->reduce_scatter(outputs, inputs, opts));
}
WorkPtr HyccBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                              const c10d::AllToAllOptions& opts) {
  return made(inner_for(first(inputs))->alltoall(outputs, inputs, opts));
}

// ---- point to point (p2p.h) ---------------------------------------------------------------------

HyccBackend::Routing HyccBackend::p2p_route(const at::Tensor& t) {
  if (!hycc_takes(t) || getSize() < 2 || t.numel() == 0) return {std::nullopt, false};
  const Communicator& comm = communicator(Operation::kSendRecv);
  // A send never communicates to decide (PolicyEngine::choose): both sides decide alike.
  PolicyDecision d = engine().choose(comm, Operation::kSendRecv, t.nbytes(), *hycc_dtype(t));
  const CodecConfig codec = d.gradient ? d.gradient_codec : d.options.codec;
  // CUDA tensors go to NCCL as they are (hycc compresses their collectives, not yet their
  // point to point).
  const bool compresses =
      !t.is_cuda() && t.nbytes() >= d.threshold_bytes && codec.id() != CodecId::kNone;
  d.options.codec = codec;
  return {std::move(d), compresses};
}

CallLane& HyccBackend::receiver(int src, int tag) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<CallLane>& lane = receivers_[{src, tag}];
  if (!lane) lane = std::make_unique<CallLane>(nullptr);
  return *lane;
}

WorkPtr HyccBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  const Routing r = tensors.size() == 1 ? p2p_route(tensors[0]) : Routing{std::nullopt, false};
  if (!r.compresses) {
    WorkPtr work = inner_for(first(tensors))->send(tensors, dst, tag);
    if (r.decision) {  // a send hycc takes, left uncompressed: recorded as the native calls are
      CollectiveStats call;
      call.algorithm = Algorithm::kNative;
      call.message_bytes = call.raw_bytes = call.wire_bytes = tensors[0].nbytes();
      const Communicator& comm = communicator(Operation::kSendRecv);
      policy::EngineCalls::record(engine(), comm, Operation::kSendRecv, *r.decision, call);
    }
    return made(work);
  }
  const PolicyDecision& d = *r.decision;
  const Communicator& comm = communicator(Operation::kSendRecv);
  const auto start = std::chrono::steady_clock::now();
  size_t stream_bytes = 0;
  WorkPtr work = send_compressed(*p2p_, tensors[0], d.options.codec, dst, tag,
                                 p2p_order_->next_send(dst, tag), &stream_bytes);
  CollectiveStats call;
  call.compressed = true;
  call.message_bytes = call.raw_bytes = tensors[0].nbytes();
  call.wire_bytes = stream_bytes;
  call.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  policy::EngineCalls::log_decision(engine(), comm, Operation::kSendRecv, call.message_bytes, d);
  policy::EngineCalls::record(engine(), comm, Operation::kSendRecv, d, call);
  return made(work);
}

WorkPtr HyccBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  const Routing r = tensors.size() == 1 ? p2p_route(tensors[0]) : Routing{std::nullopt, false};
  if (!r.compresses) return made(inner_for(first(tensors))->recv(tensors, src, tag));
  return made(recv_compressed(tensors[0], r.decision->options.codec, src, tag));
}

WorkPtr HyccBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  const Routing r = tensors.size() == 1 ? p2p_route(tensors[0]) : Routing{std::nullopt, false};
  if (!r.compresses) return made(inner_for(first(tensors))->recvAnysource(tensors, tag));
  return made(recv_compressed(tensors[0], r.decision->options.codec, -1, tag));
}

WorkPtr HyccBackend::recv_compressed(const at::Tensor& t, const CodecConfig& codec, int src,
                                     int tag) {
  auto pending = std::make_shared<PendingRecv>(post_recv(*p2p_, src, tag));
  auto work = c10::make_intrusive<HyccWork>(
      getRank(), src < 0 ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV,
      std::vector<at::Tensor>{t});
  receiver(src, tag).push(
      [wire = p2p_, order = p2p_order_, pending, work, codec, out = at::Tensor(t)]() mutable {
        std::exception_ptr error;
        try {
          finish_recv(*wire, *order, *pending, codec, out);
          work->set_source(pending->source);
        } catch (...) {
          error = std::current_exception();
        }
        work->complete(error);
      });
  return work;
}

c10::intrusive_ptr<c10d::Backend::Options> HyccBackend::getBackendOptions() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!options_) {
    options_ = c10::make_intrusive<Options>("hycc", inner_->getBackendOptions()->timeout);
    options_->group_name = getGroupUid();
    options_->group_desc = getGroupDesc();
  }
  return options_;
}

void HyccBackend::setTimeout(std::chrono::milliseconds timeout) {
  getBackendOptions()->timeout = timeout;
  inner_->setTimeout(timeout);
  if (cuda_inner_) cuda_inner_->setTimeout(timeout);
  for (auto& lane : lanes_) lane->wire()->setTimeout(timeout);
  p2p_->setTimeout(timeout);
}

}  // namespace hycc::torch_backend
