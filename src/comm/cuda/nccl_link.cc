// NCCL for the NCCL transport (nccl_link.h, nccl_transport.cc) and the per-communicator NCCL
// state.
//
// libnccl.so.2 is loaded at run time (dlopen), not linked: it is over 200 MB, most users of
// hycc's CUDA build never need it, and a machine without it still runs everything over staged
// MPI. The NCCL communicator is made from the communicator (rank 0's ncclGetUniqueId, passed to
// the others by comm::combine, ncclCommInitRank) and kept with it (an MPI attribute, or an
// attribute of the group of a communicator over one, comm/group.h), with the link stream its
// groups are queued on (non-blocking, created with it); both are destroyed with the
// communicator. Marks are CUDA events recorded on the link stream (recycled); a group
// waits for the compute stream's work queued before it (an event), and the compute stream waits
// for a mark with cudaStreamWaitEvent, so the host waits only where it needs memory back.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codec/cuda/device_util.cuh"
#include "comm/comm_attribute.h"
#include "comm/group.h"
#include "comm/nccl_link.h"
#include "comm/tags.h"
#include "comm/transport.h"
#include "common/host_syncs.h"
#include "common/xxh3.h"
#include "hycc/device.h"

namespace hycc::comm {
namespace {

struct NcclApi {
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                 ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  std::string missing;  // why NCCL cannot be used, or ""
};

template <typename F>
void load(void* lib, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr && missing.empty()) missing = std::string("libnccl.so.2 lacks ") + name;
}

const NcclApi& nccl_api() {
  static const NcclApi api = [] {
    NcclApi a;
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      a.missing = std::string("cannot load libnccl.so.2: ") + (e != nullptr ? e : "?");
      return a;
    }
    load(lib, "ncclGetUniqueId", a.get_unique_id, a.missing);
    load(lib, "ncclCommInitRank", a.comm_init_rank, a.missing);
    load(lib, "ncclCommDestroy", a.comm_destroy, a.missing);
    load(lib, "ncclGroupStart", a.group_start, a.missing);
    load(lib, "ncclGroupEnd", a.group_end, a.missing);
    load(lib, "ncclSend", a.send, a.missing);
    load(lib, "ncclRecv", a.recv, a.missing);
    load(lib, "ncclAllReduce", a.all_reduce, a.missing);
    load(lib, "ncclReduceScatter", a.reduce_scatter, a.missing);
    load(lib, "ncclAllGather", a.all_gather, a.missing);
    load(lib, "ncclBroadcast", a.broadcast, a.missing);
    load(lib, "ncclGetErrorString", a.error_string, a.missing);
    return a;
  }();
  return api;
}

void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) {
    throw CommError(tagged("coll:nccl", call, ": ", nccl_api().error_string(r)));
  }
}

// What hycc keeps with a communicator for NCCL (comm_attribute: destroyed with it).
struct NcclState {
  int usable = -1;  // nccl_usable's answer, -1 before it was asked
  ncclComm_t comm = nullptr;
  cudaStream_t link = nullptr;  // the stream NCCL groups are queued on

  NcclState() = default;
  NcclState(const NcclState&) = delete;
  NcclState& operator=(const NcclState&) = delete;
  ~NcclState() {
    if (comm != nullptr) nccl_api().comm_destroy(comm);
    if (link != nullptr) cudaStreamDestroy(link);
  }
};

NcclState& state_of(const Communicator& comm) {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  return comm_attribute<NcclState>(comm);
}

// An identity of this rank's GPU: host name and PCI bus id of the current device, hashed.
uint64_t gpu_identity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  int device = 0;
  char bus[64] = {};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus, sizeof(bus) - 1, device) != cudaSuccess) {
    cudaGetLastError();
  }
  const std::string id = std::string(host) + "/" + bus;
  return xxh3(id.data(), id.size());
}

