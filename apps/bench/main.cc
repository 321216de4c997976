// hycc-bench: benchmarks of the hycc codecs, collectives and gradient compressors, printed as
// nccl-tests-style tables with the baseline measured in the same run.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "codec_bench.h"
#include "coll_bench.h"
#include "devcoll_bench.h"
#include "grad_bench.h"
#include "hycc/config.h"
#include "hycc/error.h"
#include "walk_bench.h"

int main(int argc, char** argv) {
  CLI::App app{"hycc-bench " HYCC_VERSION ": benchmarks of hycc's compressed communication"};
  app.require_subcommand(1);
  hycc::bench::CodecBenchOptions codec_options;
  CLI::App* codec_cmd = hycc::bench::add_codec_command(app, codec_options);
  hycc::bench::CollBenchOptions coll_options;
  CLI::App* coll_cmd = hycc::bench::add_coll_command(app, coll_options);
  hycc::bench::DevCollBenchOptions devcoll_options;
  CLI::App* devcoll_cmd = hycc::bench::add_devcoll_command(app, devcoll_options);
  hycc::bench::GradBenchOptions grad_options;
  CLI::App* grad_cmd = hycc::bench::add_grad_command(app, grad_options);
  hycc::bench::WalkBenchOptions walk_options;
  CLI::App* walk_cmd = hycc::bench::add_walk_command(app, walk_options);
  CLI11_PARSE(app, argc, argv);
  try {
    if (codec_cmd->parsed()) return hycc::bench::run_codec_bench(codec_options);
    if (coll_cmd->parsed()) return hycc::bench::run_coll_bench(coll_options);
    if (devcoll_cmd->parsed()) return hycc::bench::run_devcoll_bench(devcoll_options);
    if (grad_cmd->parsed()) return hycc::bench::run_grad_bench(grad_options);
    if (walk_cmd->parsed()) return hycc::bench::run_walk_bench(walk_options);
  } catch (const hycc::Error& e) {
    std::fprintf(stderr, "hycc-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hycc-bench: unexpected error: %s\n", e.what());
    return 3;
  }
  return 0;
}
