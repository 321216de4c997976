// hycc-train: trains the reference GPT on English text (scripts/fetch-data), on one rank or
// under mpirun on a dp x tp x pp grid with ZeRO 0/1/2; every byte between ranks goes through hycc
// with the compression policy. Usage and output: docs/training.md.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "data.h"
#include "hycc/collectives.h"
#include "hycc/config.h"
#include "hycc/error.h"
#include "hycc/grid.h"
#include "hycc/policy_engine.h"
#include "hycc/stats.h"
#include "parallel_trainer.h"

namespace hycc::train {
namespace {

struct Options {
  GridShape shape;
  ParallelConfig parallel;
  std::string policy;  // empty: HYCC_POLICY, else baseline
  std::string data_dir;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  int stop_at = 0;  // > 0: stop after this step (checkpointed), as an interrupted run would
  bool resume = false;
  std::string json_path;
  std::string precision = "fp32";
  TensorDumpOptions dump;
  double dump_mib = 16;
  int eval_every = 50;
  TrainConfig train;
};

std::string format_duration(double seconds) {
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", s / 3600, s / 60 % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
  }
  return buf;
}

// --policy, else HYCC_POLICY, else baseline; HYCC_LOG and HYCC_SAMPLE_ERROR in both cases.
PolicyEngine make_engine(const std::string& policy) {
  if (policy.empty()) return PolicyEngine::from_environment("baseline");
  return PolicyEngine(Policy::load(policy), EngineOptions::from_environment());
}

// Cumulative statistics of all ranks per dimension (operations summed).
nlohmann::ordered_json dimension_stats(const CommStats& all) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (int d = 0; d <= static_cast<int>(Dimension::kOther); ++d) {
    StatsEntry sum;
    for (int op = 0; op <= static_cast<int>(Operation::kSendRecv); ++op) {
      const StatsEntry* e = all.find(static_cast<Dimension>(d), static_cast<Operation>(op));
      if (e == nullptr) continue;
      sum.calls += e->calls;
      sum.compressed_calls += e->compressed_calls;
      sum.raw_bytes += e->raw_bytes;
      sum.wire_bytes += e->wire_bytes;
      sum.seconds += e->seconds;
    }
    if (sum.calls == 0) continue;
    out[dimension_name(static_cast<Dimension>(d))] = {
        {"calls", sum.calls},         {"compressed_calls", sum.compressed_calls},
        {"raw_bytes", sum.raw_bytes}, {"wire_bytes", sum.wire_bytes},
        {"ratio", sum.ratio()},       {"seconds", sum.seconds}};
  }
  return out;
}

// Ranks that share this rank's node (MPI's shared-memory split), as Open MPI sees the hosts.
int ranks_per_node(const Communicator& world) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(world.mpi(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

// The network the run saw: tools/netemu's NETEMU_* variables (docs/netemu.md), or null.
nlohmann::ordered_json network_of_environment() {
  const char* bits = std::getenv("NETEMU_RATE_BITS");
  if (bits == nullptr || *bits == '\0') return nullptr;
  const auto text = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v == nullptr ? "" : v);
  };
  nlohmann::ordered_json n = {{"emulator", "netemu"},
                              {"rate", text("NETEMU_RATE")},
                              {"rate_bits_per_s", std::strtod(bits, nullptr)},
                              {"delay", text("NETEMU_DELAY")}};
  if (const char* hosts = std::getenv("NETEMU_HOSTS")) n["hosts"] = std::atoi(hosts);
  if (const char* per_host = std::getenv("NETEMU_RANKS_PER_HOST")) {
    n["ranks_per_host"] = std::atoi(per_host);
  }
  return n;
}

// What a reader needs to know of the run (docs/training.md, "run"): written once, in the first
// JSON line of the process.
nlohmann::ordered_json run_description(const Options& o, const GPTConfig& m,
                                       const PolicyEngine& engine, int node_ranks) {
  return {{"policy", engine.policy().name()},
          {"policy_source", o.policy.empty() ? std::string() : o.policy},
          {"dp", o.shape.dp},
          {"tp", o.shape.tp},
          {"pp", o.shape.pp},
          {"zero", o.parallel.zero},
          {"precision", o.parallel.bf16 ? "bf16" : "fp32"},
          {"bucket_mb", o.parallel.bucket_mb},
          {"layers", m.num_layers},
          {"hidden", m.channels},
          {"heads", m.num_heads},
          {"vocabulary", m.vocab_size},
          {"seq", o.train.seq},
          {"batch", o.train.batch},
          {"micro_batches", o.train.micro_batches},
          {"steps", o.train.steps},
          {"eval_every", o.eval_every},
          {"ranks", o.shape.size()},
          {"ranks_per_node", node_ranks},
          {"network", network_of_environment()}};
}

