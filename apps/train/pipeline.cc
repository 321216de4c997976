#include "pipeline.h"

#include <algorithm>

namespace hycc::train {
namespace {

constexpr int kForwardTag = 1;   // activations, stage s -> s + 1
constexpr int kBackwardTag = 2;  // their gradients, stage s + 1 -> s

// Send to one neighbour and receive from the same one; even stages send first (see pipeline.h).
void exchange(TrainComm& c, int stage, const float* out, int out_tag, float* in, int in_tag,
              size_t count, int peer) {
  if (stage % 2 == 0) {
    stage_send(c, out, count, peer, out_tag);
    stage_recv(c, in, count, peer, in_tag);
  } else {
    stage_recv(c, in, count, peer, in_tag);
    stage_send(c, out, count, peer, out_tag);
  }
}

}  // namespace

void stage_layers(int num_layers, int stages, int stage, int* first, int* last) {
  const int base = num_layers / stages;
  const int extra = num_layers % stages;
  *first = stage * base + std::min(stage, extra);
  *last = *first + base + (stage < extra ? 1 : 0);
}

double pipeline_train_step(GPT& model, std::vector<GPTActs>& acts, const StepBatch& b,
                           TrainComm& comm, TensorParallelOps& tp) {
  const int S = comm.grid.shape().pp;
  const int s = comm.grid.pp_rank();
  const int M = b.micro_batches;
  const bool first = s == 0;
  const bool last = s == S - 1;
  const int warmup = std::min(S - s - 1, M);
  const int steady = M - warmup;
  const size_t NC = static_cast<size_t>(b.B) * b.T * model.config.channels;
  const size_t in_flight = acts.size();
  std::vector<int> tokens(static_cast<size_t>(b.B) * b.T);
  std::vector<int> targets(tokens.size());
  std::vector<float> input(first ? 0 : NC);    // the next micro-batch's stage input
  std::vector<float> d_output(last ? 0 : NC);  // the gradient of a stage output
  double loss_sum = 0.0;

  auto forward = [&](int mb) {
    sample_train_batch(*b.text, b.seed, b.step, b.first + mb * b.B, b.B, b.T, tokens.data(),
                       targets.data());
    loss_sum += gpt_forward(model, acts[mb % in_flight], tokens.data(),
                            first ? nullptr : input.data(), targets.data(), tp);
  };
  auto backward = [&](int mb) {
    return gpt_backward(model, acts[mb % in_flight], last ? nullptr : d_output.data(), b.dloss, tp);
  };
  auto output = [&](int mb) { return gpt_output(model, acts[mb % in_flight]); };

  for (int mb = 0; mb < warmup; ++mb) {  // warmup > 0: not the last stage
    if (!first) stage_recv(comm, input.data(), NC, s - 1, kForwardTag);
    forward(mb);
    stage_send(comm, output(mb), NC, s + 1, kForwardTag);
  }
  if (steady > 0 && !first) stage_recv(comm, input.data(), NC, s - 1, kForwardTag);
  for (int i = 0; i < steady; ++i) {
    const int fwd = warmup + i;
    const int bwd = i;
    forward(fwd);
    if (!last) {
      exchange(comm, s, output(fwd), kForwardTag, d_output.data(), kBackwardTag, NC, s + 1);
    }
    const float* d_input = backward(bwd);
    if (first) continue;
    if (i == steady - 1) {
      stage_send(comm, d_input, NC, s - 1, kBackwardTag);
    } else {
      exchange(comm, s, d_input, kBackwardTag, input.data(), kForwardTag, NC, s - 1);
    }
  }
  for (int mb = steady; mb < M; ++mb) {  // cooldown: not the last stage
    stage_recv(comm, d_output.data(), NC, s + 1, kBackwardTag);
    const float* d_input = backward(mb);
    if (!first) stage_send(comm, d_input, NC, s - 1, kBackwardTag);
  }
  return loss_sum;
}

double pipeline_eval_batch(const GPT& model, GPTActs& acts, const TextData& val, int first_seq,
                           int n, int total, TrainComm& comm, TensorParallelOps& tp) {
  const int S = comm.grid.shape().pp;
  const int s = comm.grid.pp_rank();
  const int B = acts.B;
  const int T = acts.T;
  const size_t NC = static_cast<size_t>(B) * T * model.config.channels;
  std::vector<int> tokens(static_cast<size_t>(B) * T);
  std::vector<int> targets(tokens.size());
  std::vector<float> input(s == 0 ? 0 : NC);
  // A short last batch keeps earlier (valid) windows in its tail, left out of the sum.
  eval_batch(val, first_seq, n, T, total, tokens.data(), targets.data());
  if (s > 0) stage_recv(comm, input.data(), NC, s - 1, kForwardTag);
  gpt_forward(model, acts, tokens.data(), s == 0 ? nullptr : input.data(), targets.data(), tp);
  if (s < S - 1) {
    stage_send(comm, gpt_output(model, acts), NC, s + 1, kForwardTag);
    return 0.0;
  }
  double sum = 0.0;
  for (size_t i = 0; i < static_cast<size_t>(n) * T; ++i) sum += acts.losses[i];
  return sum;
}

}  // namespace hycc::train
