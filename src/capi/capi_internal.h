// What the C API's translation units share: the handles behind the opaque C types, the
// exception barrier and the checks of C arguments.
#pragma once

#include <mpi.h>

#include <string>

#include "hycc/codec.h"
#include "hycc/comm.h"
#include "hycc/dtype.h"
#include "hycc/hycc.h"
#include "hycc/policy_engine.h"

struct hycc_codec {
  hycc::CodecConfig config;
};

struct hycc_engine {
  hycc::PolicyEngine engine;
};

namespace hycc::capi {

// Records `message` as this thread's last error and returns `status`.
hycc_status fail(hycc_status status, const std::string& message);
// Clears this thread's last error and returns HYCC_OK.
hycc_status succeed();
// Translates the exception being handled (inside a catch block) into a status.
hycc_status fail_current_exception() noexcept;

// Runs `body`, translating hycc's typed exceptions (and any other) into a status and this
// thread's last error: nothing escapes into C.
template <typename Body>
hycc_status guarded(Body&& body) noexcept {
  try {
    body();
    return succeed();
  } catch (...) {
    return fail_current_exception();
  }
}

// Throw InvalidArgument naming the function and the argument at fault.
DType to_dtype(int dtype, const char* function);
const hycc_codec& codec_of(const hycc_codec* codec, const char* function);
void require(bool condition, const char* function, const char* what);
// The byte size of count elements of dtype must not overflow.
void require_count(size_t count, DType dtype, const char* function, const char* name);
// count elements of dtype at data: data may be NULL only when count is 0, must be aligned to the
// element size, and the byte size must not overflow.
void require_buffer(const void* data, size_t count, DType dtype, const char* function,
                    const char* name);

// `comm` as a Communicator named after its MPI name (the policy's dimension). Throws CommError
// when MPI is not initialized (or already finalized) and InvalidArgument for MPI_COMM_NULL.
Communicator communicator_of(MPI_Comm comm, const char* function);

}  // namespace hycc::capi
