#include "interpose/runtime/device_route.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "hycc/device.h"
#include "hycc/error.h"
#include "interpose/runtime/routing.h"

namespace hycc::interpose {
namespace {

bool g_device_codecs = true;  // HYCC_DEVICE_CODECS: auto (true) or off
std::atomic<uint64_t> g_device_calls{0};

// Whether this rank's `buffers` can take the device route; `context` receives their context.
// Never throws: every rank must reach the agreement.
bool local_buffers_on_device(std::initializer_list<const void*> buffers, void** context) noexcept
    try {
  int ordinal = -1;
  bool any = false;
  for (const void* b : buffers) {
    if (b == nullptr) continue;
    const DevicePointer d = describe_device_pointer(b);
    if (!d.plain || (any && (d.ordinal != ordinal || d.context != *context))) return false;
    any = true;
    ordinal = d.ordinal;
    *context = d.context;
  }
  return any;
} catch (const std::exception&) {
  return false;  // a driver that cannot answer: staged, as before
}

bool cuda_loaded() noexcept try { return cuda_in_use(); } catch (const std::exception&) {
  return false;
}

}  // namespace

void read_device_codecs_setting() {
  const char* v = std::getenv("HYCC_DEVICE_CODECS");
  const std::string_view s = v == nullptr ? "" : v;
  if (s.empty() || s == "auto") {
    g_device_codecs = true;
  } else if (s == "off") {
    g_device_codecs = false;
  } else {
    throw InvalidArgument(tagged("interpose", "HYCC_DEVICE_CODECS=", s,
                                 ": expected auto (device buffers compressed on the GPU where ",
                                 "every rank has them) or off (staged through host memory)"));
  }
}

DeviceRoute::DeviceRoute(CommState& s, std::initializer_list<const void*> buffers) {
  if (!g_device_codecs || !device_codecs_built()) return;
  if (s.device_route < 0) {
    int everywhere = cuda_loaded() ? 1 : 0;
    HYCC_CHECK_MPI(PMPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, s.comm.mpi()));
    s.device_route = everywhere;
  }
  if (s.device_route == 0) return;
  void* context = nullptr;
  int on = local_buffers_on_device(buffers, &context) ? 1 : 0;
  if (on == 1) {
    // Before the agreement, so that a rank that cannot says so: the buffers' context current,
    // then whether their GPU runs this build's kernels (another architecture keeps the staging;
    // asked in that context, so of that device, without making a context of its own).
    try {
      context_.emplace(context);
      if (!device_runs_kernels()) on = 0;
    } catch (const std::exception&) {
      on = 0;
    }
  }
  HYCC_CHECK_MPI(PMPI_Allreduce(MPI_IN_PLACE, &on, 1, MPI_INT, MPI_MIN, s.comm.mpi()));
  on_ = on == 1;
  if (!on_) {
    context_.reset();
    return;
  }
  ++g_device_calls;
}

DeviceCollectiveOptions DeviceRoute::options(const PolicyDecision& decision, const void* key_buffer,
                                             size_t key_count) const {
  DeviceCollectiveOptions o;
  o.backend = DeviceBackend::kCuda;
  o.stream = nullptr;
  o.transport = DeviceTransport::kAuto;
  o.policy = engine();
  o.decision = &decision;
  o.check_arguments = argument_check();
  o.key_buffer = key_buffer;
  o.key_count = key_count;
  return o;
}

void report_device_buffers(const PolicyEngine& engine) {
  if (!engine.options().log.summary) return;
  uint64_t all[2] = {g_device_calls.load(), staged_buffers()};
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Reduce(rank == 0 ? MPI_IN_PLACE : all, all, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank != 0 || (all[0] == 0 && all[1] == 0)) return;
  std::fprintf(engine.options().log_file,
               "hycc: device buffers (all ranks): %llu calls compressed on the GPU, %llu "
               "buffers staged through host memory\n",
               static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]));
}

}  // namespace hycc::interpose
