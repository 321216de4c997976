// The ranks of a Communicator that is not an MPI communicator, and how hycc reaches them: a torch
// process group (src/torch) is one. The algorithms need of a group what they need of MPI: a
// transport for their payloads, a few small collectives of their own (the argument agreement,
// the calibration, the statistics), the uncompressed collectives of the native path, and a tag
// space. The free functions below take any Communicator and use MPI or the group.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <typeindex>
#include <unordered_map>

#include "comm/transport.h"
#include "hycc/collectives.h"
#include "hycc/comm.h"

namespace hycc::comm {

// How the small collectives combine their values across the ranks, element by element.
enum class Combine : uint8_t { kMin, kMax, kSum };

class Group {
 public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // What the group is, for messages: "torch process group 'tp' (gloo)".
  virtual std::string describe() const = 0;
  // The largest tag the group's transport carries (hycc's tags: comm/tags.h).
  virtual int64_t tag_upper_bound() const = 0;
  // A transport for one call's payloads in host memory, on internal tag `tag`.
  virtual std::unique_ptr<Transport> host_transport(DeviceOps& host, int tag) = 0;
  // Small collectives: every rank passes as many values; all end with the combination.
  virtual void combine(std::span<int64_t> values, Combine how) = 0;
  virtual void combine(std::span<double> values, Combine how) = 0;
  virtual void barrier() = 0;
  // The native path: the group's own uncompressed collectives, with the semantics of hycc's
  // (coll/native_mpi.cc); send and recv may be the same buffer where hycc allows it.
  virtual void allreduce(ConstTensorView send, TensorView recv, ReduceOp op) = 0;
  virtual void reduce_scatter(ConstTensorView send, TensorView recv, ReduceOp op) = 0;
  virtual void allgather(ConstTensorView send, TensorView recv) = 0;
  virtual void broadcast(TensorView buffer, int root) = 0;
  virtual void alltoall(ConstTensorView send, TensorView recv) = 0;

  // An object of type T kept with the group (as comm_attribute keeps one with an MPI
  // communicator): value-initialized on first use, destroyed with the group.
  template <typename T>
  T& attribute() {
    const std::lock_guard<std::mutex> lock(attributes_mutex_);
    std::shared_ptr<void>& slot = attributes_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_shared<T>();
    return *static_cast<T*>(slot.get());
  }

 private:
  std::mutex attributes_mutex_;
  std::unordered_map<std::type_index, std::shared_ptr<void>> attributes_;
};

// The small collectives on any communicator (MPI_Allreduce, MPI_Barrier on an MPI one).
void combine(const Communicator& comm, std::span<int64_t> values, Combine how);
void combine(const Communicator& comm, std::span<double> values, Combine how);
void barrier(const Communicator& comm);

// A transport on host memory for one call's payloads on internal tag `tag`: MPI
// (make_mpi_transport) or the group's.
std::unique_ptr<Transport> host_transport(const Communicator& comm, DeviceOps& host, int tag);

}  // namespace hycc::comm
