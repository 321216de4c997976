// Nonblocking collectives of libhycc_mpi.so: MPI_Iallreduce and MPI_Ireduce_scatter_block
// (MPI_SUM), MPI_Ibcast, MPI_Iallgather and MPI_Ialltoall on contiguous float data, and
// MPI_Ireduce_scatter and MPI_Iallgatherv with counts one apart (padded to equal blocks). A call
// whose policy rule is a codec that compresses, or error feedback around one (ef+CODEC, ef2+CODEC
// on the reductions: the residual is local, so it is applied and updated at initiation), and whose
// split form makes each rank receive fewer bytes than MPI's collective
// (coll/split_collectives.h), is compressed at initiation and handed to MPI's own nonblocking
// collective on the compressed bytes; the MPI_Wait / MPI_Test wrappers decode it when MPI
// completes it; an allreduce may take two stages instead, the second started by the progress
// thread (runtime/progress.h). A call whose rule compresses but no split form takes (codecs
// whose size depends on the data, the other gradient compressors and adaptive rules, which need
// messages between ranks before anything can be sent) runs as the blocking call on the
// communicator's worker where MPI gives MPI_THREAD_MULTIPLE (runtime/comm_worker.h), and is
// MPI's own call with the program's arguments otherwise. Nothing here blocks.
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>

#include "coll/split_collectives.h"
#include "common/buffer_pool.h"
#include "interpose/runtime/comm_worker.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/progress.h"
#include "interpose/runtime/requests.h"
#include "interpose/runtime/routing.h"
#include "interpose/runtime/state.h"
#include "policy/engine_calls.h"
#include "policy/policy_calls.h"

namespace hycc::interpose {
namespace {

// A started split collective and the program's buffer it decodes into (a host copy when that
// is device memory, stored back on completion).
struct Started {
  std::shared_ptr<coll::SplitCollective> split;
  std::shared_ptr<HostStaging> out;
  // After finish(), before out is stored: moves a padded result to the program's layout.
  std::function<void()> place = {};
};

// The codec a split call runs: the rule's, or the one error feedback wraps (ef+CODEC, ef2+CODEC;
// none for the other gradient compressors).
const CodecConfig& split_codec(const PolicyDecision& d) {
  return d.gradient ? d.gradient_codec : d.options.codec;
}

// True when a nonblocking allreduce of `count` floats under `d` takes the two-stage form
// (coll::start_allreduce_two_stage): a progress thread to drive it (runtime/progress.h),
// three ranks or more (at two, compress-once moves as many bytes in one exchange), a codec or
// ef2+CODEC (ef+CODEC's step is compress-once; d.compressor is the canonical spec), and slots
// smaller than their chunks.
bool takes_two_stage(const CommState& s, const PolicyDecision& d, size_t count) {
  if (!progress_available() || s.comm.size() < 3) return false;
  if (d.gradient && d.compressor.rfind("ef2+", 0) != 0) return false;
  return coll::two_stage_pays(split_codec(d), count, s.comm.size());
}

// Why a call whose rule compresses cannot take the split form, or nullptr when it can: a codec,
// or error feedback around one (not another gradient compressor, not an adaptive rule), whose
// fixed-size slots pay at this size.
const char* why_not_split(const CommState& s, const PolicyDecision& d, Operation op,
                          size_t slot_elems) {
  if (d.gradient && split_codec(d).id() == CodecId::kNone) {
    return "a low-rank, top-k or sign compressor needs messages from its peers before it sends";
  }
  if (adaptive(engine()->policy(), d)) return "an adaptive rule needs measured links to choose";
  if (!coll::slot_bytes(split_codec(d), slot_elems)) {
    return "the codec's stream size depends on the data";
  }
  if (op == Operation::kAllreduce && takes_two_stage(s, d, slot_elems)) return nullptr;
  if (!coll::split_pays(op, split_codec(d), slot_elems, s.comm.size())) {
    if (op == Operation::kAllreduce && !progress_available()) {
      return "compress-once would move more bytes than MPI's collective, and the two-stage "
             "form needs a progress thread, so MPI_THREAD_MULTIPLE (HYCC_PROGRESS=thread)";
    }
    return "its fixed-size slots would move more bytes than MPI's collective";
  }
  return nullptr;
}

// Runs start(feedback) for a split allreduce or reduce-scatter: with the error feedback of the
// gradient compressor the rule names (ef+CODEC, ef2+CODEC: the state of `key`, the program's
// buffer as the blocking calls key it, so that both share one residual), under the engine's
// gradient lock; with none for a codec rule.
template <typename Start>
auto with_feedback(const CommState& s, Operation op, const PolicyDecision& d,
                   const void* key_buffer, const float* input, size_t count, Start&& start) {
  if (!d.gradient) return start(nullptr);
  PolicyEngine& e = *engine();
  const std::shared_lock<std::shared_mutex> lock(policy::EngineCalls::grad_mutex(e));
  decltype(start(nullptr)) started;
  policy::EngineCalls::feedback_step(
      e, d.compressor,
      GradTensor(policy::EngineCalls::buffer_grad_key(e, key_buffer, count, count * sizeof(float),
                                                      s.comm, op)),
      ConstTensorView{DType::kF32, count, input}, s.comm.rank(), s.comm.size(),
      [&](std::span<float> residual, uint64_t seed, std::span<float> server, uint64_t server_seed) {
        const coll::Feedback feedback{residual, seed, server, server_seed};
        started = start(&feedback);
      });
  return started;
}

// Says once per call, communicator name, compressor and reason (rank 0 of the communicator)
// that a nonblocking call the rule would compress goes to MPI uncompressed (HYCC_LOG=off: never).
void warn_left_to_mpi(const CommState& s, const char* name, const PolicyDecision& d,
                      const char* why) {
  const EngineOptions& o = engine()->options();
  if (!o.log.warnings || s.comm.rank() != 0) return;
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(std::string(name) + "@" + s.name + "@" + d.compressor + "@" + why).second) {
      return;
    }
  }
  std::fprintf(o.log_file,
               "[hycc] warning: %s on %s (%d ranks) goes to MPI uncompressed although the rule "
               "says %s: %s (docs/dropin.md, \"Nonblocking collectives\")\n",
               name, s.name.empty() ? "an unnamed communicator" : s.name.c_str(), s.comm.size(),
               d.compressor.c_str(), why);
}

