// Byte counts with K/M/G suffixes (see byte_size.h).
#include "common/byte_size.h"

#include <cctype>

#include "hycc/error.h"

namespace hycc {

size_t parse_byte_size(std::string_view text, std::string_view what) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string_view suffix = text.substr(digits);
  int shift = -1;
  if (suffix.empty()) {
    shift = 0;
  } else if (suffix.size() == 1) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(suffix[0])));
    shift = c == 'k' ? 10 : c == 'm' ? 20 : c == 'g' ? 30 : -1;
  }
  size_t value = 0;
  bool ok = digits > 0 && digits <= 13 && shift >= 0;
  for (size_t i = 0; ok && i < digits; ++i) value = value * 10 + size_t(text[i] - '0');
  ok = ok && value <= (size_t{1} << (40 - shift));
  if (!ok) {
    throw InvalidArgument(tagged("size", "bad byte count '", text, "' for ", what,
                                 ": expected N, NK, NM or NG (at most 2^40 bytes)"));
  }
  return value << shift;
}

std::string format_byte_size(size_t bytes) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

}  // namespace hycc
