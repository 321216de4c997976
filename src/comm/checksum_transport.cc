// Payload integrity for the device collectives (transport.h): a transport around another one
// that appends each payload's checksum (payload_checksum.h, 8 bytes) and verifies it on arrival,
// both queued on the device: the host neither computes nor reads a checksum. A payload that fails
// is handed on as it came (the algorithm decodes or forwards it, so that the message pattern
// completes and the ranks further on detect it too); the device records the first failure in a
// word of pinned memory, which integrity_error() reads after waiting for the device, and a
// stream-ordered call leaves to the communicator's next call (deferred_integrity).
// A forwarded payload keeps the trailer it arrived with (its buffer holds it after the payload),
// not a checksum of its possibly altered bytes.
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "comm/comm_attribute.h"
#include "comm/tags.h"
#include "comm/transport.h"

namespace hycc::comm {
namespace {

// What the device found about one call's payloads: words_[0] the ordinal + 1 of the first
// payload that failed (0: none), words_[1] 1 once the device has passed the call.
class Verifications final : public PendingIntegrity {
 public:
  explicit Verifications(DeviceOps& ops) : memory_(ops.allocate_pinned(2 * sizeof(uint32_t))) {
    std::memset(memory_.data(), 0, 2 * sizeof(uint32_t));
  }

  uint32_t* failed() { return words(); }
  uint32_t* passed() { return words() + 1; }
  uint32_t add(int peer, size_t bytes) {
    received_.push_back({peer, bytes});
    return static_cast<uint32_t>(received_.size() - 1);
  }

  bool done() const override { return device::load_signal(words() + 1) != 0; }
  std::string error() const override {
    const uint32_t first = device::load_signal(words());
    if (first == 0 || first > received_.size()) return "";
    const auto& [peer, bytes] = received_[first - 1];
    return tagged("coll:device", "a payload of ", bytes, " bytes from rank ", peer,
                  " fails its checksum (altered on its way)");
  }

 private:
  uint32_t* words() const { return static_cast<uint32_t*>(memory_.data()); }

  device::Memory memory_;
  std::vector<std::pair<int, size_t>> received_;  // (peer, payload bytes) by ordinal
};

class ChecksumTransport final : public Transport {
 public:
  ChecksumTransport(DeviceOps& ops, std::unique_ptr<Transport> inner)
      : ops_(ops), inner_(std::move(inner)), found_(std::make_shared<Verifications>(ops)) {}

  const char* name() const override { return inner_->name(); }

  void post_send(int peer, Payload&& payload, uint64_t round) override {
    auto* trailer = static_cast<std::byte*>(payload.data()) + payload.size;
    if (!payload.has_checksum) ops_.write_checksum(payload.data(), payload.size, trailer);
    payload.size += kPayloadTrailer;
    inner_->post_send(peer, std::move(payload), round);
  }

  void post_recv(int peer, size_t capacity, uint64_t round) override {
    peers_.push_back(peer);
    inner_->post_recv(peer, capacity + kPayloadTrailer, round);
  }

  void receives_announced() override { inner_->receives_announced(); }

  void wait_recv(Payload& into) override {
    inner_->wait_recv(into);
    const int peer = peers_.front();
    peers_.pop_front();
    into.has_checksum = false;
    if (into.size < kPayloadTrailer) {
      fail(tagged("coll:device", "a payload from rank ", peer, " has ", into.size,
                  " bytes, less than its checksum"));
      into.size = 0;
      return;
    }
    into.size -= kPayloadTrailer;
    const auto* trailer = static_cast<const std::byte*>(into.data()) + into.size;
    ops_.verify_checksum(into.data(), into.size, trailer, found_->failed(),
                         found_->add(peer, into.size));
    into.has_checksum = true;  // the trailer stays after the payload in its buffer
  }

  void progress() override { inner_->progress(); }
  bool recv_arrived() override { return inner_->recv_arrived(); }
  void reclaim(std::vector<Payload>& free, bool wait) override { inner_->reclaim(free, wait); }
  void finish(std::vector<Payload>& free) override { inner_->finish(free); }

  std::string integrity_error() override {
    if (!error_.empty()) return error_;
    ops_.synchronize();
    return found_->error();
  }

  std::shared_ptr<const PendingIntegrity> deferred_integrity() override {
    if (!error_.empty()) throw CorruptStream(error_);  // known on the host: at once
    ops_.signal(found_->passed(), 1);
    return found_;
  }

 private:
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

  DeviceOps& ops_;
  std::unique_ptr<Transport> inner_;
  std::deque<int> peers_;  // of the announced receives, in order
  std::shared_ptr<Verifications> found_;
  std::string error_;  // found on the host (a payload shorter than its checksum)
};

// The deferred checks of a communicator's stream-ordered calls, oldest first.
struct DeferredChecks {
  std::deque<std::shared_ptr<const PendingIntegrity>> pending;
};

}  // namespace

void defer_integrity(const Communicator& comm, std::shared_ptr<const PendingIntegrity> pending) {
  comm_attribute<DeferredChecks>(comm).pending.push_back(std::move(pending));
}

void raise_deferred_integrity(const Communicator& comm) {
  auto& pending = comm_attribute<DeferredChecks>(comm).pending;
  std::string first;
  for (auto it = pending.begin(); it != pending.end();) {
    if (!(*it)->done()) {
      ++it;
      continue;
    }
    if (first.empty()) first = (*it)->error();
    it = pending.erase(it);
  }
  if (!first.empty()) {
    throw CorruptStream(first + " (in a stream-ordered call on this communicator that had " +
                        "returned; found by this call)");
  }
}

std::unique_ptr<Transport> with_checksums(DeviceOps& ops, std::unique_ptr<Transport> inner) {
  return std::make_unique<ChecksumTransport>(ops, std::move(inner));
}

}  // namespace hycc::comm
