// ef2+CODEC on device buffers: the two stages of grad/method_ef2.cc with the codec's device
// payloads, moved as words by the device collectives with codec none (an alltoall, then an
// allgather: the bytes unchanged). Each block is one word with the payload's length, then the
// payload, padded with zeros to the largest payload of any rank in that stage (agreed by one
// small collective of a word, comm::combine, as the host agrees it), not to the codec's bound:
// quant's bound is about 5x its fixed-rate payload. The same seeds and the same float32 operations
// in the same order as the host method, so the same results and residuals. A reduce-scatter
// (shard_only) stops after the server's sum, as on the host.
// A codec whose payload size depends only on the count (comm::fixed_payload_size: the casts,
// quant) needs neither: every rank knows every payload's size, so the blocks are the largest
// chunk's payload, no agreement runs, and the length words are neither written nor read (no
// host wait); a stream-ordered step then returns once queued (no synchronization at its end).
#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "comm/decode_checks.h"
#include "comm/group.h"
#include "comm/transport.h"
#include "grad/grad_device_state.h"
#include "grad/method.h"

namespace hycc::grad {
namespace {

// Compresses `in` into `slot` (length word, then the payload; the slot zeroed first, so that
// the padding is zeros). Returns the length. With a fixed payload size the length word stays 0:
// the receivers know it.
size_t encode_block(DeviceOps& ops, const CodecConfig& codec, ConstTensorView in, uint32_t* slot,
                    size_t capacity, uint64_t seed, bool fixed) {
  ops.zero(slot, 4 + capacity);
  const size_t bytes = ops.encode(codec, in, slot + 1, capacity, seed);
  if (!fixed) {
    const auto length = static_cast<uint32_t>(bytes);
    ops.copy_to_device(slot, &length, sizeof(length));
  }
  return bytes;
}

// The payload size of `count` values of a codec with a fixed size.
size_t fixed_bytes(const CodecConfig& codec, size_t count) {
  return codec.codec().max_payload_bytes(DType::kF32, count);
}

// Words of a block that holds the largest payload of any rank (`mine` this rank's largest):
// the length word and the payload. The ranks agreed on count and codec, so no honest payload
// exceeds `capacity` (the slots' payload bytes, which blocks are copied from).
size_t agreed_block(const Communicator& comm, size_t mine, size_t capacity) {
  auto largest = static_cast<int64_t>(mine);
  comm::combine(comm, std::span<int64_t>(&largest, 1), comm::Combine::kMax);
  if (largest < 0 || static_cast<uint64_t>(largest) > capacity) {
    throw CorruptStream(tagged("grad:device", "ef2: a rank announced a payload of ", largest,
                               " bytes, but a chunk codes into ", capacity, " bytes at most"));
  }
  return 1 + grad::words_for(static_cast<size_t>(largest));
}

// The payload lengths of `count` blocks of `block` words, checked against the block; with a
// fixed payload size, block j's is that of `chunk(j)` values, known without reading it.
template <typename Chunk>
std::vector<uint32_t> lengths(DeviceOps& ops, const DeviceWords& blocks, size_t block, size_t count,
                              const CodecConfig& codec, bool fixed, Chunk chunk) {
  std::vector<uint32_t> out(count);
  for (size_t j = 0; j < count; ++j) {
    if (fixed) {
      out[j] = static_cast<uint32_t>(fixed_bytes(codec, chunk(j)));
      continue;
    }
    ops.copy_to_host(&out[j], blocks.w() + block * j, sizeof(uint32_t));
    if (out[j] > (block - 1) * 4) {
      throw CorruptStream(tagged("grad:device", "ef2: a block of ", (block - 1) * 4,
                                 " payload bytes holds a payload of ", out[j], " bytes"));
    }
  }
  return out;
}

}  // namespace

GradStepStats ef2_device_step(const DeviceStep& s, const CodecConfig& codec, GradState& state) {
  const auto t0 = std::chrono::steady_clock::now();
  GradStepStats stats;
  stats.elements = s.grad.count;
  DeviceOps& ops = s.ops;
  const size_t n = s.grad.count;
  const int p = s.comm.size(), me = s.comm.rank();
  const size_t pz = static_cast<size_t>(p);
  const ChunkRange mine = chunk_range(n, p, me);
  // A slot holds any chunk's payload (chunk 0 is the largest).
  const size_t capacity =
      4 * grad::words_for(codec.codec().max_payload_bytes(DType::kF32, chunk_range(n, p, 0).count));
  const size_t slot = 1 + capacity / 4;
  const bool fixed = comm::fixed_payload_size(codec);
  // With a fixed size, a stage's largest payload is the largest chunk's (chunk 0) on every rank.
  const size_t fixed_block = 1 + grad::words_for(fixed_bytes(codec, chunk_range(n, p, 0).count));
  if (!s.shard_only && state.aux_count != mine.count) {
    state.aux = device_zeros(ops, mine.count);
    state.aux_count = mine.count;
  }
  const DeviceWords acc(ops, n), decoded(ops, n);
  // A stream-ordered step leaves the decoders' checks to the device, as a collective does.
  comm::DeferredDecodeChecks checks(ops, s.options.stream_ordered, codec);
  accumulate_gradient(s, true, state, acc.f());

  // 1. Worker: one payload per chunk, e_w = acc - decoded; chunk j to rank j.
  const DeviceWords slots(ops, slot * pz);
  const uint64_t seed = grad::step_seed(s.tensor.key, state.steps, me);
  size_t largest = 0;
  for (int j = 0; j < p; ++j) {
    const ChunkRange c = chunk_range(n, p, j);
    uint32_t* at = slots.w() + slot * size_t(j);
    const size_t bytes = encode_block(ops, codec, {DType::kF32, c.count, acc.f() + c.offset}, at,
                                      capacity, seed + uint64_t(j), fixed);
    stats.payload_bytes += bytes;
    largest = std::max(largest, bytes);
    ops.decode(codec, at + 1, bytes, {DType::kF32, c.count, decoded.f() + c.offset});
  }
  auto* residual = static_cast<float*>(state.residual.data());
  ops.subtract(acc.f(), decoded.f(), residual, n);
  CommClock timed;
  size_t block = 0;
  timed([&] { block = fixed ? fixed_block : agreed_block(s.comm, largest, capacity); });
  const DeviceWords send(ops, block * pz), recv(ops, block * pz);
  for (size_t j = 0; j < pz; ++j) {
    ops.copy_device(send.w() + block * j, slots.w() + slot * j, block * 4);
  }
  timed([&] {
    alltoall_device(s.comm, words_view(send, block * pz), words_view(recv, block * pz), s.options);
  });

  // 2. Server: this rank's chunk summed in rank order, averaged, plus e_s; compressed, e_s =
  // s - decoded. The block from this rank is its own payload, decoded already (`decoded`).
  const std::vector<uint32_t> got =
      lengths(ops, recv, block, pz, codec, fixed, [&](size_t) { return mine.count; });
  const DeviceWords sum_a(ops, mine.count), sum_b(ops, mine.count);
  float* sum = sum_a.f();
  float* next = sum_b.f();
  const float* own_worker = decoded.f() + mine.offset;
  if (me == 0) {
    ops.copy_device(sum, own_worker, mine.count * sizeof(float));
  } else {
    ops.decode(codec, recv.w() + 1, got[0], {DType::kF32, mine.count, sum});
  }
  for (size_t j = 1; j < pz; ++j) {
    if (j == size_t(me)) {
      ops.add(sum, own_worker, next, mine.count);
    } else {
      ops.decode_accumulate(codec, recv.w() + block * j + 1, got[j], DType::kF32,
                            {DType::kF32, mine.count, sum}, next);
    }
    std::swap(sum, next);
  }
  ops.round_into(sum, s.op, p, {DType::kF32, mine.count, next});
  std::swap(sum, next);
  stats.compressed = true;
  const bool queued_only = s.options.stream_ordered;  // the caller's stream orders the rest
  // As the host counts them: the blocks, and one word per peer for each agreement.
  const size_t agreement_words = fixed ? 0 : 1;
  if (s.shard_only) {  // this rank's chunk, exact: no server stage
    ops.round_into(sum, ReduceOp::kSum, 1, s.out);
    checks.defer(s.comm);
    if (!queued_only) ops.synchronize();
    stats.wire_bytes = (block + agreement_words) * 4 * (pz - 1);
    timed.settle(stats, t0);
    return stats;
  }
  auto* server_residual = static_cast<float*>(state.aux.data());
  ops.add(sum, server_residual, sum, mine.count);
  const DeviceWords own(ops, slot);
  const size_t own_bytes =
      encode_block(ops, codec, {DType::kF32, mine.count, sum}, own.w(), capacity,
                   grad::step_seed(s.tensor.key, state.steps, p + me), fixed);
  ops.decode(codec, own.w() + 1, own_bytes, {DType::kF32, mine.count, next});
  ops.subtract(sum, next, server_residual, mine.count);
  size_t server_block = 0;
  timed([&] { server_block = fixed ? fixed_block : agreed_block(s.comm, own_bytes, capacity); });
  const DeviceWords all(ops, server_block * pz);
  timed([&] {
    allgather_device(s.comm, words_view(own, server_block), words_view(all, server_block * pz),
                     s.options);
  });

  // Every rank decodes every server's chunk (its own: decoded already, in `next`).
  const std::vector<uint32_t> served =
      lengths(ops, all, server_block, pz, codec, fixed,
              [&](size_t j) { return chunk_range(n, p, int(j)).count; });
  for (int j = 0; j < p; ++j) {
    const ChunkRange c = chunk_range(n, p, j);
    if (j == me) {
      ops.copy_device(acc.f() + c.offset, next, c.count * sizeof(float));
      continue;
    }
    ops.decode(codec, all.w() + server_block * size_t(j) + 1, served[size_t(j)],
               {DType::kF32, c.count, acc.f() + c.offset});
  }
  ops.round_into(acc.f(), ReduceOp::kSum, 1, s.out);
  checks.defer(s.comm);
  if (!queued_only) ops.synchronize();
  stats.wire_bytes = (block + server_block + 2 * agreement_words) * 4 * (pz - 1);
  timed.settle(stats, t0);
  return stats;
}

}  // namespace hycc::grad
