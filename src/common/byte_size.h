// Byte counts as people write them: "1024", "64K", "1M", "2G" (powers of 1024, as nccl-tests
// reads them).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hycc {

// Parses N, NK, NM or NG (suffix in either case), at most 2^40 bytes. Throws InvalidArgument
// naming `what` otherwise.
size_t parse_byte_size(std::string_view text, std::string_view what);

// The shortest exact spelling: 65536 -> "64K", 1000 -> "1000".
std::string format_byte_size(size_t bytes);

}  // namespace hycc