// The largest (comm seconds, step seconds) over the world, exactly (uncompressed allgather).
void max_over_ranks(const Communicator& world, double comm, double step, double* max_comm,
                    double* max_compute, double* max_step) {
  const float mine[2] = {static_cast<float>(comm), static_cast<float>(step)};
  std::vector<float> all(2 * static_cast<size_t>(world.size()));
  allgather(world, ConstTensorView{DType::kF32, 2, mine},
            TensorView{DType::kF32, all.size(), all.data()});
  *max_comm = *max_compute = *max_step = 0.0;
  for (int r = 0; r < world.size(); ++r) {
    *max_comm = std::max(*max_comm, static_cast<double>(all[2 * r]));
    *max_step = std::max(*max_step, static_cast<double>(all[2 * r + 1]));
    *max_compute = std::max(*max_compute, static_cast<double>(all[2 * r + 1] - all[2 * r]));
  }
}

struct Setup {
  std::string dir;
  TextData train_text;
  TextData val_text;
  bool evaluating = false;
};

// Everything that fails the same way on every rank (flags, grid, policy, data).
Setup setup(const Options& o, const Communicator& world) {
  check_parallel_config(o.train, o.parallel, o.shape);
  if (o.shape.size() != world.size()) {
    throw InvalidArgument(tagged("train", "--dp ", o.shape.dp, " x --tp ", o.shape.tp, " x --pp ",
                                 o.shape.pp, " = ", o.shape.size(), " ranks, but the run has ",
                                 world.size(), " (mpirun -n ", o.shape.size(), ")"));
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    throw InvalidArgument(tagged("train", "--resume needs --checkpoint DIR"));
  }
  Setup s;
  s.dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  s.train_text = load_text(s.dir + "/train.txt");
  s.evaluating = o.eval_every > 0 && o.train.eval_sequences > 0;
  if (s.evaluating) s.val_text = load_text(s.dir + "/val.txt");
  return s;
}

