#include "grad_bench.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "bench_memory.h"
#include "bench_util.h"
#include "common/synthetic_data.h"
#include "common/xxh3.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/comm.h"
#include "hycc/error.h"
#include "hycc/grad.h"
#include "hycc/grad_device.h"

namespace hycc::bench {
namespace {

const std::vector<std::string> kDefaultShapes = {"4096x4096", "4096x16384", "50304x4096", "4096"};
const std::vector<std::string> kDefaultCompressors = {"ef+quant:bits=4", "ef+quant:bits=2",
                                                      "ef+zfp:rate=8",   "powersgd:rank=4",
                                                      "topk:ratio=0.01", "sign"};

size_t parse_size(const std::string& text, const std::string& what) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v == 0 || v > (1ull << 40)) {
    throw InvalidArgument(tagged("bench", "bad ", what, " '", text, "'"));
  }
  return size_t(v);
}

// "4096x16384" -> {4096, 16384}; "4096" -> {4096}.
std::vector<size_t> parse_shape(const std::string& text) {
  std::vector<size_t> dims;
  size_t begin = 0;
  while (true) {
    const size_t x = text.find('x', begin);
    dims.push_back(parse_size(text.substr(begin, x - begin), "shape " + text));
    if (x == std::string::npos) break;
    begin = x + 1;
  }
  return dims;
}

// "1/8" or "0.125", in (0, 1].
double parse_scale(const std::string& text) {
  const size_t slash = text.find('/');
  double v = 0;
  try {
    v = slash == std::string::npos
            ? std::stod(text)
            : std::stod(text.substr(0, slash)) / std::stod(text.substr(slash + 1));
  } catch (const std::exception&) {
    v = 0;
  }
  if (!(v > 0 && v <= 1)) {
    throw InvalidArgument(tagged("bench", "bad --scale '", text, "': expected 1/N or (0, 1]"));
  }
  return v;
}

// "768x2304+2304" -> a bucket of {768, 2304} and {2304}; "4096x16384" -> one tensor; "flat:"
// before either: the same values handed over without their shapes (as the drop-in library sees
// a buffer: PowerSGD then compresses its square view).
struct Layout {
  std::vector<std::vector<size_t>> tensors;
  bool flat = false;

  GradTensor tensor() const {
    if (flat) return GradTensor{1};
    return tensors.size() == 1 ? GradTensor{1, tensors[0]} : GradTensor::bucket(1, tensors);
  }
};

Layout parse_layout(const std::string& text) {
  constexpr std::string_view kFlat = "flat:";
  Layout layout;
  layout.flat = text.starts_with(kFlat);
  size_t begin = layout.flat ? kFlat.size() : 0;
  while (true) {
    const size_t plus = text.find('+', begin);
    layout.tensors.push_back(parse_shape(text.substr(begin, plus - begin)));
    if (plus == std::string::npos) break;
    begin = plus + 1;
  }
  return layout;
}

std::string shape_text(const Layout& layout) {
  std::string s;
  for (const std::vector<size_t>& dims : layout.tensors) {
    if (!s.empty()) s += "+";
    for (size_t i = 0; i < dims.size(); ++i) s += (i == 0 ? "" : "x") + std::to_string(dims[i]);
  }
  return layout.flat ? "flat:" + s : s;
}

struct Row {
  std::string shape, compressor, canonical;  // the spec as given, and its canonical form
  size_t count = 0;
  double payload = 0, wire = 0;  // bytes per step, this rank (max over ranks)
  double compress_ms = 0, comm_ms = 0, total_ms = 0, native_ms = 0;
  double rel_err = 0;  // ||result - exact average|| / ||exact average|| at the last step
  int differing = 0;   // ranks whose result differs from rank 0's
  bool compressed = false;
};

double max_over_ranks(const Communicator& comm, double v) {
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm.mpi()));
  return v;
}

// Ranks whose `data` differs from rank 0's (checksums through MPI_Allgather).
int differing_ranks(const Communicator& comm, const std::vector<float>& data) {
  const uint64_t mine = xxh3(data.data(), data.size() * sizeof(float));
  std::vector<uint64_t> all(size_t(comm.size()));
  HYCC_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm.mpi()));
  return int(std::count_if(all.begin(), all.end(), [&](uint64_t c) { return c != all[0]; }));
}

