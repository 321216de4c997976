// Staging over a group's transport (transport.h): device payloads copied to host memory and
// carried by the host transport of a communicator that is not MPI's (Group::host_transport, a
// torch process group's gloo wire). What staged MPI is to an MPI communicator: a send copies the
// payload to a host buffer (waiting for the copy: the payload was just encoded) and hands that
// to the host transport, so the device payload is free at once; a receive completes on the host
// transport and its bytes are copied into the caller's device payload, the host copy kept with
// the payload so that forwarding it unchanged (allgather, broadcast) copies nothing back.
#include <deque>
#include <utility>

#include "comm/group.h"
#include "comm/transport.h"

namespace hycc::comm {
namespace {

class GroupStagedTransport final : public Transport {
 public:
  GroupStagedTransport(DeviceOps& ops, const Communicator& comm, int tag)
      : ops_(ops), host_(device::host_ops()), inner_(host_transport(comm, host_, tag)) {}

  const char* name() const override { return "staged"; }

  void post_send(int peer, Payload&& payload, uint64_t round) override {
    Payload host;
    if (payload.staged.data() != nullptr && payload.staged_bytes == payload.size) {
      host.memory = std::move(payload.staged);  // forwarded as it arrived: no copy back
      payload.staged_bytes = 0;
      ops_.synchronize();  // what the caller queued on the payload (a checksum trailer) is done
    } else {
      host.memory = allocate_payload(host_, payload.size);
      ops_.copy_to_host(host.data(), payload.data(), payload.size);
      ops_.synchronize();
    }
    host.size = payload.size;
    inner_->post_send(peer, std::move(host), round);
    done_.push_back(std::move(payload));
  }

  void post_recv(int peer, size_t capacity, uint64_t round) override {
    capacities_.push_back(capacity);
    inner_->post_recv(peer, capacity, round);
  }

  void receives_announced() override { inner_->receives_announced(); }

  void wait_recv(Payload& into) override {
    Payload host;
    host.memory = allocate_payload(host_, capacities_.front());
    capacities_.pop_front();
    inner_->wait_recv(host);
    ops_.copy_to_device(into.data(), host.data(), host.size);
    ops_.synchronize();
    into.size = host.size;
    into.rewritten();
    into.staged = std::move(host.memory);
    into.staged_bytes = into.size;
  }

  bool recv_arrived() override { return inner_->recv_arrived(); }
  void progress() override { inner_->progress(); }

  void reclaim(std::vector<Payload>& free, bool wait) override {
    std::vector<Payload> host;  // the host copies: dropped
    inner_->reclaim(host, wait);
    for (Payload& p : done_) free.push_back(std::move(p));
    done_.clear();
  }

 private:
  DeviceOps& ops_;
  DeviceOps& host_;  // this thread's host memory, for the host copies
  std::unique_ptr<Transport> inner_;
  std::deque<size_t> capacities_;  // of the receives announced and not yet completed
  std::vector<Payload> done_;      // device payloads already copied to the host
};

}  // namespace

std::unique_ptr<Transport> make_staged_transport(DeviceOps& ops, const Communicator& comm,
                                                 int tag) {
  if (comm.is_mpi()) return make_staged_mpi_transport(ops, comm.mpi(), tag);
  return std::make_unique<GroupStagedTransport>(ops, comm, tag);
}

}  // namespace hycc::comm