void train(const Options& o, const Setup& s, const ParallelGrid& grid, PolicyEngine& engine) {
  const Communicator& world = grid.world();
  const bool root = world.rank() == 0;
  ParallelTrainer trainer(o.train, o.parallel, grid, engine, s.train_text,
                          s.evaluating ? &s.val_text : nullptr);
  if (o.resume) {
    trainer.load(o.checkpoint_dir);
    if (root) {
      std::printf("resumed from %s at step %d\n", o.checkpoint_dir.c_str(), trainer.step());
    }
  }
  if (!o.checkpoint_dir.empty() && root) std::filesystem::create_directories(o.checkpoint_dir);
  MPI_Barrier(world.mpi());  // the directory exists before any rank writes to it
  std::ofstream json;
  if (root && !o.json_path.empty()) {
    json.open(o.json_path, o.resume ? std::ios::app : std::ios::trunc);
    if (!json) throw IoError(tagged("train", "cannot write --json ", o.json_path));
  }

  std::optional<TensorDump> dump;
  if (!o.dump.dir.empty()) {
    TensorDumpOptions d = o.dump;
    d.max_bytes = static_cast<size_t>(o.dump_mib * (1 << 20));
    d.wire_dtype = o.parallel.bf16 ? "bf16" : "f32";
    dump.emplace(d, world.rank(),
                 o.stop_at > 0 ? std::min(o.stop_at, o.train.steps) : o.train.steps);
    trainer.comm().dump = &*dump;
  }

  const GPTConfig& m = trainer.model().config;
  const int node_ranks = ranks_per_node(world);
  bool described = false;
  if (root) {
    std::printf(
        "hycc-train: %d layers, hidden %d, %d heads; batch %d x %d tokens in %d micro-batches; "
        "%s, zero %d, %s; %d steps, lr %g; policy %s; data %s\n",
        m.num_layers, m.channels, m.num_heads, o.train.batch, o.train.seq, o.train.micro_batches,
        to_string(o.shape).c_str(), o.parallel.zero, o.parallel.bf16 ? "bf16" : "fp32",
        o.train.steps, static_cast<double>(o.train.lr), engine.policy().name().c_str(),
        s.dir.c_str());
  }
  const bool tty = isatty(fileno(stdout)) != 0;
  const double tokens_per_step = static_cast<double>(o.train.batch) * o.train.seq;
  double train_seconds = 0.0;
  int steps_timed = 0;
  const int stop = o.stop_at > 0 ? std::min(o.stop_at, o.train.steps) : o.train.steps;
  while (trainer.step() < stop) {
    const ParallelStepResult pr = trainer.train_step();
    const StepResult& r = pr.step;
    float val_loss = NAN;
    if (s.evaluating && (r.step % o.eval_every == 0 || r.step == o.train.steps)) {
      val_loss = trainer.evaluate();
    }
    double comm_s = 0, compute_s = 0, step_s = 0;
    max_over_ranks(world, pr.comm_seconds, r.seconds, &comm_s, &compute_s, &step_s);
    const CommStats all = engine.reduce_stats(world);
    const bool last = r.step == stop;
    if (!o.checkpoint_dir.empty() &&
        (last || (o.checkpoint_every > 0 && r.step % o.checkpoint_every == 0))) {
      trainer.save(o.checkpoint_dir);
    }
    train_seconds += step_s;
    ++steps_timed;
    if (!root) continue;
    const double tokens_per_s = tokens_per_step / step_s;
    const double eta = train_seconds / steps_timed * (o.train.steps - r.step);
    std::printf(
        "%sstep %5d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | comm %.0f%% | "
        "ETA %s",
        tty ? "\r" : "", r.step, o.train.steps, static_cast<double>(r.loss),
        static_cast<double>(r.lr), static_cast<double>(r.grad_norm), tokens_per_s,
        100.0 * comm_s / step_s, format_duration(eta).c_str());
    if (!std::isnan(val_loss)) std::printf(" | val %.4f", static_cast<double>(val_loss));
    std::printf(tty && std::isnan(val_loss) && !last ? "\033[K" : "\n");
    std::fflush(stdout);
    if (json.is_open()) {
      nlohmann::ordered_json line = {{"step", r.step},           {"loss", r.loss},
                                     {"val_loss", nullptr},      {"lr", r.lr},
                                     {"grad_norm", r.grad_norm}, {"tokens_per_s", tokens_per_s},
                                     {"step_s", step_s},         {"comm_s", comm_s},
                                     {"compute_s", compute_s},   {"stats", dimension_stats(all)}};
      if (!std::isnan(val_loss)) line["val_loss"] = val_loss;
      if (!described) line["run"] = run_description(o, m, engine, node_ranks);
      described = true;
      json << line.dump() << '\n' << std::flush;
    }
  }
  engine.finish(world);
  if (dump) {
    double mine = static_cast<double>(dump->bytes()), total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, world.mpi());
    if (root) {
      std::printf("dumped %.1f MiB of sent tensors to %s%s\n", total / (1 << 20),
                  o.dump.dir.c_str(), world.size() == 1 ? " (one rank sends nothing)" : "");
    }
  }
}

int run(const Options& o) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) MPI_Init(nullptr, nullptr);
  int code = 0;
  {
    const Communicator world = Communicator::world();
    std::optional<Setup> s;
    std::unique_ptr<ParallelGrid> grid;
    std::optional<PolicyEngine> engine;
    try {
      s = setup(o, world);
      engine.emplace(make_engine(o.policy));
      grid = std::make_unique<ParallelGrid>(world, o.shape);
    } catch (const Error& e) {
      // The same error on every rank: one message, a clean exit.
      if (world.rank() == 0) std::fprintf(stderr, "hycc-train: %s\n", e.what());
      code = 2;
    }
    if (code == 0) {
      try {
        train(o, *s, *grid, *engine);
      } catch (const std::exception& e) {
        const bool ours = dynamic_cast<const Error*>(&e) != nullptr;
        std::fprintf(stderr, "\nhycc-train: rank %d: %s%s\n", world.rank(),
                     ours ? "" : "unexpected error: ", e.what());
        std::fflush(stderr);
        if (world.size() > 1) MPI_Abort(MPI_COMM_WORLD, 2);  // the others may wait for this rank
        code = 2;
      }
    }
  }
  MPI_Finalize();
  return code;
}

}  // namespace
}  // namespace hycc::train

