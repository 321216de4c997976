// The GPT of hycc-train (llm.c's GPT-2 in fp32): token + learned position embedding, L pre-LN
// blocks (LN -> causal self-attention -> residual; LN -> GELU MLP 4x -> residual), final LN, LM
// head tied to the token embedding, byte vocabulary.
//
// A GPT object is one model *part*: one tensor-parallel shard (tp_rank of tp_size) of one
// pipeline stage (layers [first_layer, last_layer)). The whole model is the part with tp_size 1
// and layers [0, L). Parameters of a part live in one flat buffer, their gradients in another of
// the same layout; `tensors` names every piece of it. Layout and the parallel design:
// docs/training.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hycc::train {

struct GPTConfig {
  int max_seq_len = 64;  // T at most (rows of wpe)
  int vocab_size = 256;  // bytes
  int num_layers = 2;    // L, of the whole model
  int num_heads = 4;     // NH, of the whole model
  int channels = 64;     // C
};

// Which part of the model a GPT object holds.
struct ModelPart {
  int tp_size = 1;
  int tp_rank = 0;
  int first_layer = 0;  // global index of the first layer of this stage
  int last_layer = -1;  // one past the last; -1 means num_layers
};

// The places where Megatron's tensor parallelism communicates, injected into the model:
// forward after each row-parallel matmul ("g": attention output, MLP down-projection) and
// backward on the input gradient of each column-parallel block ("f": QKV, MLP up-projection).
// `what` names the call site (a string literal), for statistics and policies.
struct TensorParallelOps {
  virtual ~TensorParallelOps() = default;
  // data (count) = sum of data over the tensor-parallel group, in place, identical on all ranks.
  virtual void allreduce_sum(float* data, size_t count, const char* what) = 0;
};

// tp_size 1: nothing to reduce.
struct NoTensorParallel final : TensorParallelOps {
  void allreduce_sum(float*, size_t, const char*) override {}
};

// Pointers into a flat buffer (parameters or gradients); null for tensors this part lacks.
// Shapes for Ll = layers of this stage, Cq = C / tp (attention width of the local heads),
// Cf = 4C / tp (local MLP width).
struct ParameterTensors {
  float* wte = nullptr;       // (V, C)        stage 0 and the last stage (tied LM head)
  float* wpe = nullptr;       // (maxT, C)     stage 0
  float* ln1w = nullptr;      // (Ll, C)
  float* ln1b = nullptr;      // (Ll, C)
  float* qkvw = nullptr;      // (Ll, 3Cq, C)  column-parallel: [q | k | v] rows of local heads
  float* qkvb = nullptr;      // (Ll, 3Cq)
  float* attprojw = nullptr;  // (Ll, C, Cq)   row-parallel: the local heads' input columns
  float* attprojb = nullptr;  // (Ll, C)       replicated, added after the reduction
  float* ln2w = nullptr;      // (Ll, C)
  float* ln2b = nullptr;      // (Ll, C)
  float* fcw = nullptr;       // (Ll, Cf, C)   column-parallel
  float* fcb = nullptr;       // (Ll, Cf)
  float* fcprojw = nullptr;   // (Ll, C, Cf)   row-parallel
  float* fcprojb = nullptr;   // (Ll, C)       replicated, added after the reduction
  float* lnfw = nullptr;      // (C)           last stage
  float* lnfb = nullptr;      // (C)           last stage
};

// How a tensor of one layer (or a global one) is split across tensor-parallel ranks.
enum class TpSplit : uint8_t {
  kReplicated,  // every TP rank holds all of it (identical values and gradients)
  kRows,        // rank r holds rows [r R/tp, (r+1) R/tp) of each of `row_groups` row groups
  kColumns,     // rank r holds columns [r Cc/tp, (r+1) Cc/tp)
};

// One named piece of the flat buffers. Per-layer tensors are listed per layer
// ("layer3.attn.qkv.weight", 3 = global layer index).
struct TensorInfo {
  std::string name;
  size_t offset = 0;  // floats from the start of the flat buffer
  size_t count = 0;   // floats in this part
  int rows = 1;       // local shape (rows, cols); vectors have cols = 1
  int cols = 1;
  int full_rows = 1;  // shape in the whole (tp_size 1) model
  int full_cols = 1;
  TpSplit split = TpSplit::kReplicated;
  int row_groups = 1;         // kRows: 3 for QKV ([q | k | v] each split by heads), else 1
  bool weight_decay = false;  // matrices (matmul weights, embeddings); not biases or LN
  bool tied_copy = false;     // wte on a last stage that is not stage 0: a copy of stage 0's wte
};

struct GPT {
  GPT(const GPTConfig& config, const ModelPart& part, uint64_t seed);

  GPTConfig config;
  ModelPart part;  // last_layer resolved
  std::vector<float> params_memory;
  std::vector<float> grads_memory;
  ParameterTensors params;
  ParameterTensors grads;
  std::vector<TensorInfo> tensors;

