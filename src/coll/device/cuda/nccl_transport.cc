// The NCCL transport (transport.h) and the per-communicator NCCL state.
//
// libnccl.so.2 is loaded at run time (dlopen), not linked: it is over 200 MB, most users of
// hycc's CUDA build never need it, and a machine without it still runs everything over staged
// MPI. The NCCL communicator is made from the MPI communicator (rank 0's ncclGetUniqueId,
// MPI_Bcast, ncclCommInitRank) and kept as an MPI attribute of it, destroyed when the MPI
// communicator is freed.
//
// Messages: NCCL needs the exact size at the receiver, so every message is two: its size (8
// bytes) and then the payload. They move in rounds, each one ncclGroupStart/End holding at most
// one send (the oldest not yet sent) and the receive waited for: the i-th receive of a rank is
// in a round with its i-th (or an earlier) send, and a rank's sends wait for no receive of
// their own round, so the ring's rounds complete in order on every rank without a cycle of
// waits. Sends left when no receive remains go in rounds of their own. Each round waits for its
// size and its payload (cudaStreamSynchronize): this transport does not overlap encoding with
// transfers; staged MPI does.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "codec/cuda/device_util.cuh"
#include "coll/coll_internal.h"
#include "coll/device/transport.h"
#include "common/checksum.h"
#include "hycc/device.h"

namespace hycc::coll::device {
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

// What hycc keeps with an MPI communicator for NCCL.
struct NcclState {
  int usable = -1;  // nccl_usable's answer, -1 before it was asked
  ncclComm_t comm = nullptr;
};

int delete_state(MPI_Comm, int, void* attr, void*) {
  auto* s = static_cast<NcclState*>(attr);
  if (s->comm != nullptr) nccl_api().comm_destroy(s->comm);
  delete s;
  return MPI_SUCCESS;
}

int state_keyval() {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    HYCC_CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &k, nullptr));
    return k;
  }();
  return keyval;
}

NcclState& state_of(MPI_Comm comm) {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  void* attr = nullptr;
  int found = 0;
  HYCC_CHECK_MPI(MPI_Comm_get_attr(comm, state_keyval(), &attr, &found));
  if (found) return *static_cast<NcclState*>(attr);
  auto* s = new NcclState;
  HYCC_CHECK_MPI(MPI_Comm_set_attr(comm, state_keyval(), s));
  return *s;
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
  return checksum64(id.data(), id.size());
}

class NcclTransport final : public Transport {
 public:
  NcclTransport(ncclComm_t comm, cudaStream_t stream)
      : api_(nccl_api()), comm_(comm), stream_(stream) {
    HYCC_CUDA_CHECK(cudaMalloc(&sizes_, 2 * sizeof(uint64_t)));
  }
  ~NcclTransport() override { cudaFree(sizes_); }

  const char* name() const override { return "NCCL"; }

  void post_send(int peer, Payload&& payload) override {
    unsent_.push_back({peer, std::move(payload)});
  }
  void post_recv(int peer, size_t capacity) override { recvs_.push_back({peer, capacity}); }

  void wait_recv(Payload& into) override {
    Send* s = unsent_.empty() ? nullptr : &unsent_.front();
    round(s, &recvs_.front(), &into);
    recvs_.pop_front();
    if (s != nullptr) {
      done_.push_back(std::move(s->payload));
      unsent_.pop_front();
    }
  }

  void progress() override {}

  void reclaim(std::vector<Payload>& free, bool wait) override {
    // Without receives left (point to point, or the end of a ring) sends go on their own.
    while ((wait || recvs_.empty()) && !unsent_.empty()) {
      round(&unsent_.front(), nullptr, nullptr);
      done_.push_back(std::move(unsent_.front().payload));
      unsent_.pop_front();
    }
    for (Payload& p : done_) free.push_back(std::move(p));
    done_.clear();
  }

 private:
  struct Send {
    int peer;
    Payload payload;
  };
  struct Recv {
    int peer;
    size_t capacity;
  };

