#include "comm/decode_checks.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "codec/device_codecs.h"
#include "hycc/error.h"

namespace hycc::comm {

// What the device's decoders found in a call's payloads: words[0] 1 where a payload was
// malformed, words[1] 1 once the device has passed the call.
class DecodeChecks final : public PendingIntegrity {
 public:
  explicit DecodeChecks(device::DeviceOps& ops)
      : memory_(ops.allocate_pinned(2 * sizeof(uint32_t))) {
    std::memset(memory_.data(), 0, 2 * sizeof(uint32_t));
  }
  uint32_t* failed() const { return static_cast<uint32_t*>(memory_.data()); }
  uint32_t* passed() const { return failed() + 1; }

  bool done() const override { return device::load_signal(passed()) != 0; }
  std::string error() const override {
    if (device::load_signal(failed()) == 0) return "";
    return tagged("coll:device", "a received payload is malformed (a block header its codec's ",
                  "decoder rejects)");
  }

 private:
  device::Memory memory_;
};

DeferredDecodeChecks::DeferredDecodeChecks(device::DeviceOps& ops, bool stream_ordered,
                                           const CodecConfig& codec)
    : ops_(ops) {
  if (!stream_ordered || !codec::checks_payloads_on_device(codec)) return;
  checks_ = std::make_shared<DecodeChecks>(ops);
  ops_.defer_decode_checks(checks_->failed());
}

DeferredDecodeChecks::~DeferredDecodeChecks() {
  if (checks_) ops_.defer_decode_checks(nullptr);
}

void DeferredDecodeChecks::defer(const Communicator& comm) {
  if (!checks_) return;
  ops_.signal(checks_->passed(), 1);
  defer_integrity(comm, checks_);
}

}  // namespace hycc::comm