  bool first_stage() const { return part.first_layer == 0; }
  bool last_stage() const { return part.last_layer == config.num_layers; }
  int local_layers() const { return part.last_layer - part.first_layer; }
  int local_heads() const { return config.num_heads / part.tp_size; }
};

// Activations of one micro-batch (B, T) for one model part; a pipeline schedule keeps one per
// micro-batch in flight. Names follow llm.c; Ll, Cq, Cf, NHl = local layers, widths and heads.
struct GPTActs {
  GPTActs(const GPT& model, int B, int T);
  int B;
  int T;
  std::vector<float> input;      // (B, T, C)  stage input: encoder output or previous stage's
  std::vector<float> ln1;        // (Ll, B, T, C)
  std::vector<float> ln1_mean;   // (Ll, B, T)
  std::vector<float> ln1_rstd;   // (Ll, B, T)
  std::vector<float> qkv;        // (Ll, B, T, 3Cq)
  std::vector<float> atty;       // (Ll, B, T, Cq)
  std::vector<float> att;        // (Ll, B, NHl, T, T)
  std::vector<float> attproj;    // (Ll, B, T, C)
  std::vector<float> residual2;  // (Ll, B, T, C)
  std::vector<float> ln2;        // (Ll, B, T, C)
  std::vector<float> ln2_mean;   // (Ll, B, T)
  std::vector<float> ln2_rstd;   // (Ll, B, T)
  std::vector<float> fch;        // (Ll, B, T, Cf)
  std::vector<float> fch_gelu;   // (Ll, B, T, Cf)
  std::vector<float> fcproj;     // (Ll, B, T, C)
  std::vector<float> residual3;  // (Ll, B, T, C)  the last layer's is the stage output
  std::vector<float> lnf;        // (B, T, C)      last stage
  std::vector<float> lnf_mean;   // (B, T)
  std::vector<float> lnf_rstd;   // (B, T)
  std::vector<float> logits;     // (B, T, V)      last stage
  std::vector<float> probs;      // (B, T, V)      last stage, with targets
  std::vector<float> losses;     // (B, T)
  std::vector<int> tokens;       // (B, T)         first stage: the inputs of the last forward
  std::vector<int> targets;      // (B, T)         last stage
  // Backward scratch, reused by every layer.
  std::vector<float> dresidual;  // (B, T, C)  d(stage output), then d(stage input)
  std::vector<float> dln;        // (B, T, C)
  std::vector<float> dqkv;       // (B, T, 3Cq)
  std::vector<float> datty;      // (B, T, Cq)
  std::vector<float> datt;       // (B, NHl, T, T)
  std::vector<float> dfch;       // (B, T, Cf)
  std::vector<float> dfch_gelu;  // (B, T, Cf)
  std::vector<float> dlnf;       // (B, T, C)
  std::vector<float> dlogits;    // (B, T, V)
  bool has_targets = false;
};

// Forward of one model part over one micro-batch.
// tokens (B, T): the input ids, first stage only (else null).
// input (B, T, C): the previous stage's output, other stages only (else null).
// targets (B, T): next ids, last stage only; null computes logits only.
// Returns the mean loss over the B*T positions on the last stage with targets, else 0.
// The stage output (B, T, C) of a non-last stage is gpt_output(acts).
float gpt_forward(const GPT& model, GPTActs& acts, const int* tokens, const float* input,
                  const int* targets, TensorParallelOps& tp);
const float* gpt_output(const GPT& model, const GPTActs& acts);

// Backward of the last gpt_forward on `acts`; gradients ACCUMULATE into model.grads.
// d_output (B, T, C): gradient of the stage output, non-last stages only (else null).
// dloss: d(objective)/d(each position's loss) on the last stage, e.g. 1 / (positions in the
// optimizer step) for the mean loss over a batch split into micro-batches.
// Returns d(input) (B, T, C) on non-first stages (valid until the next backward), else null.
const float* gpt_backward(GPT& model, GPTActs& acts, const float* d_output, float dloss,
                          TensorParallelOps& tp);

void gpt_zero_grad(GPT& model);

// The tied embedding (pipeline parallel): stage 0 and the last stage each hold wte; their
// gradients must be summed (over the `embedding` group: the first and last stage of a
// pipeline) after the backward and before the optimizer, which then keeps both copies equal.
// Returns the wte gradient span (V*C floats) or null when this part holds no wte. When one part
// is both stage 0 and the last stage, both uses already accumulate into the one wte.
float* gpt_tied_embedding_grad(GPT& model, size_t* count);
bool gpt_needs_embedding_reduction(const GPT& model);

// Tensor-parallel slices: copy a whole-model tensor to the shard of `part.tp_rank`, and back.
void tp_slice(const TensorInfo& info, int tp_size, int tp_rank, const float* full, float* shard);
void tp_unslice(const TensorInfo& info, int tp_size, int tp_rank, const float* shard, float* full);

}  // namespace hycc::train
