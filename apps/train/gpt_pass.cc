// Forward and backward of one model part (gpt_model.h), composed from the kernels.
#include <algorithm>
#include <cstring>

#include "gpt_model.h"
#include "hycc/error.h"
#include "kernels.h"

namespace hycc::train {
namespace {

void zero(std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); }

// Pointers to layer l's parameters (or gradients) and activations: base + l * (one layer).
struct Layer {
  const float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw,
      *fcprojb;
};

Layer layer_params(const GPT& m, const ParameterTensors& p, int l) {
  const size_t C = m.config.channels;
  const size_t Cq = C / m.part.tp_size;
  const size_t Cf = 4 * C / m.part.tp_size;
  return {p.ln1w + l * C,          p.ln1b + l * C,     p.qkvw + l * 3 * Cq * C, p.qkvb + l * 3 * Cq,
          p.attprojw + l * C * Cq, p.attprojb + l * C, p.ln2w + l * C,          p.ln2b + l * C,
          p.fcw + l * Cf * C,      p.fcb + l * Cf,     p.fcprojw + l * C * Cf,  p.fcprojb + l * C};
}

struct LayerGrads {
  float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw,
      *fcprojb;
};

LayerGrads layer_grads(const GPT& m, const ParameterTensors& g, int l) {
  const Layer c = layer_params(m, g, l);
  auto w = [](const float* p) { return const_cast<float*>(p); };
  return {w(c.ln1w), w(c.ln1b), w(c.qkvw), w(c.qkvb), w(c.attprojw), w(c.attprojb),
          w(c.ln2w), w(c.ln2b), w(c.fcw),  w(c.fcb),  w(c.fcprojw),  w(c.fcprojb)};
}

}  // namespace

const float* gpt_output(const GPT& model, const GPTActs& acts) {
  const size_t NC = static_cast<size_t>(acts.B) * acts.T * model.config.channels;
  return acts.residual3.data() + (model.local_layers() - 1) * NC;
}

