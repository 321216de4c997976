// hycc-bench: benchmarks of the hycc codecs, collectives and gradient compressors, printed as
// nccl-tests-style tables with the baseline measured in the same run. This file is the command
// line (CLI11); the benchmarks (*_bench.cc) take their options as plain structs.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "bench_util.h"
#include "codec_bench.h"
#include "coll_bench.h"
#include "common/byte_size.h"
#include "devcoll_bench.h"
#include "grad_bench.h"
#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/config.h"
#include "hycc/error.h"
#include "hycc/grad.h"
#include "walk_bench.h"

namespace hycc::bench {
namespace {

// A byte size option (BYTES[K|M|G]): empty when it parses, the error message otherwise.
std::string bytes_check(std::string& text) {
  try {
    parse_byte_size(text, "a byte option");
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

CLI::App* add_codec_command(CLI::App& app, CodecBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "codec", "Compression ratio, speed (single thread) and error of codecs, with memcpy");
  cmd->add_option("--data", o.data,
                  "gaussian | laplace | smooth | FILE (raw little-endian float32)")
      ->capture_default_str();
  cmd->add_option("--count", o.count,
                  "number of values (a FILE may hold fewer); default 2^24 on the CPU, 256 MiB "
                  "of the dtype on a device")
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  cmd->add_option("--device", o.device,
                  "cpu (one thread) | cuda (device buffers, needs a CUDA build and a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--dtype", o.dtype, "element type the data is converted to: f32 | bf16 | f16")
      ->capture_default_str();
  cmd->add_option(
      "--codec", o.codecs,
      "codec spec, repeatable (default: a representative set); specs:\n" + codec_help());
  cmd->add_option("--json", o.json, "also write one JSON object per row to FILE");
  cmd->add_option("--min-time", o.min_seconds, "minimum seconds per timed measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  cmd->add_option("--seed", o.seed, "seed of the synthetic data")->capture_default_str();
  return cmd;
}

CLI::App* add_coll_command(CLI::App& app, CollBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "coll", "Compressed collectives vs the native MPI call, nccl-tests style (run under mpirun)");
  cmd->option_defaults()->always_capture_default();
  const CLI::Validator bytes(bytes_check, "BYTES[K|M|G]");
  const CollectiveOptions defaults;
  cmd->add_option("--op", o.op,
                  "allreduce | reduce_scatter | allgather | broadcast | alltoall | sendrecv");
  cmd->add_option("-b,--minbytes", o.min_bytes, "smallest message, uncompressed")->check(bytes);
  cmd->add_option("-e,--maxbytes", o.max_bytes, "largest message, uncompressed")->check(bytes);
  cmd->add_option("-f,--stepfactor", o.factor, "size multiplier between rows")
      ->check(CLI::Range(size_t{2}, size_t{1024}));
  cmd->add_option("-n,--iters", o.iters, "timed calls per size")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-w,--warmup_iters", o.warmup, "untimed calls per size before them")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--rounds", o.rounds,
                  "split the timed calls into R rounds of hycc, native, native, hycc blocks and "
                  "report each side's median round (robust on a shared machine)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("-c,--check", o.check, "check results after the timed loop (0/1)")
      ->check(CLI::Range(0, 1));
  cmd->add_option("-d,--datatype", o.dtype, "float | bf16 | fp16");
  cmd->add_option("-o,--op_type", o.redop, "sum | avg (reductions)");
  cmd->add_option("-r,--root", o.root, "root of broadcast");
  cmd->add_option("--codec", o.codec, "codec spec ('none', 'quant:bits=8', ...)");
  cmd->add_option(
      "--algo", o.algo,
      "auto | native | ring | rd | compress_once (allreduce) | chain (broadcast) | "
      "pairwise (alltoall) | two_level (allreduce, reduce_scatter, allgather, broadcast: "
      "uncompressed inside nodes, compressed between them)");
  cmd->add_option("--threshold", o.threshold,
                  format("below this many uncompressed bytes hycc runs the native MPI call "
                         "(library default %zu)",
                         defaults.threshold_bytes))
      ->check(bytes);
  cmd->add_option("--segment", o.segment,
                  format("pipelining segment, uncompressed bytes (library default %zu)",
                         defaults.segment_bytes))
      ->check(bytes);
  cmd->add_option("--check-args", o.check_args,
                  "cross-rank argument agreement: auto (before hycc's own algorithms, not before "
                  "native calls) | always | never");
  cmd->add_option("--json", o.json, "also write one JSON object per row to FILE (rank 0)");
  return cmd;
}

CLI::App* add_devcoll_command(CLI::App& app, DevCollBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "devcoll", "collectives on device buffers: codec vs none, checked against the host");
  cmd->add_option("--op", o.op, "allreduce | reduce_scatter | allgather | broadcast | alltoall");
  cmd->add_option("-b,--minbytes", o.min_bytes, "smallest message, uncompressed");
  cmd->add_option("-e,--maxbytes", o.max_bytes, "largest message, uncompressed");
  cmd->add_option("-f,--stepfactor", o.factor, "size multiplier between rows (>= 2)");
  cmd->add_option("-n,--iters", o.iters, "timed calls per block")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-w,--warmup_iters", o.warmup, "untimed calls of each side before them")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--rounds", o.rounds, "blocks of each side per size (median)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-d,--datatype", o.dtype, "float | bf16 | fp16");
  cmd->add_option("--codec", o.codec, "codec spec with a device implementation");
  cmd->add_option("--device", o.device, "auto | cuda | emulation (auto: cuda if a GPU is there)");
  cmd->add_option("--transport", o.transport, "auto | staged | nccl");
  cmd->add_option("--segment", o.segment, "pipelining segment, BYTES");
  cmd->add_option("--checksum", o.checksum, "payload checksums (0/1)")->check(CLI::Range(0, 1));
  cmd->add_option("--stream-ordered", o.stream_ordered,
                  "calls return once queued, as NCCL's (0/1); adds the host's time per call to "
                  "return and its synchronizations")
      ->check(CLI::Range(0, 1));
  cmd->add_option("-c,--check", o.check, "compare with the host collective (0/1)")
      ->check(CLI::Range(0, 1));
  cmd->add_option("--json", o.json, "also write one JSON object per row to FILE (rank 0)");
  return cmd;
}

CLI::App* add_grad_command(CLI::App& app, GradBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "grad", "Gradient compressors vs the uncompressed allreduce on gradient shapes (mpirun)");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--shape", o.shapes,
                  "tensor shape ROWSxCOLS or N, or a bucket of tensors joined by + (e.g. "
                  "768x2304+2304+768x768+768: PowerSGD compresses each matrix); with flat: "
                  "before it, the same values without their shapes, as the drop-in library sees "
                  "them (flat:768x2304+2304); repeatable (default 4096x4096 4096x16384 "
                  "50304x4096 4096)");
  cmd->add_option("--compressor", o.compressors,
                  "compressor spec, repeatable (default ef+quant:bits=4 ef+quant:bits=2 "
                  "ef+zfp:rate=8 powersgd:rank=4 topk:ratio=0.01 sign)\n" +
                      grad_help());
  cmd->add_option("--scale", o.scale,
                  "multiplies the first dimension of every shape (and of every tensor of a "
                  "bucket): 1/N or x");
  cmd->add_option("-n,--iters", o.iters, "timed steps per row")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-w,--warmup_iters", o.warmup, "untimed steps before them")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--json", o.json, "also write one JSON object per row to FILE (rank 0)");
  cmd->add_option("--op", o.op,
                  "allreduce (grad_allreduce) | reduce_scatter (grad_reduce_scatter, the ZeRO "
                  "gradients: each rank's chunk; native is the uncompressed reduce-scatter)");
  cmd->add_option("--device", o.device,
                  "host (GradCompressor) | cuda (DeviceGradCompressor on GPU buffers) | "
                  "emulation (the same on the host emulation of the device)");
  cmd->add_option("--check-args", o.check_args,
                  "cross-rank argument agreement before each step: auto (= always: a step is "
                  "hycc's own exchange) | always | never");
  return cmd;
}