  // One round: the sizes, then the payloads, of at most one send and one receive.
  void round(Send* s, const Recv* r, Payload* into) {
    uint64_t sent_size = s != nullptr ? s->payload.size : 0, got_size = 0;
    if (s != nullptr) {
      HYCC_CUDA_CHECK(
          cudaMemcpyAsync(sizes_, &sent_size, sizeof(uint64_t), cudaMemcpyHostToDevice, stream_));
    }
    check_nccl(api_.group_start(), "ncclGroupStart");
    if (s != nullptr)
      check_nccl(api_.send(sizes_, 8, ncclUint8, s->peer, comm_, stream_), "ncclSend");
    if (r != nullptr) {
      check_nccl(api_.recv(sizes_ + 1, 8, ncclUint8, r->peer, comm_, stream_), "ncclRecv");
    }
    check_nccl(api_.group_end(), "ncclGroupEnd");
    if (r != nullptr) {
      HYCC_CUDA_CHECK(cudaMemcpyAsync(&got_size, sizes_ + 1, sizeof(uint64_t),
                                      cudaMemcpyDeviceToHost, stream_));
    }
    HYCC_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (r != nullptr && got_size > r->capacity) {
      throw CommError(tagged("coll:nccl", "rank ", r->peer, " announced a payload of ", got_size,
                             " bytes, more than the ", r->capacity, " expected"));
    }
    check_nccl(api_.group_start(), "ncclGroupStart");
    if (s != nullptr && sent_size != 0) {
      check_nccl(api_.send(s->payload.data(), sent_size, ncclUint8, s->peer, comm_, stream_),
                 "ncclSend");
    }
    if (r != nullptr && got_size != 0) {
      check_nccl(api_.recv(into->data(), got_size, ncclUint8, r->peer, comm_, stream_), "ncclRecv");
    }
    check_nccl(api_.group_end(), "ncclGroupEnd");
    HYCC_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (into != nullptr) into->size = got_size;
  }

  const NcclApi& api_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  uint64_t* sizes_ = nullptr;  // device: [0] the size sent, [1] the size received
  std::deque<Send> unsent_;
  std::deque<Recv> recvs_;
  std::vector<Payload> done_;
};

}  // namespace

bool nccl_usable(const Communicator& comm) {
  NcclState& state = state_of(comm.mpi());
  if (state.usable < 0) {
    const uint64_t mine[2] = {nccl_api().missing.empty() && device_count() > 0 ? 1u : 0u,
                              gpu_identity()};
    std::vector<uint64_t> all(2 * static_cast<size_t>(comm.size()));
    HYCC_CHECK_MPI(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm.mpi()));
    bool usable = true;
    for (size_t i = 0; i < all.size(); i += 2) {
      usable = usable && all[i] == 1;
      for (size_t j = 0; j < i; j += 2) usable = usable && all[i + 1] != all[j + 1];
    }
    state.usable = usable ? 1 : 0;
  }
  return state.usable == 1;
}

std::unique_ptr<Transport> make_nccl_transport(const Communicator& comm, DeviceStream stream,
                                               bool create) {
  NcclState& state = state_of(comm.mpi());
  if (state.comm == nullptr) {
    if (!create) {
      throw InvalidArgument(tagged("coll:nccl", "the communicator has no NCCL communicator yet: ",
                                   "run a device collective with the NCCL transport on it first"));
    }
    // Every rank must be able to take part before any of them enters ncclCommInitRank.
    int ok = nccl_api().missing.empty() ? 1 : 0;
    HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm.mpi()));
    if (!ok) {
      throw Unavailable(tagged("coll:nccl", nccl_api().missing.empty()
                                                ? std::string("another rank cannot load NCCL")
                                                : nccl_api().missing));
    }
    ncclUniqueId id{};
    if (comm.rank() == 0) check_nccl(nccl_api().get_unique_id(&id), "ncclGetUniqueId");
    HYCC_CHECK_MPI(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, comm.mpi()));
    check_nccl(nccl_api().comm_init_rank(&state.comm, comm.size(), id, comm.rank()),
               "ncclCommInitRank");
  }
  return std::make_unique<NcclTransport>(state.comm, stream);
}

}  // namespace hycc::coll::device
