// The argument checks of the device operations (device_call_check.h).
#include "comm/device_call_check.h"

#include <exception>
#include <unordered_set>

#include "comm/comm_attribute.h"

namespace hycc::comm {

void check_device_options(ArgCheck& check, const Communicator& comm, Operation op,
                          const DeviceAlgorithmOptions& options) {
  AlgorithmOptions host;
  host.segment_bytes = options.segment_bytes;
  host.tag = options.tag;
  host.check_arguments = options.check_arguments;
  host.algorithm = op == Operation::kSendRecv    ? Algorithm::kAuto
                   : op == Operation::kBroadcast ? Algorithm::kChain
                   : op == Operation::kAlltoall  ? Algorithm::kPairwise
                                                 : Algorithm::kRing;
  check_options(check, comm, op, host);
  if (options.backend != DeviceBackend::kCuda && options.backend != DeviceBackend::kHostEmulation) {
    check.fail(tagged("coll:device", "invalid backend ", static_cast<int>(options.backend)));
  }
  if (options.transport != DeviceTransport::kAuto &&
      options.transport != DeviceTransport::kStagedMpi &&
      options.transport != DeviceTransport::kNccl) {
    check.fail(tagged("coll:device", "invalid transport ", static_cast<int>(options.transport)));
  }
}

void check_device_view(ArgCheck& check, const DeviceOps* ops, const char* what, const char* role,
                       ConstTensorView v) {
  check_view(check, what, role, v);
  if (check.ok() && ops != nullptr && v.count != 0 && !ops->is_device_memory(v.data)) {
    check.fail(tagged("coll:device", what, " ", role, ": ", v.data, " is not memory of the ",
                      ops->name(), " device"));
  }
}

void add_device_fields(ArgCheck& check, size_t count, DType dtype,
                       const DeviceAlgorithmOptions& options) {
  add_signature_fields(check, count, dtype, options.codec);
  check.field("segment_bytes", static_cast<int64_t>(options.segment_bytes));
  check.field("threshold_bytes", static_cast<int64_t>(options.threshold_bytes));
  check.field("tag", options.tag);
  check.field("backend", static_cast<int64_t>(options.backend));
  check.field("transport", static_cast<int64_t>(options.transport));
  check.field("checksum", options.checksum ? 1 : 0);
  check.field("max_error", options.max_error != nullptr ? 1 : 0);
  check.field("stream_ordered", options.stream_ordered ? 1 : 0);
}

namespace {

// The signatures agreed on a communicator by its stream-ordered calls (needs_agreement).
struct AgreedSignatures {
  static constexpr size_t kMax = 4096;  // then forgotten, on every rank at the same call
  std::unordered_set<uint64_t> seen;
};

}  // namespace

bool needs_agreement(const ArgCheck& check, const Communicator& comm,
                     const DeviceAlgorithmOptions& options) {
  if (options.check_arguments == ArgumentCheck::kNever) return false;
  if (options.check_arguments == ArgumentCheck::kAlways || !options.stream_ordered) return true;
  return comm_attribute<AgreedSignatures>(comm).seen.count(check.signature()) == 0;
}

void agreed(const ArgCheck& check, const Communicator& comm,
            const DeviceAlgorithmOptions& options) {
  if (!options.stream_ordered || options.check_arguments != ArgumentCheck::kAuto) return;
  AgreedSignatures& signatures = comm_attribute<AgreedSignatures>(comm);
  if (signatures.seen.size() == AgreedSignatures::kMax) signatures.seen.clear();
  signatures.seen.insert(check.signature());
}

std::unique_ptr<DeviceOps> try_make_ops(ArgCheck& check, const DeviceAlgorithmOptions& options,
                                        std::exception_ptr& unavailable) {
  if (options.backend != DeviceBackend::kCuda && options.backend != DeviceBackend::kHostEmulation) {
    return nullptr;  // check_device_options reports it
  }
  try {
    return make_ops(options);
  } catch (const Unavailable& e) {
    check.fail(e.what());
    unavailable = std::current_exception();
    return nullptr;
  }
}

void settle(const ArgCheck& check, const Communicator& comm, const std::exception_ptr& unavailable,
            bool agree) {
  try {
    check.run(comm, agree);
  } catch (const InvalidArgument&) {
    if (unavailable) std::rethrow_exception(unavailable);
    throw;
  }
}

void check_pair(ArgCheck& check, const DeviceOps* ops, const char* op, ConstTensorView send,
                ConstTensorView recv) {
  check_device_view(check, ops, op, "send", send);
  check_device_view(check, ops, op, "recv", recv);
  check_same_dtype(check, op, send, recv);
}

void check_same_count_or_buffer(ArgCheck& check, const char* op, ConstTensorView send,
                                ConstTensorView recv) {
  if (check.ok() && recv.count != send.count) {
    check.fail(tagged("coll", op, ": recv has ", recv.count, " elements, send ", send.count));
  }
  if (check.ok() && send.data != recv.data &&
      overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(tagged("coll", op, ": send and recv overlap without being the same buffer"));
  }
}

}  // namespace hycc::comm
