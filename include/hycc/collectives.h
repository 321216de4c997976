// Compressed collective operations over a Communicator. One function per operation, each taking
// an options struct (codec, algorithm, threshold, segment size, tag). docs/algorithms.md gives
// for every algorithm its steps, bytes on the wire, compressions per rank and error growth.
//
// Common rules:
// - Buffers are host memory of dtype f32, bf16 or f16, aligned to their element size; send and
//   receive dtypes must match. Reductions accumulate in float32 and round once into the output
//   dtype (partial sums travel between ranks as float32).
// - In place: allreduce and alltoall take the same pointer as send and receive data; allgather
//   takes a send view equal to this rank's block of the receive buffer; reduce_scatter takes a
//   receive view equal to this rank's chunk of the send buffer (and writes nothing else of it).
//   Any other overlap is an InvalidArgument.
// - Any element count (0 included) and any number of ranks; with one rank the result is the
//   input (copied if out of place), nothing is compressed and nothing is sent.
// - Every rank that receives a result holds a bit-identical copy: compressed bytes are produced
//   once per reduced chunk and forwarded as they are, and the rank that produced them replaces
//   its own copy by their decoded value, so replicas never drift apart. With a lossy codec this
//   includes the root of broadcast and this rank's own block of allgather.
// - Messages whose uncompressed size is below options.threshold_bytes go to the native MPI call
//   uncompressed (16-bit sums are widened to float32 for MPI, which has no bf16/f16 type). The
//   size is the whole tensor: the send buffer of allreduce, reduce_scatter and alltoall, the
//   receive buffer of allgather, the buffer of broadcast and send.
// - All ranks must pass matching arguments (count, dtype, codec spec, op, root, algorithm,
//   threshold, segment size, tag). Before one of hycc's own algorithms runs, one
//   MPI_Allreduce(MIN) of a signature of up to 10 values (21 int64: each value, its negation,
//   and a local-error flag) checks this, so a mismatch throws CommError on every rank instead of
//   a hang or a crash. A rank whose own arguments are invalid (a buffer of the wrong size, a bad
//   root) throws InvalidArgument and the other ranks throw CommError naming it. A call handed
//   to the native MPI call (below the threshold, codec none) skips that check by default, so
//   that it costs no more than MPI itself: there, as for any MPI call, matching arguments are
//   the caller's duty (options.check_arguments selects; see ArgumentCheck).
// - hycc's messages use tags in the upper half of [0, MPI_TAG_UB]; applications sharing the
//   communicator must keep their own tags below MPI_TAG_UB / 2, or pass comm.dup().
// - A malformed stream received from a peer is reported as CorruptStream on the rank that
//   decoded it, after the operation's message pattern has completed (no rank is left waiting).
// - Blocking: each call returns when this rank's part is complete. Concurrent calls (with
//   MPI_THREAD_MULTIPLE) need distinct communicators: hycc calls MPI collectives too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hycc/codec.h"
#include "hycc/comm.h"
#include "hycc/dtype.h"

