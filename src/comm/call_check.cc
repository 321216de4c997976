#include "comm/call_check.h"

#include <limits>
#include <utility>
#include <vector>

#include "comm/group.h"
#include "comm/tags.h"
#include "common/xxh3.h"

namespace hycc {

const char* operation_name(Operation op) {
  switch (op) {
    case Operation::kAllreduce:
      return "allreduce";
    case Operation::kReduceScatter:
      return "reduce_scatter";
    case Operation::kAllgather:
      return "allgather";
    case Operation::kBroadcast:
      return "broadcast";
    case Operation::kAlltoall:
      return "alltoall";
    case Operation::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

namespace comm {
namespace {

bool algorithm_applies(Operation op, Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
    case Algorithm::kNative:  // for send: uncompressed
      return true;
    case Algorithm::kRing:
      return op == Operation::kAllreduce || op == Operation::kReduceScatter ||
             op == Operation::kAllgather;
    case Algorithm::kRecursiveDoubling:
    case Algorithm::kCompressOnce:
      return op == Operation::kAllreduce;
    case Algorithm::kChain:
      return op == Operation::kBroadcast;
    case Algorithm::kPairwise:
      return op == Operation::kAlltoall;
    case Algorithm::kTwoLevel:
      return op == Operation::kAllreduce || op == Operation::kReduceScatter ||
             op == Operation::kAllgather || op == Operation::kBroadcast;
  }
  return false;
}

}  // namespace

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kNative:
      return "native";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case Algorithm::kCompressOnce:
      return "compress_once";
    case Algorithm::kChain:
      return "chain";
    case Algorithm::kPairwise:
      return "pairwise";
    case Algorithm::kTwoLevel:
      return "two_level";
  }
  return "?";
}

const char* call_name(Operation op) {
  return op == Operation::kSendRecv ? "send/recv" : operation_name(op);
}

void ArgCheck::fail(std::string message) {
  if (problem_.empty()) problem_ = std::move(message);
}

void ArgCheck::run(const Communicator& comm, bool agree) const {
  if (comm.size() > 1 && agree) {
    const size_t m = fields_;
    std::vector<int64_t> buf(2 * m + 1);
    for (size_t i = 0; i < m; ++i) {
      buf[i] = values_[i];
      buf[m + i] = -values_[i];
    }
    buf[2 * m] = ok() ? std::numeric_limits<int64_t>::max() : comm.rank();
    combine(comm, buf, Combine::kMin);
    if (!ok()) throw InvalidArgument(problem_);
    if (buf[2 * m] != std::numeric_limits<int64_t>::max()) {
      throw CommError(tagged("coll", call_name(op_), ": rank ", buf[2 * m],
                             " passed invalid arguments (it throws InvalidArgument); ",
                             "nothing was sent"));
    }
    std::string diffs;
    for (size_t i = 0; i < m; ++i) {
      const int64_t lo = buf[i], hi = -buf[m + i];
      if (lo == hi) continue;
      diffs += detail::concat(diffs.empty() ? "" : "; ", names_[i], " (this rank ", values_[i],
                              ", min ", lo, ", max ", hi, ")");
    }
    if (!diffs.empty()) {
      throw CommError(tagged("coll", "ranks disagree on the arguments of ", call_name(op_), ": ",
                             diffs, "; nothing was sent"));
    }
  }
  if (!ok()) throw InvalidArgument(problem_);
}

uint64_t ArgCheck::signature() const {
  std::array<int64_t, kMaxFields + 1> words{};
  words[0] = static_cast<int64_t>(op_);
  for (size_t i = 0; i < fields_; ++i) words[i + 1] = values_[i];
  return xxh3(words.data(), (fields_ + 1) * sizeof(int64_t));
}

void check_argument_check(ArgCheck& check, ArgumentCheck value) {
  if (value != ArgumentCheck::kAuto && value != ArgumentCheck::kAlways &&
      value != ArgumentCheck::kNever) {
    check.fail(tagged("coll", "invalid check_arguments ", static_cast<int>(value)));
  }
}

void add_signature_fields(ArgCheck& check, size_t count, DType dtype, const CodecConfig& codec) {
  const std::string& spec = codec.spec();
  check.field("count", static_cast<int64_t>(count));
  check.field("dtype", static_cast<int64_t>(dtype));
  check.field("codec id", static_cast<int64_t>(codec.id()));
  check.field("codec spec hash", static_cast<int64_t>(xxh3(spec.data(), spec.size())));
}

void check_same_dtype(ArgCheck& check, const char* op, ConstTensorView send, ConstTensorView recv) {
  if (check.ok() && send.dtype != recv.dtype) {
    check.fail(tagged("coll", op, ": send dtype ", dtype_name(send.dtype), " differs from recv ",
                      dtype_name(recv.dtype)));
  }
}

void check_reduce_op(ArgCheck& check, ReduceOp op) {
  if (op != ReduceOp::kSum && op != ReduceOp::kAverage) {
    check.fail(tagged("coll", "invalid reduce op ", static_cast<int>(op)));
  }
  check.field("reduce op", static_cast<int64_t>(op));
}

void check_options(ArgCheck& check, const Communicator& comm, Operation op,
                   const AlgorithmOptions& options) {
  if (options.segment_bytes == 0 || options.segment_bytes > kMaxSegmentBytes) {
    check.fail(tagged("coll", "segment_bytes ", options.segment_bytes, " out of range [1, ",
                      kMaxSegmentBytes, "]"));
  }
  // Tag 0 is always valid (MPI guarantees MPI_TAG_UB >= 32767); others need the attribute.
  if (options.tag != 0 && (options.tag < 0 || options.tag > max_user_tag(comm))) {
    check.fail(
        tagged("coll", "options.tag ", options.tag, " out of range [0, ", max_user_tag(comm), "]"));
  }
  if (!algorithm_applies(op, options.algorithm)) {
    check.fail(tagged("coll", "algorithm ", algorithm_name(options.algorithm),
                      " does not apply to ", comm::call_name(op)));
  }
  check_argument_check(check, options.check_arguments);
}

}  // namespace comm
}  // namespace hycc
