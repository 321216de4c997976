// The two-stage split allreduce (split_collectives.h): a reduce-scatter by MPI_Ialltoall of one
// compressed chunk per rank, then, in next(), an allgather of each rank's compressed sum. With
// feedback, ef2+CODEC's step (grad/method_ef2.cc) on slots instead of agreed blocks.
#include <algorithm>

#include "coll/split_builder.h"
#include "common/finite.h"

namespace hycc::coll {

bool two_stage_pays(const CodecConfig& codec, size_t count, int size) {
  if (size < 2 || count == 0) return false;
  const size_t widest = chunk_range(count, size, 0).count;
  const std::optional<size_t> slot = slot_bytes(codec, widest);
  return slot && *slot < widest * sizeof(float) &&
         *slot <= static_cast<size_t>(INT_MAX) / static_cast<size_t>(size);
}

std::unique_ptr<SplitCollective> start_allreduce_two_stage(MPI_Comm first, MPI_Comm second,
                                                           const float* send, float* recv,
                                                           size_t count, const CodecConfig& codec,
                                                           const Feedback* feedback) {
  int size = 1;
  HYCC_CHECK_MPI(MPI_Comm_size(first, &size));
  SplitBuilder b(first, codec, chunk_range(count, size, 0).count);
  SplitCollective& c = *b.c;
  c.stats_.algorithm = Algorithm::kRing;  // a reduce-scatter, then an allgather
  c.stats_.message_bytes = count * sizeof(float);
  const auto p = static_cast<size_t>(size), me = static_cast<size_t>(b.rank);
  const ChunkRange mine = chunk_range(count, size, b.rank);
  if (feedback != nullptr && feedback->server.size() != mine.count) {
    throw InvalidArgument(tagged("coll", "two-stage allreduce: a server residual of ",
                                 feedback->server.size(), " values for a chunk of ", mine.count));
  }

  // 1. Chunk j of the input (with feedback: input + residual) compressed into slot j. The own
  // chunk stays exact, or with feedback is compressed and decoded as the peers' are (ef2+'s
  // worker residual covers every chunk).
  std::vector<float> acc;
  if (feedback != nullptr) {
    acc = accumulate(*feedback, send, count);
    b.seed = feedback->seed;
    send = acc.data();
  }
  c.sent_ = pooled_bytes(p * c.slot_);
  c.received_ = pooled_bytes(p * c.slot_);
  c.own_ = pooled_floats(mine.count);
  for (size_t j = 0; j < p; ++j) {
    const ChunkRange chunk = chunk_range(count, size, int(j));
    std::byte* slot = c.sent_.data() + j * c.slot_;
    if (feedback == nullptr && j == me) {
      std::copy_n(send + chunk.offset, chunk.count, c.own_.begin());
      continue;
    }
    b.compress_into(slot, j, send + chunk.offset, chunk.count);
    if (feedback == nullptr) continue;
    // What rank j decodes of this chunk; the rest stays in the residual.
    float* residual = feedback->residual.data() + chunk.offset;
    float* decoded = j == me ? c.own_.data() : residual;
    decode_slot(slot, c.slot_, decoded, chunk.count);
    for (size_t i = 0; i < chunk.count; ++i) {
      residual[i] = finite_or_zero(acc[chunk.offset + i] - decoded[i]);
    }
  }
  recycle(acc);
  if (feedback != nullptr) SplitBuilder::not_sent(c, mine.count);  // the own chunk's stream
  HYCC_CHECK_MPI(MPI_Ialltoall(c.sent_.data(), SplitBuilder::mpi_bytes(c.slot_), MPI_BYTE,
                               c.received_.data(), SplitBuilder::mpi_bytes(c.slot_), MPI_BYTE,
                               first, c.request()));

  // 2. This rank's chunk summed in rank order (plus the server residual), compressed once into
  // the slot every rank gathers; the own stream decoded as the others decode it.
  std::optional<Feedback> server;
  if (feedback != nullptr) server = *feedback;
  auto stage = std::make_shared<SplitBuilder>(std::move(b));
  c.next_ = [stage, second, recv, count, size, p, me, mine, server](SplitCollective& s) {
    std::vector<float> sum = pooled_floats(mine.count), part = pooled_floats(mine.count);
    for (size_t j = 0; j < p; ++j) {
      const float* x = s.own_.data();
      if (j != me) {
        decode_slot(s.received_.data() + j * s.slot_, s.slot_, part.data(), mine.count);
        x = part.data();
      }
      for (size_t i = 0; i < mine.count; ++i) sum[i] = j == 0 ? x[i] : sum[i] + x[i];
    }
    if (server) {
      for (size_t i = 0; i < mine.count; ++i) sum[i] += server->server[i];
      stage->seed = server->server_seed;
    }
    recycle(s.sent_);
    s.sent_ = pooled_bytes(s.slot_);
    // Slot p: a stream number no worker chunk uses (the seed without feedback).
    stage->compress_into(s, s.sent_.data(), server ? 0 : p, sum.data(), mine.count);
    decode_slot(s.sent_.data(), s.slot_, s.own_.data(), mine.count);
    if (server) {
      for (size_t i = 0; i < mine.count; ++i) {
        server->server[i] = finite_or_zero(sum[i] - s.own_[i]);
      }
    }
    recycle(sum);
    recycle(part);
    HYCC_CHECK_MPI(MPI_Iallgather(s.sent_.data(), SplitBuilder::mpi_bytes(s.slot_), MPI_BYTE,
                                  s.received_.data(), SplitBuilder::mpi_bytes(s.slot_), MPI_BYTE,
                                  second, s.request()));
    s.decode_ = [recv, count, size, me](SplitCollective& done) {
      for (int j = 0; j < size; ++j) {
        const ChunkRange chunk = chunk_range(count, size, j);
        if (static_cast<size_t>(j) == me) {
          std::copy(done.own_.begin(), done.own_.end(), recv + chunk.offset);
        } else {
          decode_slot(done.received_.data() + size_t(j) * done.slot_, done.slot_,
                      recv + chunk.offset, chunk.count);
        }
      }
    };
  };
  return std::move(stage->c);
}

}  // namespace hycc::coll
