// The NCCL transport (transport.h) over an NcclLink (nccl_link.h): NCCL itself, or its MPI
// stand-in with the host emulation.
//
// NCCL needs the exact size of a message at the receiver. Where the codec fixes it (none, the
// casts: PayloadSizes::kKnown) the receive's capacity is the size and nothing else travels.
// Otherwise the receiver knows only an upper bound, so every payload's size goes first as an 8-byte
// message on the communicator's host transport (MPI, or a group's: comm/group.h), sent as soon as
// the payload is posted and announced with the receive; the payload follows through NCCL. Sizes
// from all peers complete in the order their receives were announced, the order in which the groups
// take them.
//
// Payloads move in groups, one per round (transport.h): a rank's group of round g holds its send
// of round g and its receive of round g, either of which may be absent. Groups are queued on the
// link stream in increasing rounds, so every message is in the group of the same round at both
// ends and the groups of every rank complete in round order: no wait can be part of a cycle.
// The group of round g is queued once it is known what it holds (a send of a later round is
// posted, or the caller waits for a receive of round >= g, for the send side; a receive of a
// later round is announced, or the caller announces no more, for the receive side) and the size of
// its receive has arrived: as soon as possible when a payload is posted or announced and when the
// caller lets transfers progress; by waiting for sizes only when the caller waits for a receive.
// The host never waits for a group except to reuse memory: a received payload is handed over with
// the compute stream ordered after its group, and a sent one is reclaimed once its group's mark has
// passed. So the encoding of segment k + 1 (compute stream) overlaps the group carrying segment k
// (link stream).
//
// The MPI stand-in (synchronous sends, groups strictly in order) runs every device collective
// and send/recv with 1 to 4 ranks in the CPU tests; its first version, which paired the oldest
// unsent send with the receive waited for, deadlocked there (allreduce of one element on two
// ranks: a rank with nothing to send in step 0 waited for a size its peer would send only after
// receiving the payload held back with that very receive).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "comm/group.h"
#include "comm/nccl_link.h"
#include "comm/tags.h"
#include "comm/transport.h"

namespace hycc::comm {
namespace {

class NcclTransport final : public Transport {
 public:
  NcclTransport(DeviceOps& ops, std::unique_ptr<NcclLink> link, const Communicator& comm, int tag,
                PayloadSizes sizes)
      : ops_(ops), link_(std::move(link)), host_(device::host_ops()) {
    if (sizes == PayloadSizes::kAnnounced) sizes_ = host_transport(comm, host_, tag);
  }

  // Only reached with transfers pending when an exception left the algorithm: the link first,
  // then the sizes' transport (its own destructor settles its messages).
  ~NcclTransport() override {
    if (!finished_) link_->abandon();
  }

  const char* name() const override { return "NCCL"; }

  void post_send(int peer, Payload&& payload, uint64_t round) override {
    if (sizes_ == nullptr) {  // the receiver knows it
      unsent_.push_back({peer, std::move(payload), round, 0});
      queue_groups(false);
      return;
    }
    Payload size;
    size.memory = allocate_payload(host_, sizeof(uint64_t));
    size.size = sizeof(uint64_t);
    const uint64_t bytes = payload.size;
    std::memcpy(size.data(), &bytes, sizeof bytes);
    sizes_->post_send(peer, std::move(size), round);
    unsent_.push_back({peer, std::move(payload), round, 0});
    queue_groups(false);
  }

  void post_recv(int peer, size_t capacity, uint64_t round) override {
    Recv& r = recvs_.emplace_back();
    r.peer = peer;
    r.capacity = capacity;
    r.round = round;
    if (sizes_ == nullptr) {
      r.size = capacity;
      r.size_known = true;
    } else {
      sizes_->post_recv(peer, sizeof(uint64_t), round);
    }
    queue_groups(false);
  }

  void receives_announced() override {
    receives_announced_ = true;
    queue_groups(false);
  }

  void wait_recv(Payload& into) override {
    Recv& r = recvs_.front();
    // Every send of rounds <= r.round has been posted (transport.h).
    sends_posted_through_ = std::max(sends_posted_through_, r.round + 1);
    while (in_groups_ == 0) {
      queue_groups(true);
      if (in_groups_ == 0) link_->progress();  // only while waiting for r's size
    }
    link_->order_compute_after(r.mark);
    std::swap(into, r.payload);
    into.size = r.size;
    recvs_.pop_front();
    --in_groups_;
  }

  void progress() override {
    link_->progress();
    queue_groups(false);
  }

  void finish(std::vector<Payload>& free) override {
    queue_all();
    // The call's stream waits for the link stream: every payload's last use is ordered before
    // what the caller queues next, so their memory is freed in stream order.
    link_->order_compute_after(link_->mark());
    for (Send& s : in_flight_) free.push_back(std::move(s.payload));
    in_flight_.clear();
    if (sizes_ != nullptr) {
      std::vector<Payload> sizes;
      sizes_->reclaim(sizes, true);
    }
    finished_ = true;
  }

  void reclaim(std::vector<Payload>& free, bool wait) override {
    if (wait) queue_all();
    while (!in_flight_.empty() && (wait ? (link_->wait(in_flight_.front().mark), true)
                                        : link_->reached(in_flight_.front().mark))) {
      free.push_back(std::move(in_flight_.front().payload));
      in_flight_.pop_front();
    }
    if (sizes_ != nullptr) {
      std::vector<Payload> sizes;  // the size messages sent: dropped
      sizes_->reclaim(sizes, wait);
    }
  }

