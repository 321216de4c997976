// A C++ program built against an installed hycc (find_package(hycc), hycc::hycc;
// tests/install/install_test.sh). Run on 2 or more ranks: prints "consumer_cxx VERSION: OK" on
// rank 0 when a lossless codec round trip is bit-exact and a bf16 allreduce of small integers
// (exact in bf16) gives the exact sums on every rank.
#include <hycc/codec.h>
#include <hycc/collectives.h>
#include <hycc/config.h>
#include <hycc/error.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int check(bool ok, const char* what) {
  if (!ok) std::fprintf(stderr, "consumer_cxx: %s failed\n", what);
  return ok ? 0 : 1;
}

int run() {
  const hycc::Communicator world = hycc::Communicator::world();
  const hycc::Communicator dp = world.dup("dp");
  const size_t n = 1 << 16;
  std::vector<float> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = float((size_t(dp.rank()) + i) % 5);

  int failures = 0;
  const hycc::CodecConfig mpc = hycc::CodecConfig::parse("mpc");
  const std::vector<std::byte> stream = hycc::compress(mpc, {hycc::DType::kF32, n, in.data()});
  hycc::decompress(stream, {hycc::DType::kF32, n, out.data()});
  failures +=
      check(std::memcmp(in.data(), out.data(), n * sizeof(float)) == 0, "the mpc round trip");

  hycc::CollectiveOptions options;
  options.codec = hycc::CodecConfig::parse("bf16");
  options.threshold_bytes = 0;
  hycc::allreduce(dp, {hycc::DType::kF32, n, in.data()}, {hycc::DType::kF32, n, out.data()},
                  hycc::ReduceOp::kSum, options);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    float want = 0;
    for (int r = 0; r < dp.size(); ++r) want += float((size_t(r) + i) % 5);
    wrong += out[i] == want ? 0 : 1;
  }
  failures += check(wrong == 0, "the bf16 allreduce");

  try {
    (void)hycc::CodecConfig::parse("quant:bits=12");
    failures += check(false, "refusing quant:bits=12");
  } catch (const hycc::InvalidArgument&) {
  }
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
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_cxx: %s\n", e.what());
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("consumer_cxx %s: %s\n", HYCC_VERSION, failures == 0 ? "OK" : "FAIL");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
