// libnccl.so.2 of the CUDA emulator: NCCL's point-to-point calls between the processes of one
// machine, so that hycc's NCCL transport (src/comm/cuda/nccl_link.cc, which loads
// libnccl.so.2 at run time) runs with several ranks in the emulated build, its CUDA side
// included (the link stream, events, cudaStreamWaitEvent).
//
// A communicator is a full mesh of Unix stream sockets in the abstract namespace (no files),
// named by the unique id; a group of sends and receives becomes one operation on its stream, as
// NCCL's kernel is: it moves the bytes when the stream reaches it, all transfers of the group
// progressing together (poll), each message preceded by its size. A receive whose size differs
// from the matching send's fails the stream (NCCL requires equal sizes), as do socket errors; a
// group in which a receive overwrites what a send reads is refused (a race on a GPU).
//
// The collectives hycc's native path uses (ncclAllReduce and ncclReduceScatter: float32 sums;
// ncclAllGather, ncclBroadcast: bytes) are one operation on their stream too: the blocks each
// rank needs move in one group, and sums add the ranks' values in rank order, so that every rank
// holds the same bits. Their buffers must be device memory, as NCCL's; other types and
// operations, and collectives inside ncclGroupStart/End, are refused (hycc makes none).
#include <nccl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime_internal.h"

struct ncclComm {
  int rank = 0;
  int size = 0;
  std::vector<int> peer_fd;  // socket to each other rank; for this rank: the send end
  int self_recv_fd = -1;     // this rank's loopback: the receive end
};

namespace {

struct Transfer {
  bool send;
  unsigned char* data;
  uint64_t bytes;
  int peer;
  ncclComm_t comm;
  cudaStream_t stream;
};

struct Group {
  int depth = 0;
  std::vector<Transfer> transfers;
};
thread_local Group group;

sockaddr_un address_of(const ncclUniqueId& id, int rank) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  // Abstract namespace: sun_path[0] == 0, then the name.
  std::snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "%.64s/%d", id.internal, rank);
  return a;
}

socklen_t length_of(const sockaddr_un& a) {
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(a.sun_path + 1));
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// One transfer of a running group: its 8-byte size header, then its bytes.
struct Progress {
  const Transfer* t;
  int fd;
  uint64_t header = 0;
  size_t done = 0;  // bytes of header + payload moved
  bool finished() const { return done == 8 + (t->send ? t->bytes : header); }
};

// Moves every transfer of the group; "" or what failed.
std::string run_group(const std::vector<Transfer>& transfers) {
  std::vector<Progress> work;
  for (const Transfer& t : transfers) {
    const bool loopback = t.peer == t.comm->rank;
    const int fd = loopback && !t.send ? t.comm->self_recv_fd : t.comm->peer_fd[t.peer];
    work.push_back({&t, fd, t.send ? t.bytes : 0, 0});
  }
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Progress*> waiting;
    for (Progress& p : work) {
      if (!p.t->send && p.done >= 8 && p.header != p.t->bytes) {
        return "ncclRecv of " + std::to_string(p.t->bytes) + " bytes from rank " +
               std::to_string(p.t->peer) + " matched a ncclSend of " + std::to_string(p.header) +
               " bytes (NCCL needs equal sizes)";
      }
      if (p.finished()) continue;
      fds.push_back({p.fd, static_cast<short>(p.t->send ? POLLOUT : POLLIN), 0});
      waiting.push_back(&p);
    }
    if (waiting.empty()) return "";
    if (::poll(fds.data(), fds.size(), 60000) <= 0) return "no progress for 60 s (a hang?)";
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Progress& p = *waiting[i];
      unsigned char* header = reinterpret_cast<unsigned char*>(&p.header);
      const bool in_header = p.done < 8;
      unsigned char* at = in_header ? header + p.done : p.t->data + (p.done - 8);
      const size_t left =
          in_header ? 8 - p.done : (p.t->send ? p.t->bytes : p.header) - (p.done - 8);
      const ssize_t n = p.t->send ? ::send(p.fd, at, left, MSG_DONTWAIT | MSG_NOSIGNAL)
                                  : ::recv(p.fd, at, left, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        return std::string(p.t->send ? "ncclSend to" : "ncclRecv from") + " rank " +
               std::to_string(p.t->peer) + ": the connection failed (" +
               (n == 0 ? "closed" : std::strerror(errno)) + ")";
      }
      if (n > 0) p.done += static_cast<size_t>(n);
      if (!p.t->send && p.header != 0 && p.finished() && cuda_emu::take_nccl_corruption()) {
        cuda_emu::alter_received(p.t->data, p.header);  // corrupt_nccl_receives (cuda_emu/host.h)
      }
    }
  }
}