CLI::App* add_walk_command(CLI::App& app, WalkBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "walk",
      "Step counts of the device decoders' parallel walk over eb, zfp:accuracy blocks and mpc "
      "groups, against "
      "the one-thread walk (run on the CPU; counts, not times)");
  cmd->add_option("--codec", o.codecs,
                  "eb or mpc spec, repeatable (default: eb:abs=1e-3, "
                  "eb:abs=1e-6, mpc)");
  cmd->add_option("--data", o.data, "gaussian | laplace | smooth")
      ->capture_default_str()
      ->check(CLI::IsMember({"gaussian", "laplace", "smooth"}));
  cmd->add_option("--dtype", o.dtype, "f32 | bf16 | f16")->capture_default_str();
  cmd->add_option("--count", o.count, "number of values")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  cmd->add_option("--seed", o.seed, "seed of the synthetic data")->capture_default_str();
  return cmd;
}

}  // namespace
}  // namespace hycc::bench

int main(int argc, char** argv) {
  using namespace hycc::bench;
  CLI::App app{"hycc-bench " HYCC_VERSION ": benchmarks of hycc's compressed communication"};
  app.require_subcommand(1);
  CodecBenchOptions codec_options;
  CLI::App* codec_cmd = add_codec_command(app, codec_options);
  CollBenchOptions coll_options;
  CLI::App* coll_cmd = add_coll_command(app, coll_options);
  DevCollBenchOptions devcoll_options;
  CLI::App* devcoll_cmd = add_devcoll_command(app, devcoll_options);
  GradBenchOptions grad_options;
  CLI::App* grad_cmd = add_grad_command(app, grad_options);
  WalkBenchOptions walk_options;
  CLI::App* walk_cmd = add_walk_command(app, walk_options);
  app.set_version_flag("--version", "hycc-bench " HYCC_VERSION HYCC_BUILD_KIND);
  CLI11_PARSE(app, argc, argv);
  try {
    if (codec_cmd->parsed()) return run_codec_bench(codec_options);
    if (coll_cmd->parsed()) return run_coll_bench(coll_options);
    if (devcoll_cmd->parsed()) return run_devcoll_bench(devcoll_options);
    if (grad_cmd->parsed()) return run_grad_bench(grad_options);
    if (walk_cmd->parsed()) return run_walk_bench(walk_options);
  } catch (const hycc::Error& e) {
    std::fprintf(stderr, "hycc-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hycc-bench: unexpected error: %s\n", e.what());
    return 3;
  }
  return 0;
}