float gpt_forward(const GPT& model, GPTActs& a, const int* tokens, const float* input,
                  const int* targets, TensorParallelOps& tp) {
  const int B = a.B;
  const int T = a.T;
  const int N = B * T;
  const int C = model.config.channels;
  const int V = model.config.vocab_size;
  const int Cq = C / model.part.tp_size;
  const int Cf = 4 * C / model.part.tp_size;
  const int NHl = model.local_heads();
  const int HS = C / model.config.num_heads;
  const size_t NC = static_cast<size_t>(N) * C;
  const ParameterTensors& p = model.params;

  if (model.first_stage()) {
    if (tokens == nullptr) throw InvalidArgument(tagged("train:model", "stage 0 needs tokens"));
    for (int i = 0; i < N; ++i) {
      if (tokens[i] < 0 || tokens[i] >= V) {
        throw InvalidArgument(tagged("train:model", "token ", tokens[i], " outside [0, ", V, ")"));
      }
    }
    std::copy(tokens, tokens + N, a.tokens.begin());
    encoder_forward(a.input.data(), tokens, p.wte, p.wpe, B, T, C);
  } else {
    if (input == nullptr) throw InvalidArgument(tagged("train:model", "stage needs its input"));
    std::copy(input, input + NC, a.input.begin());
  }

  for (int l = 0; l < model.local_layers(); ++l) {
    const Layer w = layer_params(model, p, l);
    const float* residual = l == 0 ? a.input.data() : a.residual3.data() + (l - 1) * NC;
    float* ln1 = a.ln1.data() + l * NC;
    float* ln1_mean = a.ln1_mean.data() + static_cast<size_t>(l) * N;
    float* ln1_rstd = a.ln1_rstd.data() + static_cast<size_t>(l) * N;
    float* qkv = a.qkv.data() + l * 3 * static_cast<size_t>(N) * Cq;
    float* atty = a.atty.data() + l * static_cast<size_t>(N) * Cq;
    float* att = a.att.data() + l * static_cast<size_t>(B) * NHl * T * T;
    float* attproj = a.attproj.data() + l * NC;
    float* residual2 = a.residual2.data() + l * NC;
    float* ln2 = a.ln2.data() + l * NC;
    float* ln2_mean = a.ln2_mean.data() + static_cast<size_t>(l) * N;
    float* ln2_rstd = a.ln2_rstd.data() + static_cast<size_t>(l) * N;
    float* fch = a.fch.data() + l * static_cast<size_t>(N) * Cf;
    float* fch_gelu = a.fch_gelu.data() + l * static_cast<size_t>(N) * Cf;
    float* fcproj = a.fcproj.data() + l * NC;
    float* residual3 = a.residual3.data() + l * NC;

    layernorm_forward(ln1, ln1_mean, ln1_rstd, residual, w.ln1w, w.ln1b, N, C);
    matmul_forward(qkv, ln1, w.qkvw, w.qkvb, N, C, 3 * Cq);  // column-parallel
    attention_forward(atty, att, qkv, B, T, NHl, HS);
    matmul_forward(attproj, atty, w.attprojw, nullptr, N, Cq, C);  // row-parallel
    tp.allreduce_sum(attproj, NC, "attn_proj");
    bias_forward(attproj, w.attprojb, N, C);
    residual_forward(residual2, residual, attproj, static_cast<int>(NC));
    layernorm_forward(ln2, ln2_mean, ln2_rstd, residual2, w.ln2w, w.ln2b, N, C);
    matmul_forward(fch, ln2, w.fcw, w.fcb, N, C, Cf);  // column-parallel
    gelu_forward(fch_gelu, fch, N * Cf);
    matmul_forward(fcproj, fch_gelu, w.fcprojw, nullptr, N, Cf, C);  // row-parallel
    tp.allreduce_sum(fcproj, NC, "mlp_proj");
    bias_forward(fcproj, w.fcprojb, N, C);
    residual_forward(residual3, residual2, fcproj, static_cast<int>(NC));
  }

  a.has_targets = false;
  if (!model.last_stage()) return 0.0f;
  const float* out = gpt_output(model, a);
  layernorm_forward(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), out, p.lnfw, p.lnfb, N, C);
  matmul_forward(a.logits.data(), a.lnf.data(), p.wte, nullptr, N, C, V);  // tied LM head
  if (targets == nullptr) return 0.0f;
  for (int i = 0; i < N; ++i) {
    if (targets[i] < 0 || targets[i] >= V) {
      throw InvalidArgument(tagged("train:model", "target ", targets[i], " outside [0, ", V, ")"));
    }
  }
  std::copy(targets, targets + N, a.targets.begin());
  a.has_targets = true;
  crossentropy_forward(a.probs.data(), a.losses.data(), a.logits.data(), targets, N, V);
  double sum = 0.0;
  for (int i = 0; i < N; ++i) sum += a.losses[i];
  return static_cast<float>(sum / N);
}

