// Typed exceptions of the hycc library. The library never exits or aborts: every failure is
// reported as one of these, with a component tag in the message ("[codec:quant] ...").
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hycc {

// Base of every hycc exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed something invalid: a bad spec string, a buffer of the wrong size, an
// unsupported dtype. Fix the call, retrying will not help.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A compressed stream is malformed: truncated, corrupted (checksum), or inconsistent with the
// buffer it is decoded into.
class CorruptStream : public Error {
 public:
  using Error::Error;
};

// Communication failed: an MPI call returned an error, a peer sent something unexpected, or
// ranks disagree on a collective's arguments (buffer sizes, codecs, dtypes).
class CommError : public Error {
 public:
  using Error::Error;
};

// Reading or writing a file failed (a statistics file, a checkpoint).
class IoError : public Error {
 public:
  using Error::Error;
};

// A feature exists in the API but is not available in this build (e.g. CUDA without nvcc).
class Unavailable : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Builds "[component] part1part2..." for exception messages.
template <typename... Args>
std::string tagged(std::string_view component, const Args&... args) {
  return detail::concat("[", component, "] ", args...);
}

}  // namespace hycc
