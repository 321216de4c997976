// Internal to the split collectives (split_collectives.cc, split_allreduce_two_stage.cc): the
// builder of a SplitCollective (its slots, the compression clock, the statistics) and the slot
// helpers both files use.
#pragma once

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "coll/coll_internal.h"
#include "coll/split_collectives.h"
#include "common/buffer_pool.h"
#include "hycc/error.h"

namespace hycc::coll {

// Builds SplitCollectives: the slots, the compression clock and the statistics.
struct SplitBuilder {
  std::unique_ptr<SplitCollective> c{new SplitCollective};
  CodecConfig codec;
  std::vector<std::byte> scratch;  // a stream that may not fit its slot
  int rank = 0, size = 1;
  std::optional<uint64_t> seed;  // error feedback's seed of the step (Feedback)

  // Slots for `count` values; gather() and scatter() allocate them (a broadcast its one).
  SplitBuilder(MPI_Comm comm, const CodecConfig& config, size_t count) : codec(config) {
    HYCC_CHECK_MPI(MPI_Comm_rank(comm, &rank));
    HYCC_CHECK_MPI(MPI_Comm_size(comm, &size));
    const std::optional<size_t> slot = slot_bytes(config, count);
    if (!slot) {
      throw InvalidArgument(tagged("coll", "split collective with codec ", config.spec(),
                                   ", whose stream size depends on the data"));
    }
    c->slot_ = *slot;
    if (c->slot_ > static_cast<size_t>(INT_MAX) / static_cast<size_t>(size)) {
      throw InvalidArgument(tagged("coll", "split collective: ", size, " slots of ", c->slot_,
                                   " bytes exceed MPI's int counts"));
    }
    c->stats_.compressed = true;
    c->stats_.message_bytes = count * sizeof(float);
  }

  // Compresses in[0, count) into the slot at `at` (the stream's length, then the stream, or
  // kOverflow when the stream does not fit); `slot` numbers the streams of this rank (their
  // stochastic rounding seeds).
  void compress_into(std::byte* at, size_t slot, const float* in, size_t count) {
    compress_into(*c, at, slot, in, count);
  }
  // The same for `into`, which this builder no longer holds (the two-stage allreduce's second
  // stage).
  void compress_into(SplitCollective& into, std::byte* at, size_t slot, const float* in,
                     size_t count) {
    const auto start = std::chrono::steady_clock::now();
    const CompressOptions options{seed ? *seed + slot : stream_seed(0, rank, 0, slot)};
    const ConstTensorView view{DType::kF32, count, in};
    const std::span<std::byte> room(at + sizeof(uint64_t), into.slot_ - sizeof(uint64_t));
    uint64_t bytes;
    if (room.size() >= max_compressed_bytes(codec, view)) {
      bytes = compress(codec, view, room, options);
    } else {
      scratch.resize(max_compressed_bytes(codec, view));
      bytes = compress(codec, view, scratch, options);
      if (bytes <= room.size()) {
        std::memcpy(room.data(), scratch.data(), bytes);
      } else {
        bytes = kOverflow;
      }
    }
    std::memcpy(at, &bytes, sizeof bytes);
    into.stats_.raw_bytes += count * sizeof(float);
    into.stats_.wire_bytes += into.slot_;
    into.stats_.streams += 1;
    into.stats_.codec_seconds += seconds_since(start);
  }

  // Takes back from `into`'s statistics one stream of `count` values compressed into a slot
  // that does not go on the wire (this rank's own, compressed for its residual).
  static void not_sent(SplitCollective& into, size_t count) {
    into.stats_.raw_bytes -= count * sizeof(float);
    into.stats_.wire_bytes -= into.slot_;
    into.stats_.streams -= 1;
  }

  // Compresses send[0, count) into the one sent slot and starts MPI_Iallgather of the slots.
  void gather(MPI_Comm comm, const float* send, size_t count) {
    c->sent_ = pooled_bytes(c->slot_);
    c->received_ = pooled_bytes(static_cast<size_t>(size) * c->slot_);
    compress_into(c->sent_.data(), 0, send, count);
    HYCC_CHECK_MPI(MPI_Iallgather(c->sent_.data(), mpi_bytes(c->slot_), MPI_BYTE,
                                  c->received_.data(), mpi_bytes(c->slot_), MPI_BYTE, comm,
                                  c->request()));
  }

  // Compresses the blocks send[j count, (j + 1) count) for every j but this rank (with
  // `with_own`, this rank's too, for a residual; not counted as sent) into sent slot j and starts
  // MPI_Ialltoall of the slots.
  void scatter(MPI_Comm comm, const float* send, size_t count, bool with_own = false) {
    c->sent_ = pooled_bytes(static_cast<size_t>(size) * c->slot_);
    c->received_ = pooled_bytes(static_cast<size_t>(size) * c->slot_);
    for (size_t j = 0; j < static_cast<size_t>(size); ++j) {
      if (j != static_cast<size_t>(rank) || with_own) {
        compress_into(c->sent_.data() + j * c->slot_, j, send + j * count, count);
      }
    }
    if (with_own) not_sent(*c, count);
    HYCC_CHECK_MPI(MPI_Ialltoall(c->sent_.data(), mpi_bytes(c->slot_), MPI_BYTE,
                                 c->received_.data(), mpi_bytes(c->slot_), MPI_BYTE, comm,
                                 c->request()));
  }

  // Keeps block r of send (count values) for finish(): send may be, or hold, the output.
  void keep_own(const float* send, size_t count) {
    c->own_ = pooled_floats(count);
    std::copy_n(send + static_cast<size_t>(rank) * count, count, c->own_.begin());
  }

  static double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  static int mpi_bytes(size_t n) { return static_cast<int>(n); }  // bounded by the constructor
};

// Decodes the stream in `slot` (slot_size bytes long) into out[0, count); an overflowed slot
// decodes as NaN. Throws CorruptStream.
void decode_slot(const std::byte* slot, size_t slot_size, float* out, size_t count);

// send[0, count) + the residual of feedback (which holds count values), from the buffer pool.
std::vector<float> accumulate(const Feedback& feedback, const float* send, size_t count);

}  // namespace hycc::coll