// The program's blocking call of the same arguments on another communicator (the worker's twin).
using Blocking = std::function<int(MPI_Comm)>;

// What every routed nonblocking collective does: MPI's own call when the call is not routed (s
// null) or its rule does not compress it; start(codec), tracked under MPI's request so that its
// completion decodes it and records the call, or driven by the progress thread when it has
// exchanges left; else, with the progress thread, the blocking call on the communicator's
// worker; else MPI's own call. `elems`: the message size the policy sees, in floats;
// `slot_elems`: the floats of one slot.
template <typename Native, typename Start>
int intercept_nonblocking(CommState* s, MPI_Comm comm, Operation op, size_t elems,
                          size_t slot_elems, const char* name, MPI_Request* request,
                          Native&& native, Start&& start, const Blocking& blocking) {
  if (s == nullptr) return native();
  PolicyEngine& e = *engine();
  const size_t bytes = elems * sizeof(float);
  const PolicyDecision d = e.decide(s->comm, op, bytes);
  if (!compresses(*s, e.policy(), d, bytes)) return run_native(*s, op, bytes, d, native);
  if (const char* why = why_not_split(*s, d, op, slot_elems)) {
    if (progress_available()) {
      const Inside guard;
      try {
        run_on_worker(*s, blocking, request);
      } catch (const std::exception& ex) {
        return fail(comm, name, ex.what());
      }
      return MPI_SUCCESS;
    }
    warn_left_to_mpi(*s, name, d, why);
    return run_native(*s, op, bytes, d, native);
  }
  const Inside guard;
  try {
    policy::EngineCalls::log_decision(e, s->comm, op, bytes, d);
    Started started = start(d);
    // The communicator by value: MPI lets a program free it before the request completes.
    auto store = [comm_copy = s->comm, op, d, started] {
      if (started.place) started.place();
      if (started.out != nullptr) started.out->store();
      policy::EngineCalls::record(*engine(), comm_copy, op, d, started.split->stats());
    };
    if (started.split->has_next()) {  // the progress thread runs finish() and store
      // With feedback, the next stage writes the server residual: under the gradient lock.
      drive(started.split, stage_shadow(*s), std::move(store), name, request,
            d.gradient ? &policy::EngineCalls::grad_mutex(e) : nullptr);
      return MPI_SUCCESS;
    }
    *request = *started.split->request();
    Pending p;
    p.call = name;
    p.complete = [started, store = std::move(store)] {
      started.split->finish();
      store();
    };
    track(*request, std::move(p));
  } catch (const std::exception& ex) {
    return fail(comm, name, ex.what());
  }
  return MPI_SUCCESS;
}

}  // namespace

