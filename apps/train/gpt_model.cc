#include "gpt_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hycc/error.h"
#include "kernels.h"
#include "rng.h"

namespace hycc::train {
namespace {

enum class Init : uint8_t { kZeros, kOnes, kNormal, kNormalResidual };

// One kind of parameter tensor, per layer or global.
struct TensorKind {
  const char* name;  // per layer: "attn.qkv.weight" -> "layer3.attn.qkv.weight"
  float* ParameterTensors::*member;
  bool per_layer;
  bool present;
  int rows, cols;            // local shape of one layer's tensor
  int full_rows, full_cols;  // whole-model shape
  TpSplit split;
  int row_groups;
  bool decay;
  Init init;
};

std::vector<TensorKind> tensor_kinds(const GPT& m) {
  const int C = m.config.channels;
  const int V = m.config.vocab_size;
  const int tp = m.part.tp_size;
  const int Cq = C / tp;
  const int Cf = 4 * C / tp;
  const bool first = m.first_stage();
  const bool last = m.last_stage();
  using P = ParameterTensors;
  using S = TpSplit;
  return {
      {"wte", &P::wte, false, first || last, V, C, V, C, S::kReplicated, 1, true, Init::kNormal},
      {"wpe", &P::wpe, false, first, m.config.max_seq_len, C, m.config.max_seq_len, C,
       S::kReplicated, 1, true, Init::kNormal},
      {"ln1.weight", &P::ln1w, true, true, C, 1, C, 1, S::kReplicated, 1, false, Init::kOnes},
      {"ln1.bias", &P::ln1b, true, true, C, 1, C, 1, S::kReplicated, 1, false, Init::kZeros},
      {"attn.qkv.weight", &P::qkvw, true, true, 3 * Cq, C, 3 * C, C, S::kRows, 3, true,
       Init::kNormal},
      {"attn.qkv.bias", &P::qkvb, true, true, 3 * Cq, 1, 3 * C, 1, S::kRows, 3, false,
       Init::kZeros},
      {"attn.proj.weight", &P::attprojw, true, true, C, Cq, C, C, S::kColumns, 1, true,
       Init::kNormalResidual},
      {"attn.proj.bias", &P::attprojb, true, true, C, 1, C, 1, S::kReplicated, 1, false,
       Init::kZeros},
      {"ln2.weight", &P::ln2w, true, true, C, 1, C, 1, S::kReplicated, 1, false, Init::kOnes},
      {"ln2.bias", &P::ln2b, true, true, C, 1, C, 1, S::kReplicated, 1, false, Init::kZeros},
      {"mlp.fc.weight", &P::fcw, true, true, Cf, C, 4 * C, C, S::kRows, 1, true, Init::kNormal},
      {"mlp.fc.bias", &P::fcb, true, true, Cf, 1, 4 * C, 1, S::kRows, 1, false, Init::kZeros},
      {"mlp.proj.weight", &P::fcprojw, true, true, C, Cf, C, 4 * C, S::kColumns, 1, true,
       Init::kNormalResidual},
      {"mlp.proj.bias", &P::fcprojb, true, true, C, 1, C, 1, S::kReplicated, 1, false,
       Init::kZeros},
      {"lnf.weight", &P::lnfw, false, last, C, 1, C, 1, S::kReplicated, 1, false, Init::kOnes},
      {"lnf.bias", &P::lnfb, false, last, C, 1, C, 1, S::kReplicated, 1, false, Init::kZeros},
  };
}

void check_config(const GPTConfig& c, const ModelPart& p) {
  auto fail = [](const std::string& what) { throw InvalidArgument(tagged("train:model", what)); };
  if (c.max_seq_len < 1 || c.vocab_size < 1 || c.num_layers < 1 || c.num_heads < 1 ||
      c.channels < 1) {
    fail("sequence length, vocabulary, layers, heads and channels must be positive");
  }
  if (c.channels % c.num_heads != 0) {
    fail(detail::concat("channels ", c.channels, " not divisible by heads ", c.num_heads));
  }
  if (p.tp_size < 1 || p.tp_rank < 0 || p.tp_rank >= p.tp_size) {
    fail(detail::concat("tp rank ", p.tp_rank, " of ", p.tp_size));
  }
  if (c.num_heads % p.tp_size != 0) {
    fail(detail::concat("heads ", c.num_heads, " not divisible by tp ", p.tp_size));
  }
  if (p.first_layer < 0 || p.last_layer <= p.first_layer || p.last_layer > c.num_layers) {
    fail(detail::concat("layer range [", p.first_layer, ", ", p.last_layer, ") of ", c.num_layers,
                        " layers"));
  }
}

}  // namespace

GPT::GPT(const GPTConfig& config_in, const ModelPart& part_in, uint64_t seed)
    : config(config_in), part(part_in) {
  if (part.last_layer < 0) part.last_layer = config.num_layers;
  check_config(config, part);
  const std::vector<TensorKind> kinds = tensor_kinds(*this);
  const int Ll = local_layers();

  // Layout: tensor kinds in order, each as (Ll, rows, cols) when per layer.
  size_t total = 0;
  std::vector<size_t> kind_offset(kinds.size());
  for (size_t k = 0; k < kinds.size(); ++k) {
    kind_offset[k] = total;
    if (!kinds[k].present) continue;
    const size_t one = static_cast<size_t>(kinds[k].rows) * kinds[k].cols;
    total += kinds[k].per_layer ? one * Ll : one;
  }
  params_memory.assign(total, 0.0f);
  grads_memory.assign(total, 0.0f);

  for (size_t k = 0; k < kinds.size(); ++k) {
    const TensorKind& kind = kinds[k];
    if (!kind.present) continue;
    params.*kind.member = params_memory.data() + kind_offset[k];
    grads.*kind.member = grads_memory.data() + kind_offset[k];
    const size_t one = static_cast<size_t>(kind.rows) * kind.cols;
    for (int l = 0; l < (kind.per_layer ? Ll : 1); ++l) {
      TensorInfo info;
      info.name = kind.per_layer ? detail::concat("layer", part.first_layer + l, ".", kind.name)
                                 : std::string(kind.name);
      info.offset = kind_offset[k] + one * l;
      info.count = one;
      info.rows = kind.rows;
      info.cols = kind.cols;
      info.full_rows = kind.full_rows;
      info.full_cols = kind.full_cols;
      info.split = kind.split;
      info.row_groups = kind.row_groups;
      info.weight_decay = kind.decay;
      info.tied_copy = kind.member == &ParameterTensors::wte && !first_stage();
      tensors.push_back(info);
    }
  }

  // Initialization (GPT-2): every whole-model tensor from its own stream (seed, name), then
  // this part's slice, so any tp/pp split holds exactly the same model.
  const double residual_std = 0.02 / std::sqrt(2.0 * config.num_layers);
  std::vector<float> full;
  size_t t = 0;
  for (const TensorKind& kind : kinds) {
    if (!kind.present) continue;
    for (int l = 0; l < (kind.per_layer ? Ll : 1); ++l, ++t) {
      const TensorInfo& info = tensors[t];
      float* dst = params_memory.data() + info.offset;
      if (kind.init == Init::kZeros || kind.init == Init::kOnes) {
        std::fill(dst, dst + info.count, kind.init == Init::kOnes ? 1.0f : 0.0f);
        continue;
      }
      const double std_dev = kind.init == Init::kNormal ? 0.02 : residual_std;
      full.resize(static_cast<size_t>(info.full_rows) * info.full_cols);
      Rng rng(mix_seed(seed, hash_name(info.name)));
      for (float& x : full) x = static_cast<float>(rng.normal() * std_dev);
      tp_slice(info, part.tp_size, part.tp_rank, full.data(), dst);
    }
  }
}

namespace {

// Full-tensor index of shard element (i, j).
size_t full_index(const TensorInfo& info, int tp_size, int tp_rank, int i, int j) {
  int fi = i;
  int fj = j;
  if (info.split == TpSplit::kRows) {
    const int shard_group = info.rows / info.row_groups;
    const int full_group = info.full_rows / info.row_groups;
    fi = (i / shard_group) * full_group + tp_rank * shard_group + i % shard_group;
  } else if (info.split == TpSplit::kColumns) {
    fj = tp_rank * info.cols + j;
  }
  (void)tp_size;
  return static_cast<size_t>(fi) * info.full_cols + fj;
}

}  // namespace

void tp_slice(const TensorInfo& info, int tp_size, int tp_rank, const float* full, float* shard) {
  for (int i = 0; i < info.rows; ++i) {
    for (int j = 0; j < info.cols; ++j) {
      shard[static_cast<size_t>(i) * info.cols + j] =
          full[full_index(info, tp_size, tp_rank, i, j)];
    }
  }
}

void tp_unslice(const TensorInfo& info, int tp_size, int tp_rank, const float* shard, float* full) {
  for (int i = 0; i < info.rows; ++i) {
    for (int j = 0; j < info.cols; ++j) {
      full[full_index(info, tp_size, tp_rank, i, j)] =
          shard[static_cast<size_t>(i) * info.cols + j];
    }
  }
}

GPTActs::GPTActs(const GPT& m, int B_in, int T_in) : B(B_in), T(T_in) {
  if (B < 1 || T < 1 || T > m.config.max_seq_len) {
    throw InvalidArgument(tagged("train:model", "micro-batch ", B, " x ", T,
                                 " (sequence length at most ", m.config.max_seq_len, ")"));
  }
  const size_t N = static_cast<size_t>(B) * T;
  const size_t C = m.config.channels;
  const size_t V = m.config.vocab_size;
  const size_t Ll = m.local_layers();
  const size_t Cq = C / m.part.tp_size;
  const size_t Cf = 4 * C / m.part.tp_size;
  const size_t NHl = m.local_heads();
  input.resize(N * C);
  ln1.resize(Ll * N * C);
  ln1_mean.resize(Ll * N);
  ln1_rstd.resize(Ll * N);
  qkv.resize(Ll * N * 3 * Cq);
  atty.resize(Ll * N * Cq);
  att.resize(Ll * B * NHl * T * T);
  attproj.resize(Ll * N * C);
  residual2.resize(Ll * N * C);
  ln2.resize(Ll * N * C);
  ln2_mean.resize(Ll * N);
  ln2_rstd.resize(Ll * N);
  fch.resize(Ll * N * Cf);
  fch_gelu.resize(Ll * N * Cf);
  fcproj.resize(Ll * N * C);
  residual3.resize(Ll * N * C);
  dresidual.resize(N * C);
  dln.resize(N * C);
  dqkv.resize(N * 3 * Cq);
  datty.resize(N * Cq);
  datt.resize(B * NHl * T * T);
  dfch.resize(N * Cf);
  dfch_gelu.resize(N * Cf);
  if (m.first_stage()) tokens.resize(N);
  if (m.last_stage()) {
    lnf.resize(N * C);
    lnf_mean.resize(N);
    lnf_rstd.resize(N);
    logits.resize(N * V);
    probs.resize(N * V);
    losses.resize(N);
    targets.resize(N);
    dlnf.resize(N * C);
    dlogits.resize(N * V);
  }
}

}  // namespace hycc::train