// Whether a receive of the group writes memory a send of it reads (a race: the order in which
// NCCL moves a group's transfers is its own).
bool receive_overwrites_send(const std::vector<Transfer>& transfers) {
  for (const Transfer& r : transfers) {
    if (r.send || r.bytes == 0) continue;
    for (const Transfer& s : transfers) {
      if (s.send && s.bytes != 0 && r.data < s.data + s.bytes && s.data < r.data + r.bytes) {
        return true;
      }
    }
  }
  return false;
}

ncclResult_t submit(std::vector<Transfer> transfers) {
  if (transfers.empty()) return ncclSuccess;
  const cudaStream_t stream = transfers.front().stream;
  for (const Transfer& t : transfers) {
    if (t.stream != stream) return ncclInvalidUsage;  // hycc queues a group on one stream
  }
  if (receive_overwrites_send(transfers)) return ncclInvalidUsage;
  cuda_emu::enqueue(stream, [transfers = std::move(transfers)] {
    const std::string error = run_group(transfers);
    if (!error.empty()) cuda_emu::fail(("nccl: " + error).c_str());
  });
  return ncclSuccess;
}

ncclResult_t add(Transfer t) {
  if (t.comm == nullptr || t.peer < 0 || t.peer >= t.comm->size) return ncclInvalidArgument;
  if (t.bytes != 0 && t.data == nullptr) return ncclInvalidArgument;
  if (group.depth > 0) {
    group.transfers.push_back(t);
    return ncclSuccess;
  }
  return submit({t});
}

size_t type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclFloat32:
      return 4;
  }
  return 0;
}

// The checks NCCL makes of a collective's arguments (and the stand-in's limits).
ncclResult_t check_collective(ncclComm_t comm, std::initializer_list<const void*> buffers,
                              size_t bytes) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (group.depth > 0) return ncclInvalidUsage;  // not needed by hycc, not emulated
  for (const void* b : buffers) {
    if (bytes != 0 && !cuda_emu::describe_kernel_access(b).empty()) return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// Queues `transfers` on `stream`, then `combine` once they all have moved.
ncclResult_t queue_collective(cudaStream_t stream, std::vector<Transfer> transfers,
                              std::function<void()> combine) {
  cuda_emu::enqueue(stream, [transfers = std::move(transfers), combine = std::move(combine)] {
    const std::string error = run_group(transfers);
    if (!error.empty()) return cuda_emu::fail(("nccl: " + error).c_str());
    combine();
  });
  return ncclSuccess;
}

// The float32 sums of a reduction: out[i] = blocks[0][i] + blocks[1][i] + ... in rank order,
// where blocks are `ranks` consecutive blocks of n floats.
void sum_in_rank_order(const std::vector<float>& blocks, int ranks, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    float s = blocks[i];
    for (int j = 1; j < ranks; ++j) s += blocks[static_cast<size_t>(j) * n + i];
    out[i] = s;
  }
}