namespace hycc {

class PolicyEngine;     // hycc/policy_engine.h
struct PolicyDecision;  // hycc/policy.h

// The operations, as policies, statistics and tags name them (kSendRecv: send and recv).
enum class Operation : uint8_t {
  kAllreduce = 0,
  kReduceScatter = 1,
  kAllgather = 2,
  kBroadcast = 3,
  kAlltoall = 4,
  kSendRecv = 5,
};
const char* operation_name(Operation op);

enum class ReduceOp : uint8_t {
  kSum = 0,
  kAverage = 1,  // sum / size, computed in float32
};

// Which algorithm runs an operation. kAuto and kNative apply to every collective; the others
// each apply to the operations named, anything else is an InvalidArgument.
enum class Algorithm : uint8_t {
  kAuto = 0,               // chosen by message size and codec (see docs/algorithms.md)
  kNative = 1,             // the MPI call, uncompressed
  kRing = 2,               // allreduce (ring reduce-scatter + ring allgather), reduce_scatter,
                           // allgather
  kRecursiveDoubling = 3,  // allreduce: log2(p) exchanges of the whole message (small messages)
  kCompressOnce = 4,       // allreduce: compress once, allgather the streams, reduce locally
  kChain = 5,              // broadcast: segments pipelined along root, root+1, ...
  kPairwise = 6,           // alltoall: p-1 steps, step s sends to rank+s, receives from rank-s
  // allreduce, reduce_scatter, allgather, broadcast: uncompressed inside each node, compressed
  // between nodes (one ring or chain per local rank); the flat form where the topology has 1
  // node, 1 rank per node or nodes of unequal size (docs/algorithms.md, "two-level")
  kTwoLevel = 7,
};

// When the ranks check that their arguments match (the cross-rank agreement above).
enum class ArgumentCheck : uint8_t {
  kAuto = 0,    // before hycc's own algorithms; not before calls handed to native MPI
  kAlways = 1,  // before every call with more than one rank, native ones included
  kNever = 2,   // local checks only: a mismatch across ranks may hang or crash
};

// "auto", "always" or "never" as an ArgumentCheck; InvalidArgument naming `setting` (the option
// or variable the text came from) otherwise.
ArgumentCheck parse_argument_check(std::string_view text, std::string_view setting);

// What one call did on this rank (see CollectiveOptions::stats).
struct CollectiveStats {
  // The algorithm that ran; kNative for the MPI call. kAuto for point to point (one protocol)
  // and for calls with nothing to do (one rank, no elements).
  Algorithm algorithm = Algorithm::kAuto;
  bool compressed = false;   // streams of a codec other than none were sent
  size_t message_bytes = 0;  // uncompressed size of the tensor (what the threshold compares)
  // Uncompressed bytes of the streams this rank sent, and the bytes it sent (stream headers
  // included). For a native call, what MPI moved is not known: both are the message size.
  // Compress-once counts this rank's own streams once (MPI_Allgatherv forwards them).
  size_t raw_bytes = 0;
  size_t wire_bytes = 0;
  size_t streams = 0;        // streams sent
  double codec_seconds = 0;  // compressing and decoding on this rank
  double seconds = 0;        // the whole call on this rank
  // A call on device buffers, and the host's synchronizations with the device during it (stream,
  // event and device synchronizations, blocking copies, frees that wait; docs/gpu.md,
  // "Stream-ordered calls"). 0 for host calls.
  bool on_device = false;
  uint64_t host_syncs = 0;
  // Algorithm::kTwoLevel was asked for and the communicator's topology did not allow it (1 node,
  // 1 rank per node, nodes of unequal size): `algorithm` says what ran instead.
  bool topology_fallback = false;
  // A two-level call: bytes this rank handed to the native calls inside its node (counted
  // neither in raw_bytes nor in wire_bytes, which are the compressed steps between nodes).
  size_t intra_bytes = 0;
};

// The settings the collective algorithms take, on host and device buffers alike.
struct CommonOptions {
  CodecConfig codec;  // "none" by default
  // Pipelining segment (uncompressed bytes, >= 1): messages are cut into segments of this many
  // bytes of the caller's dtype (rounded down to a multiple of 256 elements when that leaves at
  // least 512), so that compressing segment k+1 overlaps the transfer of segment k.
  size_t segment_bytes = 1 << 20;
  uint64_t seed = 0;  // stochastic rounding seed (vary it per step), mixed with rank and segment
  // Selects a separate set of internal tags, in [0, max] as for send/recv.
  // send/recv take their tag as an argument instead.
  int tag = 0;
  // The cross-rank argument agreement (one small MPI_Allreduce before the data moves).
  ArgumentCheck check_arguments = ArgumentCheck::kAuto;
  // When set, each call overwrites *stats with what it did on this rank.
  CollectiveStats* stats = nullptr;
};

// How a host collective runs: the algorithm layer takes these and nothing else.
struct AlgorithmOptions : CommonOptions {
  Algorithm algorithm = Algorithm::kAuto;
  // Below this uncompressed size (bytes) the native MPI call runs, uncompressed, whatever the
  // algorithm (except that kNative always runs natively). 0 compresses every message.
  size_t threshold_bytes = 64 << 10;
};

// Who a call is, for a policy: the engine that decides its codec and the identity of the
// gradient tensor it carries. The public functions decide once with it and hand the algorithms
// only their options.
struct CallIdentity {
  // When set, the engine's policy chooses the codec and threshold for this call (replacing the
  // caller's), may run a gradient compressor, and records the call in its statistics
  // (hycc/policy_engine.h).
  PolicyEngine* policy = nullptr;
  // Stable id of the tensor for a gradient compressor the policy chooses (its error-feedback
  // state is kept per key); 0: derived from the receive buffer's address and element count
  // (reduce_scatter: the send buffer's), or key_buffer's and key_count when set (a caller that
  // hands hycc a copy of its buffer). A buffer-derived key's state is dropped once a call on
  // memory overlapping it keys another buffer (PolicyEngine::buffer_grad_key).
  uint64_t key = 0;
  const void* key_buffer = nullptr;
  size_t key_count = 0;
  // The tensors of a bucket, in order (GradTensor::pieces), for a gradient compressor the policy
  // chooses: PowerSGD compresses each matrix among them. Empty: one flat tensor. The caller's
  // memory, read during the call.
  std::span<const std::vector<size_t>> pieces;
  // The decision a caller that routes on the policy has already taken for this call
  // (PolicyEngine::decide on the same communicator, operation, message size and dtype: the MPI
  // drop-in, the torch backend): the call takes it instead of deciding again; an adaptive rule's
  // decision still picks its candidate (PolicyEngine::choose). Read during the call only.
  const PolicyDecision* decision = nullptr;
};

// The options of a host collective: how it runs, and who it is.
struct CollectiveOptions : AlgorithmOptions, CallIdentity {};

// Elements [offset, offset + count) of a tensor of `total` elements owned by `rank` of `size`
// in reduce_scatter: balanced, the first total % size ranks get one more element.
struct ChunkRange {
  size_t offset = 0;
  size_t count = 0;
};
ChunkRange chunk_range(size_t total, int size, int rank);

// recv = op over ranks of send. send.count == recv.count.
void allreduce(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
               const CollectiveOptions& options = {});

// recv = this rank's chunk (chunk_range(send.count, size, rank)) of op over ranks of send.
// recv.count == that chunk's count.
void reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                    const CollectiveOptions& options = {});