// Times `fn` (warmup untimed, then iters calls): the slowest rank's average, in ms.
double time_ms(const Communicator& comm, const GradBenchOptions& o,
               const std::function<void()>& fn) {
  for (int i = 0; i < o.warmup; ++i) fn();
  HYCC_CHECK_MPI(MPI_Barrier(comm.mpi()));
  const double t0 = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i) fn();
  return max_over_ranks(comm, (MPI_Wtime() - t0) / o.iters * 1e3);
}

// One step of a compressor on the rank's gradient: GradCompressor on host memory, or
// DeviceGradCompressor on device memory (CUDA or the host emulation); an allreduce, or with
// --op reduce_scatter the ZeRO reduce-scatter into this rank's chunk.
class Stepper {
 public:
  Stepper(const Communicator& comm, const GradBenchOptions& o, const std::vector<float>& grad)
      : device_(o.device != "host"),
        scatter_(o.op == "reduce_scatter"),
        count_(grad.size()),
        mine_(chunk_range(grad.size(), comm.size(), comm.rank())),
        grad_(o.device == "cuda", grad.size() * 4),
        work_(o.device == "cuda", grad.size() * 4),
        shard_(o.device == "cuda", mine_.count * 4) {
    grad_.load(grad.data(), grad.size() * 4);
    options_.backend = o.device == "cuda" ? DeviceBackend::kCuda : DeviceBackend::kHostEmulation;
    options_.check_arguments = parse_check_args(o.check_args);
    grad_options_.check_arguments = options_.check_arguments;
  }
  // The uncompressed average of the gradient (this rank's chunk of it for a reduce-scatter).
  void native(const Communicator& comm) {
    work_.copy_from(grad_, count_ * 4);
    if (device_) {
      if (scatter_) {
        reduce_scatter_device(comm, work(), shard(), ReduceOp::kAverage, options_);
      } else {
        allreduce_device(comm, work(), work(), ReduceOp::kAverage, options_);
      }
      return;
    }
    CollectiveOptions native;
    native.algorithm = Algorithm::kNative;
    if (scatter_) {
      reduce_scatter(comm, work(), shard(), ReduceOp::kAverage, native);
    } else {
      allreduce(comm, work(), work(), ReduceOp::kAverage, native);
    }
  }
  // A fresh compressor of `spec` for the next steps; its canonical spec.
  std::string use(const std::string& spec) {
    if (device_) {
      device_compressor_ = std::make_unique<DeviceGradCompressor>(spec);
      return device_compressor_->spec();
    }
    host_ = std::make_unique<GradCompressor>(spec);
    return host_->spec();
  }
  GradStepStats step(const Communicator& comm, const GradTensor& tensor) {
    work_.copy_from(grad_, count_ * 4);
    if (device_) {
      return scatter_ ? device_compressor_->reduce_scatter(comm, tensor, work(), shard(),
                                                           ReduceOp::kAverage, options_)
                      : device_compressor_->allreduce(comm, tensor, work(), work(),
                                                      ReduceOp::kAverage, options_);
    }
    return scatter_ ? grad_reduce_scatter(comm, *host_, tensor, work(), shard(), grad_options_)
                    : grad_allreduce(comm, *host_, tensor, work(), grad_options_);
  }
  // Values in the result: the tensor, or this rank's chunk.
  size_t result_count() const { return scatter_ ? mine_.count : count_; }
  void result(std::vector<float>& out) const {
    out.resize(result_count());
    (scatter_ ? shard_ : work_).store(out.data(), result_count() * 4);
  }

 private:
  TensorView work() { return {DType::kF32, count_, work_.data()}; }
  TensorView shard() { return {DType::kF32, mine_.count, shard_.data()}; }

  bool device_, scatter_;
  size_t count_;
  ChunkRange mine_;
  BenchMemory grad_, work_, shard_;
  DeviceCollectiveOptions options_;
  GradOptions grad_options_;
  std::unique_ptr<GradCompressor> host_;
  std::unique_ptr<DeviceGradCompressor> device_compressor_;
};

