// Compressed collectives on device buffers. No CUDA header is needed to include this file: a
// CUDA stream is passed as DeviceStream (hycc/device.h). docs/gpu.md describes the design.
//
// Same semantics as the host calls of hycc/collectives.h, with these differences:
// - Views point to device memory (cudaMalloc) of the backend's device; the host emulation
//   (DeviceBackend::kHostEmulation) takes host memory instead and runs the same algorithm with
//   the CPU codecs, so that it can be tested without a GPU.
// - At or above options.threshold_bytes (0 by default: every call), the algorithms are the rings
//   of the host calls (allreduce: ring reduce-scatter + ring allgather; reduce_scatter;
//   allgather), the chain of broadcast and the pairwise exchange of alltoall, step for step: with
//   the same codec, segment size and seed the result is bit-identical to the host call with
//   Algorithm::kRing (kChain for broadcast, kPairwise for alltoall) and threshold_bytes = 0.
//   Codec "none" moves the raw bytes round the same ring. Below the threshold: the host's native
//   call on staged copies.
// - Segments travel as codec *payloads* (codec_device.h: the stream without its 48-byte header)
//   with a checksum of their own (DeviceCollectiveOptions::checksum). CorruptStream is thrown on
//   the receiving rank after the message pattern completed.
// - Calls are ordered on options.stream: they start after the work already queued on it and
//   return when the result is in place, or with options.stream_ordered once it is queued.
// - All ranks must pass matching arguments (count, dtype, codec, op, segment size, tag,
//   transport); one MPI_Allreduce checks this before anything moves, as for the host calls.
// Codecs: every codec. Those with device kernels (device_supports(): none, bf16, fp16, quant,
// eb, mpc, zfp) compress on the GPU; zstd takes the host path of codec_device.h for each
// payload: the same ring and the same bits, at the CPU codec's speed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/device.h"
#include "hycc/dtype.h"