// recv = the concatenation of every rank's send, in rank order. recv.count == size * send.count.
void allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
               const CollectiveOptions& options = {});

// buffer on every rank = buffer of `root` (after compression: see the common rules).
void broadcast(const Communicator& comm, TensorView buffer, int root,
               const CollectiveOptions& options = {});

// Block j of send (send.count / size elements) goes to rank j, and block i of recv comes from
// rank i. send.count == recv.count, a multiple of size. This rank's own block is copied as it
// is (it never leaves the rank).
void alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
              const CollectiveOptions& options = {});

// Point to point, blocking. The receiver learns the dtype, count, codec and segmentation from
// the message itself, so recv needs no options. `tag` is in [0, max], max >= 2047 depending on
// MPI_TAG_UB (2^27 - 1 with Open MPI). dest/source must not be this rank. A receive whose dtype or
// count differs from the message throws CommError at the receiver after consuming the whole message
// (the sender completes normally, as with an MPI truncation error). The options of send are not
// checked against anything: the message carries them.
void send(const Communicator& comm, ConstTensorView data, int dest, int tag,
          const CollectiveOptions& options = {});

struct RecvStatus {
  int source = -1;           // the sender (useful with MPI_ANY_SOURCE)
  size_t wire_bytes = 0;     // bytes received: envelope + compressed streams
  double codec_seconds = 0;  // decoding
};
// `source` may be MPI_ANY_SOURCE; the tag must be a real tag (no MPI_ANY_TAG).
RecvStatus recv(const Communicator& comm, TensorView data, int source, int tag);

}  // namespace hycc