std::vector<Row> run_shape(const Communicator& comm, const GradBenchOptions& o,
                           const Layout& layout) {
  size_t n = 0;
  for (const std::vector<size_t>& dims : layout.tensors) {
    size_t count = 1;
    for (const size_t d : dims) count *= d;
    n += count;
  }
  // A gradient-like input: gaussian, different on every rank.
  const std::vector<float> grad = make_data(DataKind::kGaussian, n, 1 + uint64_t(comm.rank()));
  std::vector<float> work, exact;
  Stepper stepper(comm, o, grad);

  // The uncompressed baseline, average.
  const double native_ms = time_ms(comm, o, [&] { stepper.native(comm); });
  stepper.result(exact);

  std::vector<Row> rows;
  for (const std::string& spec : o.compressors) {
    Row row;
    row.shape = shape_text(layout);
    row.compressor = spec;
    row.canonical = stepper.use(spec);
    row.count = n;
    row.native_ms = native_ms;
    GradStepStats sum;  // over the timed steps
    int calls = 0;
    const GradTensor tensor = layout.tensor();
    const double total_ms = time_ms(comm, o, [&] {
      const GradStepStats st = stepper.step(comm, tensor);
      if (calls++ < o.warmup) return;
      sum.payload_bytes = st.payload_bytes;
      sum.wire_bytes = st.wire_bytes;
      sum.compressed = st.compressed;
      sum.compress_seconds += st.compress_seconds;
      sum.comm_seconds += st.comm_seconds;
    });
    stepper.result(work);
    const int steps = calls - o.warmup;
    row.total_ms = total_ms;
    row.compress_ms = max_over_ranks(comm, sum.compress_seconds / steps * 1e3);
    row.comm_ms = max_over_ranks(comm, sum.comm_seconds / steps * 1e3);
    row.payload = max_over_ranks(comm, double(sum.payload_bytes));
    row.wire = max_over_ranks(comm, double(sum.wire_bytes));
    row.compressed = sum.compressed;
    double num = 0, den = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      const double d = double(work[i]) - double(exact[i]);
      num += d * d;
      den += double(exact[i]) * double(exact[i]);
    }
    row.rel_err = max_over_ranks(comm, den > 0 ? std::sqrt(num / den) : std::sqrt(num));
    // A reduce-scatter's ranks hold different chunks: nothing to compare.
    row.differing = o.op == "reduce_scatter" ? 0 : differing_ranks(comm, work);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

int run_grad_bench(const GradBenchOptions& options) {
  const MpiSession mpi;
  const Communicator comm = Communicator::world();
  GradBenchOptions o = options;
  std::vector<Layout> shapes;
  int rc = 0;
  try {
    if (o.shapes.empty()) o.shapes = kDefaultShapes;
    if (o.compressors.empty()) o.compressors = kDefaultCompressors;
    const double scale = parse_scale(o.scale);
    for (const std::string& s : o.shapes) {
      Layout layout = parse_layout(s);
      for (std::vector<size_t>& dims : layout.tensors) {
        dims[0] = std::max<size_t>(1, size_t(std::llround(double(dims[0]) * scale)));
      }
      shapes.push_back(layout);
    }
    for (const std::string& c : o.compressors) GradCompressor check(c);
    parse_check_args(o.check_args);
    if (o.device != "host" && o.device != "cuda" && o.device != "emulation") {
      throw InvalidArgument(
          tagged("bench", "unknown --device '", o.device, "'; expected host, cuda or emulation"));
    }
    if (o.op != "allreduce" && o.op != "reduce_scatter") {
      throw InvalidArgument(
          tagged("bench", "unknown --op '", o.op, "'; expected allreduce or reduce_scatter"));
    }
    if (o.device == "cuda" && device_count() == 0) {
      throw Unavailable(tagged("bench", "--device cuda: ", device_unavailable_reason()));
    }
  } catch (const Error& e) {
    if (comm.rank() == 0) std::fprintf(stderr, "hycc-bench grad: %s\n", e.what());
    rc = 2;
  }
  if (rc != 0) return rc;
  const bool print = comm.rank() == 0;
  const Table table({{"shape", 12, ""},
                     {"count", 11, "(elements)"},
                     {"compressor", 26, ""},
                     {"payload", 12, "(B/step)"},
                     {"ratio", 8, ""},
                     {"wire", 12, "(B/step)"},
                     {"compress", 10, "(ms)"},
                     {"comm", 9, "(ms)"},
                     {"total", 9, "(ms)"},
                     {"native", 9, "(ms)"},
                     {"speedup", 8, ""},
                     {"rel_err", 9, ""},
                     {"#diff", 6, ""}});
  if (print) {
    std::printf(
        "# hycc-bench grad: %s, %d ranks, f32 gradients (gaussian, different per rank), "
        "average, scale %s, device %s, argument check %s\n",
        o.op.c_str(), comm.size(), o.scale.c_str(), o.device.c_str(), o.check_args.c_str());
    std::printf(
        "# times: average per step over %d steps after %d warmup, slowest rank (ms);\n"
        "#   compress = local work (encode, decode, residual, reduction), comm = inside "
        "hycc collectives,\n#   total = the whole %s call\n",
        o.iters, o.warmup, o.op == "allreduce" ? "grad_allreduce" : "grad_reduce_scatter");
    std::printf(
        "# payload: bytes of this rank's compressed gradient; ratio = 4 count / payload;\n"
        "#   wire: bytes this rank sends per step (from the collectives' patterns)\n");
    const bool scatter = o.op == "reduce_scatter";
    std::printf(
        "# native: %s of the same tensor;\n#   speedup = native / total\n",
        o.device == "host"
            ? (scatter ? "the uncompressed reduce-scatter (hycc native path: "
                         "MPI_Reduce_scatter, avg)"
                       : "the uncompressed allreduce (hycc native path: MPI_Allreduce, avg)")
            : (scatter ? "the uncompressed device reduce-scatter (reduce_scatter_device, "
                         "codec none, avg)"
                       : "the uncompressed device allreduce (allreduce_device, codec none, "
                         "avg)"));
    std::printf(
        "# rel_err: ||result - exact average|| / ||exact average|| after the last step "
        "(error feedback\n#   carries the rest into later steps; a reduce-scatter: the worst "
        "rank's chunk);\n#   #diff: ranks whose result differs from rank 0's (allreduce)\n");
    std::printf("%s\n", table.header().c_str());
    std::fflush(stdout);
  }
  nlohmann::json json = nlohmann::json::array();
  int differing = 0;
  try {
    for (const Layout& layout : shapes) {
      for (const Row& row : run_shape(comm, o, layout)) {
        differing += row.differing;
        const double ratio = row.payload > 0 ? 4.0 * double(row.count) / row.payload : 0;
        const double speedup = row.total_ms > 0 ? row.native_ms / row.total_ms : 0;
        if (print) {
          std::printf("%s\n", table
                                  .row({row.shape, format("%zu", row.count),
                                        row.compressor + (row.compressed ? "" : " (plain)"),
                                        format("%.0f", row.payload), format("%.2f", ratio),
                                        format("%.0f", row.wire), format("%.2f", row.compress_ms),
                                        format("%.2f", row.comm_ms), format("%.2f", row.total_ms),
                                        format("%.2f", row.native_ms), format("%.2f", speedup),
                                        format("%.2e", row.rel_err), format("%d", row.differing)})
                                  .c_str());
          std::fflush(stdout);
        }
        json.push_back({{"shape", row.shape},
                        {"count", row.count},
                        {"compressor", row.canonical},
                        {"compressed", row.compressed},
                        {"ranks", comm.size()},
                        {"op", o.op},
                        {"device", o.device},
                        {"check_args", o.check_args},
                        {"payload_bytes", row.payload},
                        {"ratio", ratio},
                        {"wire_bytes", row.wire},
                        {"compress_ms", row.compress_ms},
                        {"comm_ms", row.comm_ms},
                        {"total_ms", row.total_ms},
                        {"native_ms", row.native_ms},
                        {"speedup", speedup},
                        {"rel_err", row.rel_err},
                        {"differing_ranks", row.differing}});
      }
    }
  } catch (const std::exception& e) {
    // A failure on one rank leaves the others waiting in a collective: end the whole job.
    std::fprintf(stderr, "hycc-bench grad: rank %d: %s\n", comm.rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (print) {
    std::printf("# Ranks with different results : %d %s\n", differing,
                differing == 0 ? "OK" : "FAILED");
    if (!o.json.empty()) {
      write_json(o.json, json);
      std::printf("# wrote %s\n", o.json.c_str());
    }
    std::fflush(stdout);
  }
  rc = differing == 0 ? 0 : 1;
  return rc;
}

}  // namespace hycc::bench
