// Payload checks a stream-ordered call leaves to the device: the decoders of codecs that check a
// payload's structure on the device (quant's block headers) record a malformed payload in a word
// of pinned memory instead of the host waiting for the check (DeviceOps::defer_decode_checks),
// and the word stays with the communicator until the device has passed the call; the next device
// call raises what it found (raise_deferred_integrity), as for the checksums.
#pragma once

#include <memory>

#include "comm/transport.h"
#include "device/device_ops.h"
#include "hycc/codec.h"

namespace hycc::comm {

class DecodeChecks;

// For one call: while it lives, `ops` defers the checks of `codec` if the call is stream-ordered
// and the codec checks payloads on the device; otherwise it does nothing.
class DeferredDecodeChecks {
 public:
  DeferredDecodeChecks(device::DeviceOps& ops, bool stream_ordered, const CodecConfig& codec);
  ~DeferredDecodeChecks();
  DeferredDecodeChecks(const DeferredDecodeChecks&) = delete;
  DeferredDecodeChecks& operator=(const DeferredDecodeChecks&) = delete;

  // Once the call's work is queued: kept with `comm` until the device has passed it.
  void defer(const Communicator& comm);

 private:
  device::DeviceOps& ops_;
  std::shared_ptr<DecodeChecks> checks_;
};

}  // namespace hycc::comm
