#include "coll/split_collectives.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <limits>

#include "coll/coll_internal.h"
#include "coll/split_builder.h"
#include "common/buffer_pool.h"
#include "common/finite.h"
#include "hycc/error.h"

namespace hycc::coll {

void decode_slot(const std::byte* slot, size_t slot_size, float* out, size_t count) {
  uint64_t bytes = 0;
  std::memcpy(&bytes, slot, sizeof bytes);
  if (bytes == kOverflow) {
    std::fill(out, out + count, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (bytes > slot_size - sizeof bytes) {
    throw CorruptStream(
        tagged("coll", "a slot of ", slot_size, " bytes says its stream has ", bytes, " bytes"));
  }
  const std::span<const std::byte> stream(slot + sizeof bytes, bytes);
  const StreamInfo info = inspect(stream);
  if (info.dtype != DType::kF32 || info.count != count || info.stream_bytes() != bytes) {
    throw CorruptStream(tagged("coll", "a slot holds ", info.count, " elements of ",
                               dtype_name(info.dtype), " in ", info.stream_bytes(), " of ", bytes,
                               " bytes, expected ", count, " float32"));
  }
  decompress(stream, TensorView{DType::kF32, count, out});
}

std::vector<float> accumulate(const Feedback& feedback, const float* send, size_t count) {
  if (feedback.residual.size() != count) {
    throw InvalidArgument(tagged("coll", "split collective: a residual of ",
                                 feedback.residual.size(), " values for ", count, " inputs"));
  }
  std::vector<float> acc = pooled_floats(count);
  for (size_t i = 0; i < count; ++i) acc[i] = send[i] + feedback.residual[i];
  return acc;
}

SplitCollective::~SplitCollective() {
  recycle(sent_);
  recycle(received_);
  recycle(own_);
}

void SplitCollective::next() {
  if (!next_) throw InvalidArgument(tagged("coll", "split collective: no exchange follows"));
  const auto start = std::chrono::steady_clock::now();
  const double before = stats_.codec_seconds;  // the stage's compression counts once
  const std::function<void(SplitCollective&)> run = std::move(next_);
  next_ = nullptr;
  run(*this);
  stats_.codec_seconds = before + SplitBuilder::seconds_since(start);
}

void SplitCollective::finish() {
  const auto start = std::chrono::steady_clock::now();
  decode_(*this);
  const double s = SplitBuilder::seconds_since(start);
  stats_.codec_seconds += s;
  stats_.seconds = stats_.codec_seconds;
}

std::optional<size_t> slot_bytes(const CodecConfig& codec, size_t count) {
  const std::optional<size_t> regular = regular_compressed_bytes(codec, DType::kF32, count);
  if (!regular) return std::nullopt;
  const size_t room = *regular + (count * sizeof(float) + kSlackDivisor - 1) / kSlackDivisor;
  return sizeof(uint64_t) + std::min(room, max_compressed_bytes(codec, DType::kF32, count));
}

bool split_pays(Operation op, const CodecConfig& codec, size_t count, int size) {
  if (size < 2 || count == 0) return false;
  const std::optional<size_t> slot_size = slot_bytes(codec, count);
  if (!slot_size) return false;
  const size_t slot = *slot_size;
  const auto p = static_cast<size_t>(size);
  if (slot > static_cast<size_t>(INT_MAX) / p) return false;
  const size_t raw = count * sizeof(float);
  switch (op) {
    case Operation::kAllreduce:
      // (p - 1) slots against MPI's 2 (p - 1)/p of the tensor.
      return p * slot < 2 * raw;
    case Operation::kBroadcast:
    case Operation::kAllgather:
    case Operation::kAlltoall:
    case Operation::kReduceScatter:
      return slot < raw;
    default:
      return false;
  }
}

std::unique_ptr<SplitCollective> start_allreduce(MPI_Comm comm, const float* send, float* recv,
                                                 size_t count, const CodecConfig& codec,
                                                 const Feedback* feedback) {
  SplitBuilder b(comm, codec, count);
  b.c->stats_.algorithm = Algorithm::kCompressOnce;
  std::vector<float> acc;  // with feedback: send + residual
  if (feedback != nullptr) {
    acc = accumulate(*feedback, send, count);
    b.seed = feedback->seed;
    send = acc.data();
  }
  b.gather(comm, send, count);
  if (feedback != nullptr) {
    // What the peers decode of this rank's stream.
    std::vector<float>& own = b.c->own_ = pooled_floats(count);
    decode_slot(b.c->sent_.data(), b.c->slot_, own.data(), count);
    for (size_t i = 0; i < count; ++i) feedback->residual[i] = finite_or_zero(acc[i] - own[i]);
    recycle(acc);
  }
  b.c->decode_ = [recv, count, r = static_cast<size_t>(b.rank)](SplitCollective& c) {
    // sum = x_0, then sum += x_j, in rank order on every rank (this rank's x decoded already
    // when there is feedback).
    std::vector<float> part = pooled_floats(count);
    const size_t ranks = c.received_.size() / c.slot_;
    for (size_t j = 0; j < ranks; ++j) {
      float* x = j == 0 ? recv : part.data();
      if (j == r && !c.own_.empty()) {
        std::memcpy(x, c.own_.data(), count * sizeof(float));
      } else {
        decode_slot(c.received_.data() + j * c.slot_, c.slot_, x, count);
      }
      if (j != 0) {
        for (size_t i = 0; i < count; ++i) recv[i] += part[i];
      }
    }
    recycle(part);
  };
  return std::move(b.c);
}

std::unique_ptr<SplitCollective> start_broadcast(MPI_Comm comm, float* data, size_t count, int root,
                                                 const CodecConfig& codec) {
  SplitBuilder b(comm, codec, count);
  b.c->received_ = pooled_bytes(b.c->slot_);
  // MPI_Ibcast's buffer: the root sends from it and decodes it as the others do.
  if (b.rank == root) b.compress_into(b.c->received_.data(), 0, data, count);
  b.c->decode_ = [data, count](SplitCollective& c) {
    decode_slot(c.received_.data(), c.slot_, data, count);
  };
  HYCC_CHECK_MPI(MPI_Ibcast(b.c->received_.data(), SplitBuilder::mpi_bytes(b.c->slot_), MPI_BYTE,
                            root, comm, b.c->request()));
  return std::move(b.c);
}

std::unique_ptr<SplitCollective> start_allgather(MPI_Comm comm, const float* send, float* recv,
                                                 size_t count, const CodecConfig& codec) {
  SplitBuilder b(comm, codec, count);
  b.c->decode_ = [recv, count](SplitCollective& c) {
    const size_t ranks = c.received_.size() / c.slot_;
    for (size_t j = 0; j < ranks; ++j) {
      decode_slot(c.received_.data() + j * c.slot_, c.slot_, recv + j * count, count);
    }
  };
  b.gather(comm, send, count);
  return std::move(b.c);
}

std::unique_ptr<SplitCollective> start_alltoall(MPI_Comm comm, const float* send, float* recv,
                                                size_t count, const CodecConfig& codec) {
  SplitBuilder b(comm, codec, count);
  const auto r = static_cast<size_t>(b.rank);
  b.keep_own(send, count);
  b.c->decode_ = [recv, count, r](SplitCollective& c) {
    const size_t ranks = c.received_.size() / c.slot_;
    for (size_t j = 0; j < ranks; ++j) {
      if (j == r) {
        std::memcpy(recv + j * count, c.own_.data(), count * sizeof(float));
      } else {
        decode_slot(c.received_.data() + j * c.slot_, c.slot_, recv + j * count, count);
      }
    }
  };
  b.scatter(comm, send, count);
  return std::move(b.c);
}

std::unique_ptr<SplitCollective> start_reduce_scatter(MPI_Comm comm, const float* send, float* recv,
                                                      size_t count, const CodecConfig& codec,
                                                      const Feedback* feedback) {
  SplitBuilder b(comm, codec, count);
  const auto r = static_cast<size_t>(b.rank);
  const size_t total = count * static_cast<size_t>(b.size);
  std::vector<float> acc;  // with feedback: send + residual
  if (feedback != nullptr) {
    acc = accumulate(*feedback, send, total);
    b.seed = feedback->seed;
    send = acc.data();
  }
  b.keep_own(send, count);  // with feedback replaced below by its stream's decoding
  b.c->decode_ = [recv, count, r](SplitCollective& c) {
    // sum = x_0, then sum += x_j, in rank order (this rank's own contribution as kept).
    std::vector<float> part = pooled_floats(count);
    const size_t ranks = c.received_.size() / c.slot_;
    for (size_t j = 0; j < ranks; ++j) {
      const float* x = c.own_.data();
      if (j != r) {
        decode_slot(c.received_.data() + j * c.slot_, c.slot_, part.data(), count);
        x = part.data();
      }
      for (size_t i = 0; i < count; ++i) recv[i] = j == 0 ? x[i] : recv[i] + x[i];
    }
    recycle(part);
  };
  b.scatter(comm, send, count, feedback != nullptr);
  if (feedback != nullptr) {
    // What chunk j's owner decodes is lost from acc. The own chunk is compressed too and its
    // decoding is what this rank adds, as in the blocking reduce-scatter of ef+ and ef2+ (the
    // first stage of their two: grad/method_ef2.cc), so the two give the same bits.
    for (size_t j = 0; j < static_cast<size_t>(b.size); ++j) {
      float* residual = feedback->residual.data() + j * count;
      float* decoded = j == r ? b.c->own_.data() : residual;
      decode_slot(b.c->sent_.data() + j * b.c->slot_, b.c->slot_, decoded, count);
      for (size_t i = 0; i < count; ++i) {
        residual[i] = finite_or_zero(acc[j * count + i] - decoded[i]);
      }
    }
    recycle(acc);
  }
  return std::move(b.c);
}

}  // namespace hycc::coll