class CudaNcclLink final : public NcclLink {
 public:
  CudaNcclLink(ncclComm_t comm, cudaStream_t link, cudaStream_t compute)
      : api_(nccl_api()), comm_(comm), link_(link), compute_(compute) {
    compute_done_ = make_event();
  }
  // Without waiting: the transport either ordered the compute stream after the link stream
  // (finish) or waited for it (abandon). Events still pending are released by CUDA once they
  // complete.
  ~CudaNcclLink() override {
    for (const auto& m : marks_) cudaEventDestroy(m.second);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
    cudaEventDestroy(compute_done_);
  }

  const char* name() const override { return "NCCL"; }

  void group(const LinkTransfer& send, const LinkTransfer& recv) override {
    HYCC_CUDA_CHECK(cudaEventRecord(compute_done_, compute_));
    HYCC_CUDA_CHECK(cudaStreamWaitEvent(link_, compute_done_, 0));
    check_nccl(api_.group_start(), "ncclGroupStart");
    if (send.peer >= 0 && send.bytes != 0) {
      check_nccl(api_.send(send.data, send.bytes, ncclUint8, send.peer, comm_, link_), "ncclSend");
    }
    if (recv.peer >= 0 && recv.bytes != 0) {
      check_nccl(api_.recv(recv.data, recv.bytes, ncclUint8, recv.peer, comm_, link_), "ncclRecv");
    }
    check_nccl(api_.group_end(), "ncclGroupEnd");
  }

  uint64_t mark() override {
    cudaEvent_t e = spare_.empty() ? make_event() : spare_.back();
    if (!spare_.empty()) spare_.pop_back();
    HYCC_CUDA_CHECK(cudaEventRecord(e, link_));
    marks_.emplace_back(++last_, e);
    return last_;
  }

  bool reached(uint64_t mark) override {
    while (passed_ < mark) {
      const cudaError_t r = cudaEventQuery(marks_.front().second);
      if (r == cudaErrorNotReady) return false;
      HYCC_CUDA_CHECK(r);
      pass_front();
    }
    return true;
  }

  void wait(uint64_t mark) override {
    while (passed_ < mark) {
      count_host_sync();
      HYCC_CUDA_CHECK(cudaEventSynchronize(marks_.front().second));
      pass_front();
    }
  }

  void order_compute_after(uint64_t mark) override {
    if (passed_ >= mark) return;
    HYCC_CUDA_CHECK(cudaStreamWaitEvent(compute_, marks_.at(mark - passed_ - 1).second, 0));
  }

  void progress() override {}
  bool needs_host_progress() const override { return false; }

  void abandon() override {
    count_host_sync();
    cudaStreamSynchronize(link_);
  }

 private:
  static cudaEvent_t make_event() {
    cudaEvent_t e = nullptr;
    HYCC_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void pass_front() {
    passed_ = marks_.front().first;
    spare_.push_back(marks_.front().second);
    marks_.pop_front();
  }

  const NcclApi& api_;
  ncclComm_t comm_;
  cudaStream_t link_, compute_;
  cudaEvent_t compute_done_ = nullptr;
  std::deque<std::pair<uint64_t, cudaEvent_t>> marks_;  // not yet passed, in order
  std::vector<cudaEvent_t> spare_;
  uint64_t last_ = 0, passed_ = 0;
};

}  // namespace

bool nccl_usable(const Communicator& comm) {
  NcclState& state = state_of(comm);
  if (state.usable < 0) {
    // Every rank's (can load NCCL and has a device, its GPU's identity), gathered by a sum.
    std::vector<int64_t> all(2 * static_cast<size_t>(comm.size()), 0);
    const size_t at = 2 * static_cast<size_t>(comm.rank());
    all[at] = nccl_api().missing.empty() && device_count() > 0 ? 1 : 0;
    const uint64_t identity = gpu_identity();
    std::memcpy(&all[at + 1], &identity, sizeof identity);
    combine(comm, all, Combine::kSum);
    bool usable = true;
    for (size_t i = 0; i < all.size(); i += 2) {
      usable = usable && all[i] == 1;
      for (size_t j = 0; j < i; j += 2) usable = usable && all[i + 1] != all[j + 1];
    }
    state.usable = usable ? 1 : 0;
  }
  return state.usable == 1;
}

