// Run under mpirun (2 or more ranks). A compressed allreduce of a 4 MiB tensor with
// quant:bits=8, its statistics and error against MPI's exact sum; then ten steps of a gradient
// compressor with error feedback (ef2+quant:bits=4) on the same tensor, whose average over the
// steps comes closer to the exact sum than one step (what error feedback is for). Rank 0 prints;
// exits with 1 if the ranks' results differ or error feedback does not help.
#include <hycc/collectives.h>
#include <hycc/grad.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

double largest_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i] - want[i])));
  return worst;
}

int run() {
  const hycc::Communicator dp = hycc::Communicator::world().dup("dp");
  const size_t n = 1 << 20;
  std::vector<float> grad(n), sum(n), exact(n);
  for (size_t i = 0; i < n; ++i) grad[i] = std::sin(0.001f * float(i) + float(dp.rank()));
  MPI_Allreduce(grad.data(), exact.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

  hycc::CollectiveStats stats;
  hycc::CollectiveOptions options;
  options.codec = hycc::CodecConfig::parse("quant:bits=8");
  options.stats = &stats;
  hycc::allreduce(dp, {hycc::DType::kF32, n, grad.data()}, {hycc::DType::kF32, n, sum.data()},
                  hycc::ReduceOp::kSum, options);
  const double one_call = largest_error(sum, exact);
  if (dp.rank() == 0) {
    std::printf("allreduce quant:bits=8: %zu bytes sent for %zu (%.2fx), %.1f ms, error %.3g\n",
                stats.wire_bytes, stats.raw_bytes,
                double(stats.raw_bytes) / double(std::max<size_t>(stats.wire_bytes, 1)),
                stats.seconds * 1e3, one_call);
  }

  // Every rank must hold the same bits: compare with rank 0's.
  std::vector<float> first(sum);
  MPI_Bcast(first.data(), int(n * sizeof(float)), MPI_BYTE, 0, MPI_COMM_WORLD);
  int failures = std::equal(first.begin(), first.end(), sum.begin()) ? 0 : 1;

  // Error feedback: the part of each step's gradient the codec lost is added to the next step.
  hycc::GradCompressor compressor("ef2+quant:bits=4");
  hycc::GradOptions grad_options;
  grad_options.op = hycc::ReduceOp::kSum;
  const int steps = 10;
  std::vector<double> mean(n, 0.0);
  double one_step = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<float> g(grad);
    hycc::grad_allreduce(dp, compressor, hycc::GradTensor(/*key=*/1),
                         {hycc::DType::kF32, n, g.data()}, grad_options);
    if (step == 0) one_step = largest_error(g, exact);
    for (size_t i = 0; i < n; ++i) mean[i] += g[i] / double(steps);
  }
  std::vector<float> averaged(mean.begin(), mean.end());
  const double over_steps = largest_error(averaged, exact);
  if (dp.rank() == 0) {
    std::printf("ef2+quant:bits=4: error %.3g in one step, %.3g averaged over %d steps\n", one_step,
                over_steps, steps);
  }
  failures += over_steps < one_step ? 0 : 1;
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failures = 1;
  try {
    failures = run();
  } catch (const std::exception& e) {  // hycc's errors are typed exceptions (hycc/error.h)
    std::fprintf(stderr, "allreduce: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("allreduce: %s\n", failures == 0 ? "OK" : "FAIL");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
