// The MPI stand-in for NCCL (nccl_link.h): the host emulation's NCCL transport runs on it, so
// that the NCCL transport's protocol (sizes, groups, marks, buffer lifetimes) runs in the CPU
// tests with several ranks. It is stricter than NCCL where that finds more bugs: every send is
// synchronous (MPI_Issend), and the groups of a rank progress only one at a time, in order, and
// only while the host calls into the link. A receive checks that the message has exactly the
// size it names (NCCL would not notice a mismatch).
#include <deque>
#include <vector>

#include "comm/nccl_link.h"
#include "comm/tags.h"

namespace hycc::comm {
namespace {

class MpiNcclLink final : public NcclLink {
 public:
  explicit MpiNcclLink(MPI_Comm comm) : comm_(comm), tag_(reserved_tag(comm)) {}
  ~MpiNcclLink() override { MpiNcclLink::abandon(); }

  const char* name() const override { return "NCCL stand-in (MPI)"; }

  void group(const LinkTransfer& send, const LinkTransfer& recv) override {
    queue_.push_back({send, recv, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, false});
    ++queued_;
  }

  uint64_t mark() override {
    groups_at_mark_.push_back(queued_);
    return groups_at_mark_.size();
  }

  bool reached(uint64_t mark) override {
    progress();
    return completed_ >= groups_at_mark_.at(mark - 1);
  }

  void wait(uint64_t mark) override {
    while (!reached(mark)) {
    }
  }

  void order_compute_after(uint64_t mark) override { wait(mark); }

  void progress() override {
    while (!queue_.empty()) {
      Group& g = queue_.front();
      if (!g.started) start(g);
      int done = 0;
      MPI_Status status[2];
      HYCC_CHECK_MPI(MPI_Testall(2, g.requests, &done, status));
      if (!done) return;
      if (g.recv.peer >= 0 && g.recv.bytes != 0) {
        int got = 0;
        HYCC_CHECK_MPI(MPI_Get_count(&status[1], MPI_BYTE, &got));
        if (static_cast<size_t>(got) != g.recv.bytes) {
          queue_.pop_front();
          throw CommError(tagged("coll:nccl-standin", "rank ", g.recv.peer, " sent ", got,
                                 " bytes where ", g.recv.bytes, " were expected"));
        }
      }
      queue_.pop_front();
      ++completed_;
    }
  }

  bool needs_host_progress() const override { return true; }

  void abandon() override {
    if (!queue_.empty() && queue_.front().started) {
      for (MPI_Request& r : queue_.front().requests) {
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
      }
    }
    queue_.clear();
  }

 private:
  struct Group {
    LinkTransfer send, recv;
    MPI_Request requests[2];
    bool started;
  };

  void start(Group& g) {
    if (g.send.peer >= 0 && g.send.bytes != 0) {
      HYCC_CHECK_MPI(MPI_Issend(g.send.data, mpi_count(g.send.bytes, "payload bytes"), MPI_BYTE,
                                g.send.peer, tag_, comm_, &g.requests[0]));
    }
    if (g.recv.peer >= 0 && g.recv.bytes != 0) {
      HYCC_CHECK_MPI(MPI_Irecv(g.recv.data, mpi_count(g.recv.bytes, "payload bytes"), MPI_BYTE,
                               g.recv.peer, tag_, comm_, &g.requests[1]));
    }
    g.started = true;
  }

  MPI_Comm comm_;
  int tag_;
  std::deque<Group> queue_;               // queued, not completed; only the front one is started
  uint64_t queued_ = 0;                   // groups queued so far
  uint64_t completed_ = 0;                // groups completed so far (in order)
  std::vector<uint64_t> groups_at_mark_;  // mark m is passed when completed_ >= [m - 1]
};

}  // namespace

std::unique_ptr<NcclLink> make_mpi_nccl_link(MPI_Comm comm) {
  return std::make_unique<MpiNcclLink>(comm);
}

}  // namespace hycc::comm
