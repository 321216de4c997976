// Payload integrity for the device collectives (transport.h): a transport around another one
// that appends each payload's checksum (payload_checksum.h, 8 bytes, computed on the device) and
// verifies it on arrival. A payload that fails is handed on as it came (the algorithm decodes or
// forwards it, so that the message pattern completes and the ranks further on detect it too) and
// the failure is kept for integrity_error(): the call then throws CorruptStream on this rank.
// A forwarded payload carries the checksum it arrived with, not one of its possibly altered
// bytes.
#include <cstring>
#include <utility>

#include "comm/tags.h"
#include "comm/transport.h"

namespace hycc::comm {
namespace {

class ChecksumTransport final : public Transport {
 public:
  ChecksumTransport(DeviceOps& ops, std::unique_ptr<Transport> inner)
      : ops_(ops), inner_(std::move(inner)) {}

  const char* name() const override { return inner_->name(); }

  void post_send(int peer, Payload&& payload, uint64_t round) override {
    const uint64_t sum =
        payload.has_checksum ? payload.checksum : ops_.checksum(payload.data(), payload.size);
    ops_.copy_to_device(static_cast<std::byte*>(payload.data()) + payload.size, &sum, 8);
    ops_.synchronize();  // `sum` lives on this stack
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
    uint64_t stored = 0;
    ops_.copy_to_host(&stored, static_cast<const std::byte*>(into.data()) + into.size, 8);
    ops_.synchronize();
    if (ops_.checksum(into.data(), into.size) != stored) {
      fail(tagged("coll:device", "a payload of ", into.size, " bytes from rank ", peer,
                  " fails its checksum (altered on its way)"));
    }
    into.checksum = stored;
    into.has_checksum = true;
  }

  void progress() override { inner_->progress(); }
  bool recv_arrived() override { return inner_->recv_arrived(); }
  void reclaim(std::vector<Payload>& free, bool wait) override { inner_->reclaim(free, wait); }
  void finish(std::vector<Payload>& free) override { inner_->finish(free); }
  const std::string& integrity_error() const override { return error_; }

 private:
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

  DeviceOps& ops_;
  std::unique_ptr<Transport> inner_;
  std::deque<int> peers_;  // of the announced receives, in order
  std::string error_;
};

}  // namespace

std::unique_ptr<Transport> with_checksums(DeviceOps& ops, std::unique_ptr<Transport> inner) {
  return std::make_unique<ChecksumTransport>(ops, std::move(inner));
}

}  // namespace hycc::comm