// The vector variants with counts one apart (mpi/vector_collectives.cc): every block or
// chunk padded to the longest, the split collective on equal blocks into a scratch buffer, and the
// program's layout filled from it on completion. `native` is the program's own call (the int or
// the large-count form, mpi/large_count.cc).
int iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                MPI_Request* request, const char* name, const std::function<int()>& native) {
  Counts c;
  CommState* s =
      route_allgatherv(comm, sendbuf, sendcount, sendtype, recvcounts, displs, recvtype, &c);
  return intercept_nonblocking(
      s, comm, Operation::kAllgather, c.total, c.longest, name, request, native,
      [&](const PolicyDecision& d) {
        const size_t size = c.n.size(), rank = size_t(s->comm.rank());
        const Extent extent = extent_of(c, displs);
        auto out = std::make_shared<HostStaging>(static_cast<float*>(recvbuf) + extent.lo,
                                                 extent.floats() * sizeof(float), true);
        float* at = out->floats() - extent.lo;  // recvbuf as the host sees it
        PooledFloats block(c.longest);
        {
          HostStaging send(sendbuf == MPI_IN_PLACE ? at + displs[rank] : sendbuf,
                           c.n[rank] * sizeof(float));
          pad_block(send.floats(), c.n[rank], block.data(), c.longest);
        }
        auto all = std::make_shared<PooledFloats>(size * c.longest);
        Started started{coll::start_allgather(s->collective_shadow, block.data(), all->data(),
                                              c.longest, split_codec(d)),
                        out};
        started.place = [all, at, counts = c.n, longest = c.longest,
                         offsets = std::vector<int>(displs, displs + size)] {
          for (size_t r = 0; r < counts.size(); ++r) {
            std::copy_n(all->data() + r * longest, counts[r], at + offsets[r]);
          }
        };
        return started;
      },
      [=, counts = std::vector<int>(recvcounts, recvcounts + c.n.size()),
       offsets = std::vector<int>(displs, displs + c.n.size())](MPI_Comm twin) {
        return MPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(), offsets.data(),
                              recvtype, twin);
      });
}

int ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                    const char* name, const std::function<int()>& native) {
  Counts c;
  CommState* s = route_reduce_scatter(comm, recvcounts, datatype, op, &c);
  return intercept_nonblocking(
      s, comm, Operation::kReduceScatter, c.total, c.longest, name, request, native,
      [&](const PolicyDecision& d) {
        const size_t size = c.n.size(), mine = c.n[size_t(s->comm.rank())];
        const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        PooledFloats wide(size * c.longest);
        {
          HostStaging send(input, c.total * sizeof(float));
          pad_chunks(send.floats(), c, wide.data());
        }
        auto out = std::make_shared<HostStaging>(recvbuf, mine * sizeof(float), false);
        auto chunk = std::make_shared<PooledFloats>(c.longest);
        // The key of the blocking call's padded form, which shares this residual.
        Started started{
            with_feedback(*s, Operation::kReduceScatter, d, input, wide.data(), wide.size(),
                          [&](const coll::Feedback* feedback) {
                            return coll::start_reduce_scatter(s->collective_shadow, wide.data(),
                                                              chunk->data(), c.longest,
                                                              split_codec(d), feedback);
                          }),
            out};
        started.place = [chunk, out, mine] { std::copy_n(chunk->data(), mine, out->floats()); };
        return started;
      },
      [=, counts = std::vector<int>(recvcounts, recvcounts + c.n.size())](MPI_Comm twin) {
        return MPI_Reduce_scatter(sendbuf, recvbuf, counts.data(), datatype, op, twin);
      });
}

}  // namespace hycc::interpose

using hycc::Operation;
using hycc::interpose::CommState;
using hycc::interpose::HostStaging;
using hycc::interpose::Started;
namespace ip = hycc::interpose;
namespace coll = hycc::coll;

