#include "config.h"

#include "hycc/error.h"
#include "toml_fields.h"

namespace hycc::sim {
namespace {

constexpr long kMaxDim = 1L << 30;

std::array<Axis, 3> parse_order(const TomlFields& f) {
  const std::string s = f.text("order", "tp,dp,pp");
  std::array<Axis, 3> order{};
  size_t n = 0, start = 0;
  bool seen[3] = {false, false, false};
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string_view item(s.data() + start, comma - start);
    int axis = item == "tp" ? 0 : item == "dp" ? 1 : item == "pp" ? 2 : -1;
    if (axis < 0 || n == 3 || seen[axis]) break;
    seen[axis] = true;
    order[n++] = static_cast<Axis>(axis);
    start = comma + 1;
  }
  if (n != 3 || start != s.size() + 1) {
    f.fail("order", "'order' = '" + s + "': expected tp, dp and pp once each, e.g. \"tp,dp,pp\"");
  }
  return order;
}

}  // namespace

const char* axis_name(Axis a) {
  switch (a) {
    case Axis::kTp:
      return "tp";
    case Axis::kDp:
      return "dp";
    case Axis::kPp:
      return "pp";
  }
  return "?";
}

ModelConfig parse_model(std::string_view toml, std::string source) {
  const TomlFields f(toml, std::move(source));
  f.require_known({"name", "description", "layers", "hidden", "heads", "sequence", "vocabulary",
                   "ffn_hidden", "tied_embeddings", "parallel_residual", "learned_positions",
                   "vocab_parallel_embedding"});
  ModelConfig m;
  m.name = f.text("name", f.source());
  m.layers = f.integer("layers", 1, kMaxDim);
  m.hidden = f.integer("hidden", 1, kMaxDim);
  m.heads = f.integer("heads", 1, kMaxDim);
  m.sequence = f.integer("sequence", 1, kMaxDim);
  m.vocabulary = f.integer("vocabulary", 1, kMaxDim);
  m.ffn_hidden = f.integer("ffn_hidden", 1, kMaxDim, 4 * m.hidden);
  m.tied_embeddings = f.boolean("tied_embeddings", true);
  m.parallel_residual = f.boolean("parallel_residual", false);
  m.learned_positions = f.boolean("learned_positions", false);
  m.vocab_parallel_embedding = f.boolean("vocab_parallel_embedding", true);
  if (m.hidden % m.heads != 0) {
    f.fail("heads", detail::concat("hidden ", m.hidden, " is not a multiple of heads ", m.heads));
  }
  return m;
}

ClusterConfig parse_cluster(std::string_view toml, std::string source) {
  const TomlFields f(toml, std::move(source));
  f.require_known(
      {"name", "description", "nodes", "gpus_per_node", "gpu_tflops", "intra_node", "inter_node"});
  ClusterConfig c;
  c.name = f.text("name", f.source());
  c.nodes = f.integer("nodes", 1, kMaxDim);
  c.gpus_per_node = f.integer("gpus_per_node", 1, 1024);
  c.gpu_flops = f.number("gpu_tflops", 1e-6, 1e6) * 1e12;
  const auto link = [&](std::string_view key, LinkClass& out) {
    const toml::table* t = f.table().get_as<toml::table>(key);
    if (t == nullptr) f.fail(key, detail::concat("missing table [", key, "]"));
    const TomlFields lf(*t, f.source(), std::string(key));
    lf.require_known({"bandwidth", "latency", "efficiency"});
    out.bandwidth = lf.bandwidth("bandwidth");
    out.latency = lf.duration("latency");
    out.efficiency = lf.number("efficiency", 0.01, 1.0, 1.0);
    if (out.bandwidth <= 0) lf.fail("bandwidth", "bandwidth must be above 0");
  };
  link("intra_node", c.intra_node);
  link("inter_node", c.inter_node);
  return c;
}

LayoutConfig parse_layout(std::string_view toml, std::string source) {
  const TomlFields f(toml, std::move(source));
  f.require_known({"name", "description", "tp", "pp", "dp", "zero_stage", "micro_batch",
                   "micro_batches", "activation_recompute", "overlap_dp", "dtype", "order"});
  LayoutConfig l;
  l.name = f.text("name", f.source());
  l.tp = f.integer("tp", 1, kMaxDim, 1);
  l.pp = f.integer("pp", 1, kMaxDim, 1);
  l.dp = f.integer("dp", 0, kMaxDim, 0);
  l.zero_stage = static_cast<int>(f.integer("zero_stage", 0, 3, 0));
  if (l.zero_stage == 3) {
    f.fail("zero_stage",
           "zero_stage 3 (parameters gathered per layer) is not modeled; use 0, 1 or 2");
  }
  l.micro_batch = f.integer("micro_batch", 1, kMaxDim, 1);
  l.micro_batches = f.integer("micro_batches", 1, kMaxDim, 1);
  l.activation_recompute = f.boolean("activation_recompute", false);
  l.overlap_dp = f.boolean("overlap_dp", false);
  if (f.has("dtype")) {
    const std::string d = f.text("dtype");
    try {
      l.dtype = parse_dtype(d);
    } catch (const InvalidArgument&) {
      f.fail("dtype", "'dtype' = '" + d + "': expected f32, bf16 or f16");
    }
  }
  l.order = parse_order(f);
  return l;
}

void check_fit(const ModelConfig& model, const ClusterConfig& cluster, LayoutConfig& layout) {
  const long gpus = cluster.gpus();
  const long model_parallel = layout.tp * layout.pp;
  if (layout.dp == 0) {
    if (gpus % model_parallel != 0) {
      throw InvalidArgument(tagged("sim", "the cluster's ", gpus, " GPUs are not a multiple of tp ",
                                   layout.tp, " x pp ", layout.pp));
    }
    layout.dp = gpus / model_parallel;
  }
  if (model_parallel * layout.dp != gpus) {
    throw InvalidArgument(tagged("sim", "layout tp ", layout.tp, " x pp ", layout.pp, " x dp ",
                                 layout.dp, " needs ", model_parallel * layout.dp,
                                 " GPUs; the cluster has ", gpus));
  }
  if (model.heads % layout.tp != 0) {
    throw InvalidArgument(
        tagged("sim", "tp ", layout.tp, " does not divide the ", model.heads, " attention heads"));
  }
  if (model.layers % layout.pp != 0) {
    throw InvalidArgument(
        tagged("sim", "pp ", layout.pp, " does not divide the ", model.layers, " layers"));
  }
}

}  // namespace hycc::sim