// A float32 sum of chunks of `n` floats: chunk j of every rank's `send` (of chunk 0 only,
// `whole`: an allreduce) goes to rank j, which adds what it receives in rank order into `out`.
ncclResult_t reduce(const void* send, void* out, size_t n, bool whole, ncclDataType_t type,
                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (type != ncclFloat32 || op != ncclSum) return ncclInvalidArgument;  // hycc's sums only
  const size_t p = comm == nullptr ? 0 : static_cast<size_t>(comm->size);
  if (ncclResult_t r = check_collective(comm, {send, out}, n); r != ncclSuccess) return r;
  if (n == 0) return ncclSuccess;
  auto blocks = std::make_shared<std::vector<float>>(p * n);
  std::vector<Transfer> transfers;
  const auto* from = static_cast<const unsigned char*>(send);
  for (size_t j = 0; j < p; ++j) {
    const int peer = static_cast<int>(j);
    auto* chunk = const_cast<unsigned char*>(from + (whole ? 0 : j * n * 4));
    transfers.push_back({true, chunk, n * 4, peer, comm, stream});
    transfers.push_back({false, reinterpret_cast<unsigned char*>(blocks->data() + j * n), n * 4,
                         peer, comm, stream});
  }
  return queue_collective(stream, std::move(transfers), [blocks, p, n, out] {
    sum_in_rank_order(*blocks, static_cast<int>(p), n, static_cast<float*>(out));
  });
}

}  // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::random_device entropy;
  *id = {};
  std::snprintf(id->internal, sizeof(id->internal), "hycc-nccl-emu-%d-%08x%08x", getpid(),
                entropy(), entropy());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  if (out == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  auto* c = new ncclComm;
  c->rank = rank;
  c->size = nranks;
  c->peer_fd.assign(static_cast<size_t>(nranks), -1);
  int loop[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, loop) != 0) return ncclSystemError;
  c->peer_fd[static_cast<size_t>(rank)] = loop[0];
  c->self_recv_fd = loop[1];
  // Every rank listens; it connects to the lower ranks and accepts the higher ones.
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  const sockaddr_un mine = address_of(id, rank);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<const sockaddr*>(&mine), length_of(mine)) != 0 ||
      ::listen(listener, nranks) != 0) {
    return ncclSystemError;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int p = 0; p < rank; ++p) {
    const sockaddr_un theirs = address_of(id, p);
    int fd = -1;
    for (;;) {
      fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&theirs), length_of(theirs)) == 0) break;
      ::close(fd);
      if (std::chrono::steady_clock::now() > deadline) return ncclSystemError;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!write_all(fd, &rank, sizeof(rank))) return ncclSystemError;
    c->peer_fd[static_cast<size_t>(p)] = fd;
  }
  for (int k = rank + 1; k < nranks; ++k) {
    const int fd = ::accept(listener, nullptr, nullptr);
    int peer = -1;
    if (fd < 0 || !read_all(fd, &peer, sizeof(peer)) || peer <= rank || peer >= nranks) {
      return ncclSystemError;
    }
    c->peer_fd[static_cast<size_t>(peer)] = fd;
  }
  ::close(listener);
  *out = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  cudaDeviceSynchronize();  // its queued groups use the sockets
  for (int fd : comm->peer_fd) ::close(fd);
  ::close(comm->self_recv_fd);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group.depth == 0) return ncclInvalidUsage;
  if (--group.depth > 0) return ncclSuccess;
  std::vector<Transfer> transfers;
  transfers.swap(group.transfers);
  return submit(std::move(transfers));
}

ncclResult_t ncclSend(const void* data, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  if (type != ncclUint8 && type != ncclInt8) return ncclInvalidArgument;  // bytes only here
  return add(
      {true, static_cast<unsigned char*>(const_cast<void*>(data)), count, peer, comm, stream});
}

ncclResult_t ncclRecv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  if (type != ncclUint8 && type != ncclInt8) return ncclInvalidArgument;
  return add({false, static_cast<unsigned char*>(data), count, peer, comm, stream});
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return reduce(sendbuff, recvbuff, count, true, datatype, op, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return reduce(sendbuff, recvbuff, recvcount, false, datatype, op, comm, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = sendcount * type_size(datatype);
  if (type_size(datatype) == 0) return ncclInvalidArgument;
  if (ncclResult_t r = check_collective(comm, {sendbuff, recvbuff}, bytes); r != ncclSuccess) {
    return r;
  }
  auto* out = static_cast<unsigned char*>(recvbuff);
  auto* own = out + static_cast<size_t>(comm->rank) * bytes;
  auto* in = static_cast<unsigned char*>(const_cast<void*>(sendbuff));
  std::vector<Transfer> transfers;
  for (int peer = 0; peer < comm->size && bytes != 0; ++peer) {
    if (peer == comm->rank) continue;
    transfers.push_back({true, in, bytes, peer, comm, stream});
    transfers.push_back(
        {false, out + static_cast<size_t>(peer) * bytes, bytes, peer, comm, stream});
  }
  return queue_collective(stream, std::move(transfers), [in, own, bytes] {
    if (in != own) std::memmove(own, in, bytes);
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  const size_t bytes = count * type_size(datatype);
  if (type_size(datatype) == 0) return ncclInvalidArgument;
  if (comm == nullptr || root < 0 || root >= comm->size) return ncclInvalidArgument;
  const bool is_root = comm->rank == root;
  if (ncclResult_t r = check_collective(comm, {is_root ? sendbuff : recvbuff, recvbuff}, bytes);
      r != ncclSuccess) {
    return r;
  }
  auto* in = static_cast<unsigned char*>(const_cast<void*>(sendbuff));
  auto* out = static_cast<unsigned char*>(recvbuff);
  std::vector<Transfer> transfers;
  for (int peer = 0; peer < comm->size && bytes != 0; ++peer) {
    if (is_root && peer != root) transfers.push_back({true, in, bytes, peer, comm, stream});
    if (!is_root && peer == root) transfers.push_back({false, out, bytes, peer, comm, stream});
  }
  return queue_collective(stream, std::move(transfers), [is_root, in, out, bytes] {
    if (is_root && in != out) std::memmove(out, in, bytes);
  });
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclSystemError:
      return "unhandled system error (emulated NCCL: sockets)";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    default:
      return "internal error";
  }
}

}  // extern "C"