const float* gpt_backward(GPT& model, GPTActs& a, const float* d_output, float dloss,
                          TensorParallelOps& tp) {
  const int B = a.B;
  const int T = a.T;
  const int N = B * T;
  const int C = model.config.channels;
  const int V = model.config.vocab_size;
  const int Cq = C / model.part.tp_size;
  const int Cf = 4 * C / model.part.tp_size;
  const int NHl = model.local_heads();
  const int HS = C / model.config.num_heads;
  const size_t NC = static_cast<size_t>(N) * C;
  const ParameterTensors& p = model.params;
  ParameterTensors& g = model.grads;
  float* dres = a.dresidual.data();

  if (model.last_stage()) {
    if (!a.has_targets) {
      throw InvalidArgument(tagged("train:model", "backward of a forward without targets"));
    }
    zero(a.dlogits);
    crossentropy_backward(a.dlogits.data(), a.probs.data(), a.targets.data(), dloss, N, V);
    zero(a.dlnf);
    matmul_backward(a.dlnf.data(), g.wte, nullptr, a.dlogits.data(), a.lnf.data(), p.wte, N, C, V);
    zero(a.dresidual);
    layernorm_backward(dres, g.lnfw, g.lnfb, a.dlnf.data(), gpt_output(model, a), p.lnfw,
                       a.lnf_mean.data(), a.lnf_rstd.data(), N, C);
  } else {
    if (d_output == nullptr) {
      throw InvalidArgument(tagged("train:model", "stage backward needs d(output)"));
    }
    std::copy(d_output, d_output + NC, a.dresidual.begin());
  }

  // dres holds d(residual3) of layer l; after the layer it holds d(residual of layer l's input).
  for (int l = model.local_layers() - 1; l >= 0; --l) {
    const Layer w = layer_params(model, p, l);
    const LayerGrads dw = layer_grads(model, g, l);
    const float* residual = l == 0 ? a.input.data() : a.residual3.data() + (l - 1) * NC;
    const float* ln1 = a.ln1.data() + l * NC;
    const float* ln1_mean = a.ln1_mean.data() + static_cast<size_t>(l) * N;
    const float* ln1_rstd = a.ln1_rstd.data() + static_cast<size_t>(l) * N;
    const float* qkv = a.qkv.data() + l * 3 * static_cast<size_t>(N) * Cq;
    const float* atty = a.atty.data() + l * static_cast<size_t>(N) * Cq;
    const float* att = a.att.data() + l * static_cast<size_t>(B) * NHl * T * T;
    const float* residual2 = a.residual2.data() + l * NC;
    const float* ln2 = a.ln2.data() + l * NC;
    const float* ln2_mean = a.ln2_mean.data() + static_cast<size_t>(l) * N;
    const float* ln2_rstd = a.ln2_rstd.data() + static_cast<size_t>(l) * N;
    const float* fch = a.fch.data() + l * static_cast<size_t>(N) * Cf;
    const float* fch_gelu = a.fch_gelu.data() + l * static_cast<size_t>(N) * Cf;

    // residual3 = residual2 + fcproj: both receive dres (kept in place as d(residual2)).
    zero(a.dfch_gelu);
    matmul_backward(a.dfch_gelu.data(), dw.fcprojw, dw.fcprojb, dres, fch_gelu, w.fcprojw, N, Cf,
                    C);
    zero(a.dfch);
    gelu_backward(a.dfch.data(), fch, a.dfch_gelu.data(), N * Cf);
    zero(a.dln);
    matmul_backward(a.dln.data(), dw.fcw, dw.fcb, a.dfch.data(), ln2, w.fcw, N, C, Cf);
    tp.allreduce_sum(a.dln.data(), NC, "mlp_fc_dinput");
    layernorm_backward(dres, dw.ln2w, dw.ln2b, a.dln.data(), residual2, w.ln2w, ln2_mean, ln2_rstd,
                       N, C);
    // residual2 = residual + attproj: both receive dres (kept in place as d(residual)).
    zero(a.datty);
    matmul_backward(a.datty.data(), dw.attprojw, dw.attprojb, dres, atty, w.attprojw, N, Cq, C);
    zero(a.dqkv);
    attention_backward(a.dqkv.data(), a.datt.data(), a.datty.data(), qkv, att, B, T, NHl, HS);
    zero(a.dln);
    matmul_backward(a.dln.data(), dw.qkvw, dw.qkvb, a.dqkv.data(), ln1, w.qkvw, N, C, 3 * Cq);
    tp.allreduce_sum(a.dln.data(), NC, "attn_qkv_dinput");
    layernorm_backward(dres, dw.ln1w, dw.ln1b, a.dln.data(), residual, w.ln1w, ln1_mean, ln1_rstd,
                       N, C);
  }

  if (model.first_stage()) {
    encoder_backward(g.wte, g.wpe, dres, a.tokens.data(), B, T, C);
    return nullptr;
  }
  return dres;
}

void gpt_zero_grad(GPT& model) {
  std::fill(model.grads_memory.begin(), model.grads_memory.end(), 0.0f);
}

float* gpt_tied_embedding_grad(GPT& model, size_t* count) {
  if (count != nullptr) {
    *count = model.grads.wte == nullptr
                 ? 0
                 : static_cast<size_t>(model.config.vocab_size) * model.config.channels;
  }
  return model.grads.wte;
}

bool gpt_needs_embedding_reduction(const GPT& model) {
  return model.first_stage() != model.last_stage();
}

}  // namespace hycc::train