// The NCCL state of `comm` with its NCCL communicator, made first when `create` (see
// make_cuda_nccl_link).
static NcclState& nccl_state(const Communicator& comm, bool create) {
  NcclState& state = state_of(comm);
  if (state.comm == nullptr) {
    if (!create) {
      throw InvalidArgument(tagged("coll:nccl", "the communicator has no NCCL communicator yet: ",
                                   "run a device collective with the NCCL transport on it first"));
    }
    // Every rank must be able to take part before any of them enters ncclCommInitRank.
    int64_t ok = nccl_api().missing.empty() ? 1 : 0;
    combine(comm, std::span<int64_t>(&ok, 1), Combine::kMin);
    if (ok == 0) {
      throw Unavailable(tagged("coll:nccl", nccl_api().missing.empty()
                                                ? std::string("another rank cannot load NCCL")
                                                : nccl_api().missing));
    }
    // Rank 0's id, passed on as a sum with zeros from the others.
    static_assert(sizeof(ncclUniqueId) % sizeof(int64_t) == 0);
    std::array<int64_t, sizeof(ncclUniqueId) / sizeof(int64_t)> words{};
    if (comm.rank() == 0) {
      ncclUniqueId mine{};
      check_nccl(nccl_api().get_unique_id(&mine), "ncclGetUniqueId");
      std::memcpy(words.data(), &mine, sizeof mine);
    }
    combine(comm, words, Combine::kSum);
    ncclUniqueId id{};
    std::memcpy(&id, words.data(), sizeof id);
    check_nccl(nccl_api().comm_init_rank(&state.comm, comm.size(), id, comm.rank()),
               "ncclCommInitRank");
    HYCC_CUDA_CHECK(cudaStreamCreateWithFlags(&state.link, cudaStreamNonBlocking));
  }
  return state;
}

std::unique_ptr<NcclLink> make_cuda_nccl_link(const Communicator& comm, DeviceStream compute,
                                              bool create) {
  const NcclState& state = nccl_state(comm, create);
  return std::make_unique<CudaNcclLink>(state.comm, state.link, static_cast<cudaStream_t>(compute));
}

void queue_nccl_collective(const Communicator& comm, DeviceStream stream, NcclOp op,
                           const void* send, void* recv, size_t count, int root) {
  const ncclComm_t nccl = nccl_state(comm, true).comm;
  const NcclApi& api = nccl_api();
  const auto s = static_cast<cudaStream_t>(stream);
  switch (op) {
    case NcclOp::kAllreduce:
      return check_nccl(api.all_reduce(send, recv, count, ncclFloat32, ncclSum, nccl, s),
                        "ncclAllReduce");
    case NcclOp::kReduceScatter:
      return check_nccl(api.reduce_scatter(send, recv, count / static_cast<size_t>(comm.size()),
                                           ncclFloat32, ncclSum, nccl, s),
                        "ncclReduceScatter");
    case NcclOp::kAllgather:
      return check_nccl(api.all_gather(send, recv, count, ncclUint8, nccl, s), "ncclAllGather");
    case NcclOp::kBroadcast:
      return check_nccl(api.broadcast(send, recv, count, ncclUint8, root, nccl, s),
                        "ncclBroadcast");
    case NcclOp::kAlltoall: {
      check_nccl(api.group_start(), "ncclGroupStart");
      for (int peer = 0; peer < comm.size(); ++peer) {
        const size_t at = static_cast<size_t>(peer) * count;
        check_nccl(api.send(static_cast<const char*>(send) + at, count, ncclUint8, peer, nccl, s),
                   "ncclSend");
        check_nccl(api.recv(static_cast<char*>(recv) + at, count, ncclUint8, peer, nccl, s),
                   "ncclRecv");
      }
      return check_nccl(api.group_end(), "ncclGroupEnd");
    }
  }
}

}  // namespace hycc::comm
