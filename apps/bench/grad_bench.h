// hycc-bench grad: gradient compressors (hycc/grad.h) on transformer gradient shapes, against the
// uncompressed allreduce (hycc's native path, MPI_Allreduce) of the same tensors in the same run.
// --op reduce_scatter times grad_reduce_scatter against the uncompressed reduce-scatter instead.
// One row per shape and compressor: bytes per step, ratio, compressor time, allreduce time, the
// error of the result against the exact average, and whether every rank holds the same bits.
// --device cuda runs DeviceGradCompressor (hycc/grad_device.h) on GPU buffers against the
// uncompressed device allreduce (allreduce_device, codec none); --device emulation the same on
// the host emulation of the device. Run it under mpirun; only rank 0 prints.
#pragma once

#include <string>
#include <vector>

namespace hycc::bench {

struct GradBenchOptions {
  // Tensor shapes "ROWSxCOLS" or "N" (1-D); default: 4096x4096, 4096x16384, 50304x4096, 4096.
  std::vector<std::string> shapes;
  // Compressor specs; default: ef+quant:bits=4, ef+quant:bits=2, ef+zfp:rate=8, powersgd:rank=4,
  // topk:ratio=0.01, sign.
  std::vector<std::string> compressors;
  std::string scale = "1";       // multiplies the first dimension of every shape: "1/8" or "0.125"
  int iters = 5;                 // timed steps per row
  int warmup = 1;                // untimed steps before them
  std::string json;              // path of the JSON output, empty for none
  std::string device = "host";   // host | cuda | emulation
  std::string op = "allreduce";  // allreduce | reduce_scatter (the ZeRO gradients)
  std::string check_args = "auto";  // auto|always|never: the cross-rank argument agreement
};

// Initializes MPI if needed, runs every shape x compressor, prints the table on rank 0; returns
// 0, 1 if some rank's results differ from rank 0's, 2 for invalid arguments.
int run_grad_bench(const GradBenchOptions& options);

}  // namespace hycc::bench