int main(int argc, char** argv) {
  using hycc::train::Options;
  Options o;
  hycc::train::TrainConfig& t = o.train;
  t.model.num_layers = 4;
  t.model.channels = 128;
  t.model.num_heads = 4;
  t.seq = 64;
  t.batch = 16;
  t.steps = 200;
  t.lr = 1e-3f;
  t.seed = 1337;

  CLI::App app{"hycc-train " HYCC_VERSION ": reference GPT trainer (byte-level, English text)"};
  // An option given twice takes its last value, so scripts can append overrides to fixed flags.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--dp", o.shape.dp, "data-parallel ranks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--tp", o.shape.tp, "tensor-parallel ranks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--pp", o.shape.pp, "pipeline stages")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "fp32, or bf16: bf16 weights from fp32 masters and bf16 on every wire "
                 "(docs/training.md, \"Mixed precision\")")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--zero", o.parallel.zero,
                 "ZeRO stage: 1 shards optimizer states, 2 also reduce-scatters in buckets")
      ->check(CLI::IsMember({0, 1, 2}))
      ->capture_default_str();
  app.add_option("--micro-batches", t.micro_batches,
                 "micro-batches per step (gradient accumulation)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", t.batch, "global batch: sequences per optimizer step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seq", t.seq, "tokens (bytes) per sequence")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--layers", t.model.num_layers, "transformer blocks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--hidden", t.model.channels, "hidden size C")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--heads", t.model.num_heads, "attention heads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--steps", t.steps, "optimizer steps (the cosine schedule ends here)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--lr", t.lr, "peak learning rate")->capture_default_str();
  app.add_option("--warmup", t.warmup, "warmup steps (-1: steps/10)")->capture_default_str();
  app.add_option("--weight-decay", t.adamw.weight_decay, "AdamW decoupled weight decay")
      ->capture_default_str();
  app.add_option("--grad-clip", t.grad_clip, "max global gradient norm (0: off)")
      ->capture_default_str();
  app.add_option("--policy", o.policy,
                 "compression policy: preset or TOML file (default: HYCC_POLICY, else baseline)");
  app.add_option("--bucket-mb", o.parallel.bucket_mb,
                 "gradient bucket size in MiB (data parallel, ZeRO 2)")
      ->capture_default_str();
  app.add_option("--seed", t.seed, "seed of the initialization and the batches")
      ->capture_default_str();
  app.add_option("--eval-every", o.eval_every, "validation every N steps and at the end (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--eval-sequences", t.eval_sequences, "validation windows")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--data", o.data_dir,
                 "directory with train.txt and val.txt "
                 "(default ${HYCC_DATA_DIR:-~/.cache/hycc}/corpus)");
  app.add_option("--checkpoint", o.checkpoint_dir, "checkpoint directory (written at the end)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also checkpoint every N steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--stop-at", o.stop_at,
                 "stop after step N (checkpointed; the schedule still ends at --steps)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint DIR");
  app.add_option("--dump-tensors", o.dump.dir,
                 "write samples of what each dimension sends (raw float32 files and an index "
                 "per rank) to DIR, for hycc-bench codec --data FILE");
  app.add_option("--dump-steps", o.dump.steps,
                 "steps whose traffic --dump-tensors writes (default: the last)")
      ->check(CLI::PositiveNumber);
  app.add_option("--dump-mib", o.dump_mib, "--dump-tensors budget per rank in MiB")
      ->check(CLI::Range(0.0, 65536.0))
      ->capture_default_str();
  app.add_option("--json", o.json_path,
                 "write one JSON object per step to FILE (appended on --resume)");
  app.set_version_flag("--version", "hycc-train " HYCC_VERSION HYCC_BUILD_KIND);
  CLI11_PARSE(app, argc, argv);
  o.parallel.bf16 = o.precision == "bf16";
  return hycc::train::run(o);
}
