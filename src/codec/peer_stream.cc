#include "codec/peer_stream.h"

#include "hycc/error.h"

namespace hycc::codec {

void decode_peer_stream(std::span<const std::byte> stream, TensorView out) {
  try {
    decompress(stream, out);
  } catch (const InvalidArgument& e) {  // a well-formed stream of another shape
    throw CorruptStream(tagged("coll", "a peer's stream does not match the expected ", out.count,
                               " ", dtype_name(out.dtype), " elements: ", e.what()));
  }
}

}  // namespace hycc::codec
