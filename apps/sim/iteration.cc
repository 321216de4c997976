#include "iteration.h"

#include <algorithm>

#include "compute.h"

namespace hycc::sim {
namespace {

// Fills the links, the codec and the time of one call of `t`; calls and sizes are set.
void price(DimensionTraffic& t, const std::vector<std::vector<long>>& groups, Pattern pattern,
           const ClusterConfig& cluster, const SimPolicy& policy, DType dtype) {
  t.links = links_of(groups, pattern, cluster);
  if (t.calls == 0) return;  // unused: no codec to look up
  t.codec = policy.figures(t.dimension, t.message_bytes, dtype, t.links);
  t.per_call = collective_time(collective_of(t.dimension), t.message_bytes, t.links, t.codec);
  t.raw_bytes = double(t.calls) * t.per_call.raw_bytes;
  t.wire_bytes = double(t.calls) * t.per_call.wire_bytes;
}

}  // namespace

double bubble_fraction(long pp, long micro_batches) {
  return double(pp - 1) / double(micro_batches + pp - 1);
}

IterationResult simulate(const ModelConfig& model, const ClusterConfig& cluster,
                         const LayoutConfig& layout, const SimPolicy& policy) {
  IterationResult r;
  const double elem = double(dtype_size(layout.dtype));
  const double m = double(layout.micro_batches);
  const long layers_per_stage = model.layers / layout.pp;
  // One micro-batch's activations at a layer boundary: b x s x h elements (every tp rank holds
  // them whole).
  const double activation_bytes =
      double(layout.micro_batch) * double(model.sequence) * double(model.hidden) * elem;
  const double gpu_parameters = parameters_per_gpu(model, layout);
  const auto dim = [&](Dimension d) -> DimensionTraffic& {
    for (size_t i = 0; i < r.traffic.size(); ++i) {
      if (kSimDimensions[i] == d) return r.traffic[i];
    }
    return r.traffic.back();  // unreachable: every dimension is listed
  };
  for (size_t i = 0; i < r.traffic.size(); ++i) r.traffic[i].dimension = kSimDimensions[i];

  // Tensor parallel: per layer, forward allreduces after attention and MLP (one with a parallel
  // residual), repeated by the recompute, and two in the backward pass.
  DimensionTraffic& tp = dim(Dimension::kTp);
  const long forward_allreduces = model.parallel_residual ? 1 : 2;
  const long tp_per_micro_batch =
      layout.tp > 1
          ? layers_per_stage * (forward_allreduces * (layout.activation_recompute ? 2 : 1) + 2)
          : 0;
  tp.calls = tp_per_micro_batch * layout.micro_batches;
  tp.message_bytes = activation_bytes;
  price(tp, groups_of(layout, Axis::kTp), Pattern::kRing, cluster, policy, layout.dtype);

  // Pipeline: per micro-batch, the activations forward and their gradients backward.
  DimensionTraffic& pp = dim(Dimension::kPp);
  const long pp_per_micro_batch = layout.pp > 1 ? 2 : 0;
  pp.calls = pp_per_micro_batch * layout.micro_batches;
  pp.message_bytes = activation_bytes;
  price(pp, groups_of(layout, Axis::kPp), Pattern::kChain, cluster, policy, layout.dtype);

  // Data parallel: one gradient allreduce, or ZeRO's reduce-scatter of the gradients and
  // allgather of the updated parameters.
  const auto dp_groups = groups_of(layout, Axis::kDp);
  DimensionTraffic& grad = dim(layout.zero_stage == 0 ? Dimension::kDp : Dimension::kZeroGrad);
  grad.calls = layout.dp > 1 ? 1 : 0;
  grad.message_bytes = gpu_parameters * elem;
  price(grad, dp_groups, Pattern::kRing, cluster, policy, layout.dtype);
  DimensionTraffic& gather = dim(Dimension::kZeroParam);
  gather.calls = layout.zero_stage > 0 && layout.dp > 1 ? 1 : 0;
  gather.message_bytes = gather.calls > 0 ? gpu_parameters * elem : 0;
  price(gather, dp_groups, Pattern::kRing, cluster, policy, layout.dtype);

  // Tied embeddings: the first and the last stage sum their embedding gradients.
  DimensionTraffic& embedding = dim(Dimension::kEmbedding);
  embedding.calls = model.tied_embeddings && layout.pp > 1 ? 1 : 0;
  embedding.message_bytes =
      embedding.calls > 0 ? embedding_parameters_per_gpu(model, layout) * elem : 0;
  price(embedding, embedding_groups(layout), Pattern::kRing, cluster, policy, layout.dtype);

  // Compute: the flops of one micro-batch spread over the tp x pp GPUs of a pipeline.
  const double flops_per_token = training_flops_per_token(model, layout.activation_recompute);
  const double tokens_per_micro_batch = double(layout.micro_batch) * double(model.sequence);
  r.micro_batch_compute =
      flops_per_token * tokens_per_micro_batch / double(layout.tp * layout.pp) / cluster.gpu_flops;

  // A pipeline slot: one micro-batch's compute with its tp and pp communication.
  const double tp_transfer = double(tp_per_micro_batch) * tp.per_call.transfer;
  const double pp_transfer = double(pp_per_micro_batch) * pp.per_call.transfer;
  const double slot_codec = double(tp_per_micro_batch) * tp.per_call.codec +
                            double(pp_per_micro_batch) * pp.per_call.codec;
  const double slot = r.micro_batch_compute + tp_transfer + pp_transfer + slot_codec;
  Breakdown& b = r.time;
  b.compute = m * r.micro_batch_compute;
  b.tp = m * tp_transfer;
  b.pp = m * pp_transfer;
  b.codec = m * slot_codec;
  b.bubble = double(layout.pp - 1) * slot;
  r.bubble_fraction = bubble_fraction(layout.pp, layout.micro_batches);

  // The gradient reduction may hide behind the backward pass (recompute included) of the last
  // micro-batch; the rest of the data-parallel traffic follows the pipeline.
  const double passes = layout.activation_recompute ? 4.0 : 3.0;
  const double window = layout.overlap_dp ? r.micro_batch_compute * (passes - 1) / passes : 0;
  const double grad_total = double(grad.calls) * grad.per_call.total();
  const double exposed = std::max(0.0, grad_total - window);
  const double shown = grad_total > 0 ? exposed / grad_total : 0;
  b.dp_hidden = grad_total - exposed;
  b.dp = shown * double(grad.calls) * grad.per_call.transfer;
  b.codec += shown * double(grad.calls) * grad.per_call.codec;
  for (const DimensionTraffic* t : {&gather, &embedding}) {
    b.dp += double(t->calls) * t->per_call.transfer;
    b.codec += double(t->calls) * t->per_call.codec;
  }
  b.iteration = b.compute + b.bubble + b.tp + b.pp + b.dp + b.codec;

  r.samples_per_iteration = double(layout.micro_batch) * m * double(layout.dp);
  r.flops_per_iteration = flops_per_token * r.samples_per_iteration * double(model.sequence);
  r.tflops_per_gpu = r.flops_per_iteration / (b.iteration * double(cluster.gpus())) / 1e12;
  r.samples_per_second = r.samples_per_iteration / b.iteration;
  return r;
}

}  // namespace hycc::sim
