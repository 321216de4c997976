// libnccl.so.2 of the CUDA emulator: NCCL's point-to-point calls between the processes of one
// machine, so that hycc's NCCL transport (src/coll/device/cuda/nccl_link.cc, which loads
// libnccl.so.2 at run time) runs with several ranks in the emulated build, its CUDA side
// included (the link stream, events, cudaStreamWaitEvent).
//
// A communicator is a full mesh of Unix stream sockets in the abstract namespace (no files),
// named by the unique id; a group of sends and receives becomes one operation on its stream, as
// NCCL's kernel is: it moves the bytes when the stream reaches it, all transfers of the group
// progressing together (poll), each message preceded by its size. A receive whose size differs
// from the matching send's fails the stream (NCCL requires equal sizes), as do socket errors.
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
#include <random>
#include <string>
#include <thread>
#include <vector>

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
    }
  }
}

ncclResult_t submit(std::vector<Transfer> transfers) {
  if (transfers.empty()) return ncclSuccess;
  const cudaStream_t stream = transfers.front().stream;
  for (const Transfer& t : transfers) {
    if (t.stream != stream) return ncclInvalidUsage;  // hycc queues a group on one stream
  }
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