namespace hycc {

// Where the device operations (codecs, copies, accumulation) run.
enum class DeviceBackend : uint8_t {
  kCuda = 0,           // the CUDA device current on the calling thread
  kHostEmulation = 1,  // "device memory" is host memory, the codecs are the CPU codecs
};

// How payloads move between ranks.
enum class DeviceTransport : uint8_t {
  // Collectives: NCCL when it can be loaded on every rank and no two ranks share a GPU (decided
  // once per communicator), staged MPI otherwise; always staged MPI for send/recv and for the
  // host emulation.
  kAuto = 0,
  // Payloads copied into pinned host memory and sent with MPI (any placement of ranks, several
  // ranks on one GPU included); on a communicator over a group that is not MPI's
  // (Communicator::over, a torch process group), copied to host memory and sent with the
  // group's own transport.
  kStagedMpi = 1,
  // ncclSend/ncclRecv (libnccl.so.2 loaded at run time; one GPU per rank), payload sizes as
  // small messages on the communicator's host transport (MPI, or the group's). The NCCL
  // communicator is made from the communicator (MPI's or a group's) by the first collective
  // that uses it; send/recv with kNccl need such a collective to have run on the
  // communicator first. Calls with kNccl must be made in the same order on the ranks they
  // involve (NCCL's messages carry no tag). With the host emulation: the same transport over an
  // MPI stand-in for NCCL (for tests).
  kNccl = 2,
};

// How a device collective runs: the algorithm layer takes these and nothing else. The common
// settings (codec, segment_bytes, seed, tag, check_arguments, stats) are the host calls' own;
// on the device, check_arguments' kAuto and kAlways both agree before every call with more than
// one rank (the device collectives and DeviceGradCompressor, the native staged path too; point
// to point has none: the message describes itself), and stats reports algorithm kRing, or kAuto
// for point to point and calls with nothing to do, with wire_bytes counting payload bytes.
struct DeviceAlgorithmOptions : CommonOptions {
  // Calls whose message (as for the host calls: the send buffer; allgather: the receive buffer)
  // is smaller go native: the data is staged to pinned host memory and the host collective runs
  // with Algorithm::kNative (the MPI call), bit-identical to that host call. 0 (the default):
  // every call runs the device algorithm. Not for send/recv.
  size_t threshold_bytes = 0;
  DeviceStream stream = nullptr;
  // NCCL's contract: the call returns once its work is queued, and work queued on `stream`
  // after it runs after it (the result is in place for it). Off (the default): the call returns
  // when the result is in place. The host still waits where a transport or codec needs it
  // (docs/gpu.md, "What the host waits for": staged transports, codecs whose payload size
  // depends on the data, checksums verified on the host).
  bool stream_ordered = false;
  DeviceBackend backend = DeviceBackend::kCuda;
  DeviceTransport transport = DeviceTransport::kAuto;
  // Every payload carries an 8-byte checksum, computed and verified on the device (one read of
  // the payload on each side): a payload altered on its way gives CorruptStream on the ranks that
  // receive it, after the message pattern completed. Off: such a payload decodes to wrong values
  // unless the codec's own checks (sizes, block headers) reject it. Send/recv: the sender's
  // choice travels with the message.
  bool checksum = true;
  // When set, a call that runs the device algorithm first runs the native path on staged copies
  // too (the uncompressed result) and stores here the largest |difference| of its own result
  // from it; 0 for calls that do not compress (one rank, nothing to move, below the threshold).
  // It costs a whole uncompressed collective and two copies: a diagnostic, which a policy
  // engine applies to its HYCC_SAMPLE_ERROR calls. All ranks must set it alike.
  double* max_error = nullptr;
};

// The options of a device collective: how it runs, and who it is (CallIdentity). With a policy,
// on the device:
// - the decision's threshold becomes threshold_bytes: smaller calls go native;
// - a gradient compressor decision on an allreduce or a reduce_scatter runs the engine's
//   DeviceGradCompressor (hycc/grad_device.h) of that spec keyed by `key` (0: the send
//   buffer's address and count, or key_buffer's and key_count; libhycc_mpi.so keys an allreduce
//   by its receive buffer, as the host calls do), bit-identical to the host's gradient
//   compressor; on other operations it runs the codec the compressor wraps (ef+quant:bits=4 ->
//   quant:bits=4; powersgd, topk, sign -> none), as the host calls do;
// - the engine's error sampling (HYCC_SAMPLE_ERROR) applies as on the host: the sampled codec
//   and gradient calls also run natively on staged copies and record the largest difference.
// recv_device needs no policy (the message names its codec).
struct DeviceCollectiveOptions : DeviceAlgorithmOptions, CallIdentity {};

// recv = op over ranks of send (device memory). send.count == recv.count; in place when
// send.data == recv.data.
void allreduce_device(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                      const DeviceCollectiveOptions& options = {});

// recv = this rank's chunk (chunk_range(send.count, size, rank)) of op over ranks of send. In
// place when recv is that chunk of send.
void reduce_scatter_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                           ReduceOp op, const DeviceCollectiveOptions& options = {});

// recv = every rank's send in rank order. recv.count == size * send.count; in place when send is
// this rank's block of recv. With a lossy codec this rank's own block is the decoded payload.
void allgather_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                      const DeviceCollectiveOptions& options = {});

// buffer on every rank = buffer of `root`, segments pipelined along the chain root, root + 1, ..
// (broadcast_chain.cc's protocol). With a lossy codec the root's buffer becomes the decoded
// payload too.
void broadcast_device(const Communicator& comm, TensorView buffer, int root,
                      const DeviceCollectiveOptions& options = {});

// Block j of send (send.count / size elements) goes to rank j, block i of recv comes from rank i
// (pairwise exchange, alltoall_pairwise.cc's schedule: bit-identical to the host call with
// Algorithm::kPairwise and threshold 0). send.count == recv.count, a multiple of size; in place
// when send.data == recv.data. This rank's own block is copied as it is.
void alltoall_device(const Communicator& comm, ConstTensorView send, TensorView recv,
                     const DeviceCollectiveOptions& options = {});

// Point to point, blocking. The message carries dtype, count, segmentation and the codec's
// spec, so recv_device needs only the backend, stream and transport of `options` (its codec,
// segment size and seed are ignored). dest/source must not be this rank; source may be
// MPI_ANY_SOURCE. Sender and receiver must use the same transport. A receive whose dtype or
// count differs from the message throws CommError after consuming the whole message.
void send_device(const Communicator& comm, ConstTensorView data, int dest, int tag,
                 const DeviceCollectiveOptions& options = {});
RecvStatus recv_device(const Communicator& comm, TensorView data, int source, int tag,
                       const DeviceCollectiveOptions& options = {});

}  // namespace hycc
