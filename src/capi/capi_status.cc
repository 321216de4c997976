// The C API's error reporting: statuses, this thread's last error, the version.
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

#include "capi/capi_internal.h"
#include "hycc/config.h"
#include "hycc/error.h"

namespace hycc::capi {
namespace {

thread_local std::string last_error;

}  // namespace

hycc_status fail(hycc_status status, const std::string& message) {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still tells the kind
  }
  return status;
}

hycc_status succeed() {
  last_error.clear();
  return HYCC_OK;
}

hycc_status fail_current_exception() noexcept {
  try {
    throw;
  } catch (const InvalidArgument& e) {
    return fail(HYCC_ERR_INVALID_ARGUMENT, e.what());
  } catch (const CorruptStream& e) {
    return fail(HYCC_ERR_CORRUPT_STREAM, e.what());
  } catch (const CommError& e) {
    return fail(HYCC_ERR_COMM, e.what());
  } catch (const IoError& e) {
    return fail(HYCC_ERR_IO, e.what());
  } catch (const Unavailable& e) {
    return fail(HYCC_ERR_UNAVAILABLE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(HYCC_ERR_NO_MEMORY, "[capi] out of memory");
  } catch (const std::exception& e) {
    return fail(HYCC_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(HYCC_ERR_INTERNAL, "[capi] unknown exception");
  }
}

DType to_dtype(int dtype, const char* function) {
  if (dtype < 0 || !is_valid_dtype(static_cast<uint8_t>(dtype))) {
    throw InvalidArgument(tagged("capi", function, ": dtype ", dtype,
                                 " is not HYCC_F32 (0), HYCC_BF16 (1) or HYCC_F16 (2)"));
  }
  return static_cast<DType>(dtype);
}

const hycc_codec& codec_of(const hycc_codec* codec, const char* function) {
  if (codec == nullptr) throw InvalidArgument(tagged("capi", function, ": codec is NULL"));
  return *codec;
}

void require(bool condition, const char* function, const char* what) {
  if (!condition) throw InvalidArgument(tagged("capi", function, ": ", what));
}

void require_count(size_t count, DType dtype, const char* function, const char* name) {
  if (count > SIZE_MAX / dtype_size(dtype)) {
    throw InvalidArgument(tagged("capi", function, ": ", name, " of ", count, " elements of ",
                                 dtype_name(dtype), " exceeds the address space"));
  }
}

void require_buffer(const void* data, size_t count, DType dtype, const char* function,
                    const char* name) {
  require_count(count, dtype, function, name);
  if (data == nullptr && count > 0) {
    throw InvalidArgument(
        tagged("capi", function, ": ", name, " is NULL with ", count, " elements"));
  }
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) != 0) {
    throw InvalidArgument(tagged("capi", function, ": ", name, " is not aligned to its ",
                                 dtype_size(dtype), "-byte ", dtype_name(dtype), " elements"));
  }
}

}  // namespace hycc::capi

extern "C" {

const char* hycc_last_error(void) { return hycc::capi::last_error.c_str(); }

const char* hycc_status_name(int status) {
  switch (status) {
    case HYCC_OK:
      return "HYCC_OK";
    case HYCC_ERR_INVALID_ARGUMENT:
      return "HYCC_ERR_INVALID_ARGUMENT";
    case HYCC_ERR_CORRUPT_STREAM:
      return "HYCC_ERR_CORRUPT_STREAM";
    case HYCC_ERR_COMM:
      return "HYCC_ERR_COMM";
    case HYCC_ERR_IO:
      return "HYCC_ERR_IO";
    case HYCC_ERR_UNAVAILABLE:
      return "HYCC_ERR_UNAVAILABLE";
    case HYCC_ERR_NO_MEMORY:
      return "HYCC_ERR_NO_MEMORY";
    case HYCC_ERR_INTERNAL:
      return "HYCC_ERR_INTERNAL";
    default:
      return "unknown status";
  }
}

const char* hycc_version(void) { return HYCC_VERSION; }

int hycc_abi_version(void) { return HYCC_ABI_VERSION; }

void hycc_free(void* p) { std::free(p); }

}  // extern "C"
