// hycc-train: trains the reference GPT on the Brown corpus (scripts/fetch-data). This step runs
// on one rank; the parallel flags are accepted and checked, and the distributed trainer will
// honour them. Usage and output: docs/training.md.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "checkpoint.h"
#include "data.h"
#include "hycc/config.h"
#include "hycc/error.h"
#include "hycc/policy.h"
#include "trainer.h"

namespace hycc::train {
namespace {

struct Options {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int zero = 0;
  std::string policy = "baseline";
  std::string data_dir;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  bool resume = false;
  std::string json_path;
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

int run(const Options& o) {
  if (o.dp * o.tp * o.pp > 1 || o.zero > 0) {
    throw Unavailable(tagged("train", "--dp ", o.dp, " --tp ", o.tp, " --pp ", o.pp, " --zero ",
                             o.zero,
                             ": parallel training is not available yet; run with "
                             "--dp 1 --tp 1 --pp 1 --zero 0"));
  }
  const Policy policy = Policy::load(o.policy);  // checked now, used by the parallel trainer
  check_train_config(o.train);
  const std::string dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  const TextData train_text = load_text(dir + "/brown-train.txt");
  const bool evaluating = o.eval_every > 0 && o.train.eval_sequences > 0;
  TextData val_text;
  if (evaluating) val_text = load_text(dir + "/brown-val.txt");

  Trainer trainer(o.train, train_text, evaluating ? &val_text : nullptr);
  const ModelPart whole{};
  if (o.resume) {
    if (o.checkpoint_dir.empty())
      throw InvalidArgument(tagged("train", "--resume needs --checkpoint DIR"));
    trainer.load(checkpoint_path(o.checkpoint_dir, whole));
    std::printf("resumed from %s at step %d\n", checkpoint_path(o.checkpoint_dir, whole).c_str(),
                trainer.step());
  }
  if (!o.checkpoint_dir.empty()) std::filesystem::create_directories(o.checkpoint_dir);
  std::ofstream json;
  if (!o.json_path.empty()) {
    json.open(o.json_path, o.resume ? std::ios::app : std::ios::trunc);
    if (!json) throw InvalidArgument(tagged("train", "cannot write --json ", o.json_path));
  }

  const GPT& m = trainer.model();
  std::printf(
      "hycc-train: %d layers, hidden %d, %d heads, %zu parameters; batch %d x %d tokens "
      "in %d micro-batches; %d steps, lr %g; policy %s; data %s\n",
      m.config.num_layers, m.config.channels, m.config.num_heads, m.params_memory.size(),
      o.train.batch, o.train.seq, o.train.micro_batches, o.train.steps,
      static_cast<double>(o.train.lr), policy.name().c_str(), dir.c_str());
  const bool tty = isatty(fileno(stdout)) != 0;
  const double tokens_per_step = static_cast<double>(o.train.batch) * o.train.seq;
  double train_seconds = 0.0;
  int steps_timed = 0;
  while (trainer.step() < o.train.steps) {
    const StepResult r = trainer.train_step();
    train_seconds += r.seconds;
    ++steps_timed;
    float val_loss = NAN;
    if (evaluating && (r.step % o.eval_every == 0 || r.step == o.train.steps)) {
      val_loss = trainer.evaluate();
    }
    const double tokens_per_s = tokens_per_step / r.seconds;
    const double eta = train_seconds / steps_timed * (o.train.steps - r.step);
    std::printf(
        "%sstep %5d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | comm %.0f%% | "
        "ETA %s",
        tty ? "\r" : "", r.step, o.train.steps, static_cast<double>(r.loss),
        static_cast<double>(r.lr), static_cast<double>(r.grad_norm), tokens_per_s,
        100.0 * r.comm_seconds / r.seconds, format_duration(eta).c_str());
    if (!std::isnan(val_loss)) std::printf(" | val %.4f", static_cast<double>(val_loss));
    std::printf(tty && std::isnan(val_loss) && r.step < o.train.steps ? "\033[K" : "\n");
    std::fflush(stdout);
    if (json.is_open()) {
      nlohmann::ordered_json line = {
          {"step", r.step},           {"loss", r.loss},
          {"val_loss", nullptr},      {"lr", r.lr},
          {"grad_norm", r.grad_norm}, {"tokens_per_s", tokens_per_s},
          {"comm_s", r.comm_seconds}, {"compute_s", r.seconds - r.comm_seconds}};
      if (!std::isnan(val_loss)) line["val_loss"] = val_loss;
      json << line.dump() << '\n' << std::flush;
    }
    const bool last = r.step == o.train.steps;
    if (!o.checkpoint_dir.empty() &&
        (last || (o.checkpoint_every > 0 && r.step % o.checkpoint_every == 0))) {
      trainer.save(checkpoint_path(o.checkpoint_dir, whole));
    }
  }
  return 0;
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

  CLI::App app{"hycc-train " HYCC_VERSION ": reference GPT trainer (byte-level, Brown corpus)"};
  app.add_option("--dp", o.dp, "data-parallel ranks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--tp", o.tp, "tensor-parallel ranks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--pp", o.pp, "pipeline stages")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--zero", o.zero, "ZeRO stage")
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
  app.add_option("--policy", o.policy, "compression policy: preset or TOML file")
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
                 "directory with brown-train.txt and brown-val.txt "
                 "(default ${HYCC_DATA_DIR:-~/.cache/hycc}/brown)");
  app.add_option("--checkpoint", o.checkpoint_dir, "checkpoint directory (written at the end)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also checkpoint every N steps")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint DIR");
  app.add_option("--json", o.json_path,
                 "write one JSON object per step to FILE (appended on --resume)");
  CLI11_PARSE(app, argc, argv);
  try {
    return hycc::train::run(o);
  } catch (const hycc::Error& e) {
    std::fprintf(stderr, "\nhycc-train: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nhycc-train: unexpected error: %s\n", e.what());
    return 3;
  }
}
