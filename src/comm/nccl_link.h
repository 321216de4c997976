// What the NCCL transport (nccl_transport.cc) needs from NCCL: groups of one send and one
// receive queued in order on a stream of their own (the link stream), and marks on that stream.
// Two implementations:
// - NCCL itself (cuda/nccl_link.cc): ncclSend/ncclRecv in ncclGroupStart/End on the link stream
//   of the communicator, marks are CUDA events.
// - an MPI stand-in for the host emulation (mpi_nccl_link.cc), so that the transport's protocol
//   runs in the CPU tests with any number of ranks. It keeps NCCL's rules: the groups of a rank
//   run one after the other in the order they were queued; a group completes when its send and
//   its receive have both matched (the send is synchronous: it waits for the receiver); the
//   messages between two ranks match in order and carry no tag; a receive names its exact size.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hycc/comm.h"
#include "hycc/device.h"

namespace hycc::comm {

// One side of a group: `bytes` bytes of device memory at `data`, to or from rank `peer`;
// absent when peer < 0. A transfer of 0 bytes moves nothing (both sides know the size).
struct LinkTransfer {
  int peer = -1;
  void* data = nullptr;
  size_t bytes = 0;
};

class NcclLink {
 public:
  virtual ~NcclLink() = default;
  virtual const char* name() const = 0;

  // Queues a group holding `send` and `recv` on the link stream, after everything queued so far
  // on the link stream and on the compute stream (the call's stream).
  virtual void group(const LinkTransfer& send, const LinkTransfer& recv) = 0;
  // A mark after everything queued on the link stream so far; marks increase from 1.
  virtual uint64_t mark() = 0;
  // Whether the link stream has passed `mark` (without waiting).
  virtual bool reached(uint64_t mark) = 0;
  // Waits on the host until the link stream has passed `mark`.
  virtual void wait(uint64_t mark) = 0;
  // Work queued on the compute stream from now on runs after `mark` (on the device; the host
  // does not wait unless the device cannot order it).
  virtual void order_compute_after(uint64_t mark) = 0;
  // Lets queued groups progress while the host waits for something else (the stand-in needs
  // it; NCCL progresses on its own).
  virtual void progress() = 0;
  // Whether groups progress only while the host calls progress() (the stand-in): the host must
  // then poll rather than block while it waits for anything else.
  virtual bool needs_host_progress() const = 0;
  // After an error: stops what has not started and waits for what has, so that no memory is
  // freed under a transfer.
  virtual void abandon() = 0;
};

// NCCL's own collectives (nccl_native.cc runs the device calls below the threshold with them).
// kAllreduce and kReduceScatter sum float32 (`count` elements: the whole buffer; a reduce-scatter
// leaves each rank count / size of them); the others move bytes (`count` bytes: each rank's
// block of an allgather, the buffer of a broadcast, the block for each peer of an alltoall).
enum class NcclOp : uint8_t { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall };

// Queues `op` on `stream` on the NCCL communicator of `comm` (made first if `comm` has none,
// collective over `comm`, an MPI communicator or one over a group); returns without waiting. Every
// rank of `comm` makes the same call. Unavailable without CUDA or libnccl.so.2.
void queue_nccl_collective(const Communicator& comm, DeviceStream stream, NcclOp op,
                           const void* send, void* recv, size_t count, int root);

// The MPI stand-in on `comm` (host memory; its messages use one internal tag, hycc's lowest).
std::unique_ptr<NcclLink> make_mpi_nccl_link(MPI_Comm comm);

// NCCL on the NCCL communicator of `comm` (Unavailable without CUDA or libnccl.so.2), ordered
// after `compute`. `create`: make the NCCL communicator if `comm` has none yet (collective over
// `comm`); otherwise a missing one is an InvalidArgument.
std::unique_ptr<NcclLink> make_cuda_nccl_link(const Communicator& comm, DeviceStream compute,
                                              bool create);

}  // namespace hycc::comm