 private:
  struct Send {
    int peer;
    Payload payload;
    uint64_t round;
    uint64_t mark;  // of its group, once queued
  };
  struct Recv {
    int peer = 0;
    size_t capacity = 0;
    uint64_t round = 0;
    uint64_t size = 0;  // from the size message
    bool size_known = false;
    Payload payload;    // where its group receives it
    uint64_t mark = 0;  // of its group, once queued
  };

  // Queues every group, the call's last send and receive posted.
  void queue_all() {
    last_posted_ = true;
    while (!unsent_.empty() || in_groups_ < recvs_.size()) {
      queue_groups(true);
      if (!unsent_.empty() || in_groups_ < recvs_.size()) link_->progress();
    }
  }

  // Whether the size of `r`, the oldest receive whose size has not been taken, has arrived;
  // takes it if so. With `wait`, waits for it: polling while the link needs the host to progress
  // (the stand-in), otherwise in the host transport (which may not be able to tell arrival).
  bool size_arrived(Recv& r, bool wait) {
    if (r.size_known) return true;
    if (!sizes_->recv_arrived()) {
      if (!wait) return false;
      if (link_->needs_host_progress()) {
        while (!sizes_->recv_arrived()) link_->progress();
      }
    }
    Payload size;
    size.memory = allocate_payload(host_, sizeof(uint64_t));
    sizes_->wait_recv(size);
    if (size.size != sizeof(uint64_t)) {
      throw CommError(
          tagged("coll:nccl", "rank ", r.peer, " sent a size message of ", size.size, " bytes"));
    }
    std::memcpy(&r.size, size.data(), sizeof r.size);
    r.size_known = true;
    return true;
  }

  // Queues the groups whose content is known, in round order; stops at the first one that is
  // not, or whose receive size has not arrived (`wait_size`: waits for it instead).
  void queue_groups(bool wait_size) {
    for (;;) {
      Send* s = unsent_.empty() ? nullptr : &unsent_.front();
      Recv* r = in_groups_ < recvs_.size() ? &recvs_[in_groups_] : nullptr;
      if (s == nullptr && r == nullptr) return;
      const uint64_t g =
          std::min(s != nullptr ? s->round : UINT64_MAX, r != nullptr ? r->round : UINT64_MAX);
      if (s != nullptr && s->round != g) s = nullptr;
      if (r != nullptr && r->round != g) r = nullptr;
      // Whether the side that is missing is known to be absent from round g.
      const bool no_send =
          s != nullptr || !unsent_.empty() || g < sends_posted_through_ || last_posted_;
      const bool no_recv =
          r != nullptr || in_groups_ < recvs_.size() || receives_announced_ || last_posted_;
      if (!no_send || !no_recv) return;
      if (r != nullptr && !size_arrived(*r, wait_size)) return;
      queue_group(s, r);
    }
  }

  void queue_group(Send* s, Recv* r) {
    LinkTransfer send, recv;
    if (s != nullptr) send = {s->peer, s->payload.data(), s->payload.size};
    if (r != nullptr) {
      if (r->size > r->capacity) {
        throw CommError(tagged("coll:nccl", "rank ", r->peer, " announced a payload of ", r->size,
                               " bytes, more than the ", r->capacity, " expected"));
      }
      r->payload.memory = ops_.allocate(r->capacity);
      recv = {r->peer, r->payload.data(), static_cast<size_t>(r->size)};
    }
    link_->group(send, recv);
    const uint64_t mark = link_->mark();
    if (r != nullptr) {
      r->mark = mark;
      ++in_groups_;
    }
    if (s != nullptr) {
      s->mark = mark;
      in_flight_.push_back(std::move(*s));
      unsent_.pop_front();
    }
  }

  DeviceOps& ops_;
  std::unique_ptr<NcclLink> link_;
  DeviceOps& host_;                   // this thread's host memory, for the size messages
  std::unique_ptr<Transport> sizes_;  // the payloads' sizes; null when the receivers know them
  std::deque<Recv> recvs_;            // announced, not yet waited for; [0, in_groups_) queued
  size_t in_groups_ = 0;
  std::deque<Send> unsent_;
  std::deque<Send> in_flight_;
  uint64_t sends_posted_through_ = 0;  // every send of a round below this has been posted
  bool receives_announced_ = false;    // no receive will be announced any more
  bool last_posted_ = false;           // no send or receive will be posted any more
  bool finished_ = false;              // finish(): nothing is left for the destructor to settle
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(const Communicator& comm, DeviceOps& ops,
                                               const DeviceAlgorithmOptions& options, int tag,
                                               bool create, PayloadSizes sizes) {
  if (options.backend == DeviceBackend::kHostEmulation && !comm.is_mpi()) {
    throw InvalidArgument(tagged("coll:nccl", "the host emulation's NCCL stand-in runs on MPI ",
                                 "communicators only, not on ", comm.group()->describe(),
                                 ": use DeviceTransport::kStagedMpi (staged over the group)"));
  }
  std::unique_ptr<NcclLink> link = options.backend == DeviceBackend::kHostEmulation
                                       ? make_mpi_nccl_link(comm.mpi())
                                       : make_cuda_nccl_link(comm, options.stream, create);
  return std::make_unique<NcclTransport>(ops, std::move(link), comm, tag, sizes);
}

}  // namespace hycc::comm
