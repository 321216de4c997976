// The checks every operation runs on its arguments before it moves a byte: the local checks of
// views and settings, and the cross-rank agreement on a signature (ArgCheck::run), so that a
// call with invalid or mismatched arguments throws on every rank instead of leaving peers
// waiting. Used by the collectives (coll/) and the gradient compressors (grad/).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/error.h"

namespace hycc::comm {

// Largest segment (uncompressed bytes): keeps every compressed segment below INT_MAX bytes.
inline constexpr size_t kMaxSegmentBytes = size_t{1} << 30;

const char* algorithm_name(Algorithm a);

// The name of `op` in error messages ("send/recv" for point to point).
const char* call_name(Operation op);

// Collects the local argument problems of one call, and the signature that all ranks must share.
class ArgCheck {
 public:
  explicit ArgCheck(Operation op);

  // A value that must be equal on every rank (masked to 62 bits, so that negation cannot
  // overflow).
  void field(const char* name, int64_t value);
  // Records a local problem; the first one becomes this rank's InvalidArgument.
  void fail(std::string message);
  bool ok() const { return problem_.empty(); }

  // Throws InvalidArgument on a rank with a local problem. With more than one rank and `agree`,
  // first runs the agreement: one combine(MIN) (comm/group.h) of 2 * fields + 1 int64 values (each
  // field and its negation, for min and max at once, and the lowest rank with a local problem), so
  // that every rank throws (CommError on the others) instead of leaving peers waiting.
  void run(const Communicator& comm, bool agree) const;
  // A hash of the operation and the signature's values.
  uint64_t signature() const;

 private:
  Operation op_;
  static constexpr size_t kMaxFields = 16;
  // Signature values are masked to 62 bits so that negating them (for the max) cannot overflow.
  static constexpr int64_t kFieldMask = (int64_t{1} << 62) - 1;
  std::array<const char*, kMaxFields> names_;  // [0, fields_) are set
  std::array<int64_t, kMaxFields> values_;
  size_t fields_ = 0;
  std::string problem_;
};

// Common local checks of a view: valid dtype, non-null data when count > 0, element alignment.
// `what` and `role` name it in the message ("allreduce", "send"); nothing is formatted unless a
// check fails.
void check_view(ArgCheck& check, const char* what, const char* role, ConstTensorView v);
// send and recv of operation `op` have the same dtype (checked only while the check is ok).
void check_same_dtype(ArgCheck& check, const char* op, ConstTensorView send, ConstTensorView recv);
// A valid reduce op, recorded in the cross-rank signature.
void check_reduce_op(ArgCheck& check, ReduceOp op);
// Fails `check` for a value that is not an ArgumentCheck.
void check_argument_check(ArgCheck& check, ArgumentCheck value);
// The fields every call's signature has: count, dtype, codec (id and a hash of its spec).
void add_signature_fields(ArgCheck& check, size_t count, DType dtype, const CodecConfig& codec);
// Checks the options fields of a collective: segment size, tag range, the algorithm applies to
// `op`, check_arguments.
void check_options(ArgCheck& check, const Communicator& comm, Operation op,
                   const AlgorithmOptions& options);
// True if [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes);

// ---- inline definitions of the per-call checks (they run on every call, also natively) ------

// The operation's value in the signature is its internal tag slot (tags.h).
inline ArgCheck::ArgCheck(Operation op) : op_(op) {
  field("operation", static_cast<int64_t>(op) + 1);
}

inline void ArgCheck::field(const char* name, int64_t value) {
  if (fields_ == kMaxFields) {
    throw InvalidArgument(tagged("coll", "internal: more than ", kMaxFields, " signature fields"));
  }
  names_[fields_] = name;
  values_[fields_] = value & kFieldMask;
  ++fields_;
}

inline void check_view(ArgCheck& check, const char* what, const char* role, ConstTensorView v) {
  if (!is_valid_dtype(static_cast<uint8_t>(v.dtype))) {
    check.fail(tagged("coll", what, " ", role, ": invalid dtype ", static_cast<int>(v.dtype)));
  } else if (v.count != 0 && v.data == nullptr) {
    check.fail(tagged("coll", what, " ", role, ": null data with ", v.count, " elements"));
  } else if (reinterpret_cast<uintptr_t>(v.data) % dtype_size(v.dtype) != 0) {
    check.fail(tagged("coll", what, " ", role, ": data at ", v.data, " is not aligned to its ",
                      dtype_size(v.dtype), "-byte elements"));
  }
}

inline bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

}  // namespace hycc::comm
