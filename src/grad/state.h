// The state of a gradient compressor: one TensorState per key, and its serialized form.
//
// Blob layout (little-endian, as the machines we run on):
//   "HYGS" | u32 version (2) | u32 spec bytes | spec | u64 entries |
//   per entry, keys ascending: u64 key | u64 steps | i32 rank | i32 size | u64 count |
//                              u64 n0 | n0 x f32 (residual) | u64 n1 | n1 x f32 (aux)
//   | u64 XXH3-64 of everything before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace hycc::grad {

struct TensorState {
  uint64_t steps = 0;  // steps taken with this key
  int rank = -1;       // rank and size of the communicator of those steps (-1, 0: none yet)
  int size = 0;
  size_t count = 0;             // elements of the tensor
  std::vector<float> residual;  // worker-side error feedback residual (count values or empty)
  std::vector<float> aux;       // sign: server residual of this rank's chunk; powersgd: Q
};

using StateTable = std::map<uint64_t, TensorState>;

std::vector<std::byte> serialize_state(const std::string& spec, const StateTable& table);

// Throws CorruptStream for a malformed blob, InvalidArgument if it holds another spec.
StateTable deserialize_state(const std::string& spec, std::span<const std::byte> blob);

}  // namespace hycc::grad
