// A tensor of a device benchmark: device memory with CUDA, host memory for the host emulation of
// the device (DeviceBackend::kHostEmulation), with the copies both need.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "hycc/device.h"

namespace hycc::bench {

struct BenchMemory {
  bool cuda = false;
  std::vector<std::byte> host;
  DeviceBuffer device;

  BenchMemory(bool on_device, size_t bytes) : cuda(on_device) {
    if (cuda) {
      device = DeviceBuffer(std::max<size_t>(bytes, 1));
    } else {
      host.resize(std::max<size_t>(bytes, 1));
    }
  }
  void* data() { return cuda ? device.data() : host.data(); }
  const void* data() const { return cuda ? device.data() : host.data(); }
  // Host bytes into this memory.
  void load(const void* bytes, size_t n) {
    if (cuda) {
      copy_to_device(device.data(), bytes, n);
    } else {
      std::memcpy(host.data(), bytes, n);
    }
  }
  void load(const std::vector<std::byte>& bytes) { load(bytes.data(), bytes.size()); }
  // The first n bytes of `from` (memory of the same kind) into this memory; waits for it.
  void copy_from(const BenchMemory& from, size_t n) {
    if (cuda) {
      copy_on_device(device.data(), from.data(), n);
      synchronize_device();
    } else {
      std::memcpy(host.data(), from.data(), n);
    }
  }
  // The first n bytes, on the host.
  void store(void* out, size_t n) const {
    if (cuda) {
      copy_to_host(out, device.data(), n);
    } else {
      std::memcpy(out, host.data(), n);
    }
  }
  std::vector<std::byte> bytes(size_t n) const {
    std::vector<std::byte> out(n);
    store(out.data(), n);
    return out;
  }
};

}  // namespace hycc::bench