extern "C" {

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  CommState* s = op == MPI_SUM && count >= 0 ? ip::route(comm, datatype) : nullptr;
  const size_t n = size_t(count);
  return ip::intercept_nonblocking(
      s, comm, Operation::kAllreduce, n, n, "MPI_Iallreduce", request,
      [&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request); },
      [&](const hycc::PolicyDecision& d) {
        const bool in_place = sendbuf == MPI_IN_PLACE;
        auto out = std::make_shared<HostStaging>(recvbuf, n * sizeof(float), in_place);
        HostStaging send(in_place ? out->data() : sendbuf, n * sizeof(float));
        const bool two_stage = ip::takes_two_stage(*s, d, n);
        // Before the first exchange starts: collective over the communicator.
        const MPI_Comm second = two_stage ? ip::stage_shadow(*s) : MPI_COMM_NULL;
        return Started{ip::with_feedback(*s, Operation::kAllreduce, d, recvbuf, send.floats(), n,
                                         [&](const coll::Feedback* feedback) {
                                           const hycc::CodecConfig& codec = ip::split_codec(d);
                                           if (two_stage) {
                                             return coll::start_allreduce_two_stage(
                                                 s->collective_shadow, second, send.floats(),
                                                 out->floats(), n, codec, feedback);
                                           }
                                           return coll::start_allreduce(
                                               s->collective_shadow, send.floats(), out->floats(),
                                               n, codec, feedback);
                                         }),
                       out};
      },
      [=](MPI_Comm twin) { return MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, twin); });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request* request) {
  CommState* s = ip::route_bcast(comm, count, datatype, root);
  const size_t n = size_t(count);
  return ip::intercept_nonblocking(
      s, comm, Operation::kBroadcast, n, n, "MPI_Ibcast", request,
      [&] { return PMPI_Ibcast(buffer, count, datatype, root, comm, request); },
      [&](const hycc::PolicyDecision& d) {
        auto data =
            std::make_shared<HostStaging>(buffer, n * sizeof(float), s->comm.rank() == root);
        return Started{coll::start_broadcast(s->collective_shadow, data->floats(), n, root,
                                             ip::split_codec(d)),
                       data};
      },
      [=](MPI_Comm twin) { return MPI_Bcast(buffer, count, datatype, root, twin); });
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  CommState* s = ip::route_blocks(comm, sendbuf, sendcount, sendtype, recvcount, recvtype);
  const size_t n = size_t(recvcount);
  const size_t total = s == nullptr ? 0 : n * ip::comm_size(comm);
  return ip::intercept_nonblocking(
      s, comm, Operation::kAllgather, total, n, "MPI_Iallgather", request,
      [&] {
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request);
      },
      [&](const hycc::PolicyDecision& d) {
        const bool in_place = sendbuf == MPI_IN_PLACE;
        auto out = std::make_shared<HostStaging>(recvbuf, total * sizeof(float), in_place);
        HostStaging send(in_place ? out->floats() + n * size_t(s->comm.rank()) : sendbuf,
                         n * sizeof(float));
        return Started{coll::start_allgather(s->collective_shadow, send.floats(), out->floats(), n,
                                             ip::split_codec(d)),
                       out};
      },
      [=](MPI_Comm twin) {
        return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, twin);
      });
}

int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request* request) {
  CommState* s = op == MPI_SUM && recvcount >= 0 ? ip::route(comm, datatype) : nullptr;
  const size_t n = size_t(recvcount);
  const size_t total = s == nullptr ? 0 : n * ip::comm_size(comm);
  return ip::intercept_nonblocking(
      s, comm, Operation::kReduceScatter, total, n, "MPI_Ireduce_scatter_block", request,
      [&] {
        return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
      },
      [&](const hycc::PolicyDecision& d) {
        // In place, the input is all of recvbuf and the result goes to its start.
        const bool in_place = sendbuf == MPI_IN_PLACE;
        auto out = std::make_shared<HostStaging>(recvbuf, (in_place ? total : n) * sizeof(float),
                                                 in_place);
        HostStaging send(in_place ? out->data() : sendbuf, total * sizeof(float));
        return Started{ip::with_feedback(*s, Operation::kReduceScatter, d,
                                         in_place ? recvbuf : sendbuf, send.floats(), total,
                                         [&](const coll::Feedback* feedback) {
                                           return coll::start_reduce_scatter(
                                               s->collective_shadow, send.floats(), out->floats(),
                                               n, ip::split_codec(d), feedback);
                                         }),
                       out};
      },
      [=](MPI_Comm twin) {
        return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, twin);
      });
}

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  CommState* s = ip::route_blocks(comm, sendbuf, sendcount, sendtype, recvcount, recvtype);
  const size_t n = size_t(recvcount);
  const size_t total = s == nullptr ? 0 : n * ip::comm_size(comm);
  return ip::intercept_nonblocking(
      s, comm, Operation::kAlltoall, total, n, "MPI_Ialltoall", request,
      [&] {
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request);
      },
      [&](const hycc::PolicyDecision& d) {
        const bool in_place = sendbuf == MPI_IN_PLACE;
        auto out = std::make_shared<HostStaging>(recvbuf, total * sizeof(float), in_place);
        HostStaging send(in_place ? out->data() : sendbuf, total * sizeof(float));
        return Started{coll::start_alltoall(s->collective_shadow, send.floats(), out->floats(), n,
                                            ip::split_codec(d)),
                       out};
      },
      [=](MPI_Comm twin) {
        return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, twin);
      });
}

int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request* request) {
  return ip::iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                         request, "MPI_Iallgatherv", [&] {
                           return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                   recvcounts, displs, recvtype, comm, request);
                         });
}

int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return ip::ireduce_scatter(
      sendbuf, recvbuf, recvcounts, datatype, op, comm, request, "MPI_Ireduce_scatter", [&] {
        return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
      });
}

}  // extern "C"
