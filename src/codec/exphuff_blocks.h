// The per-block passes of the "exphuff" codec (layout in codec_exphuff.cc): splitting elements
// into exponents and rests, joining them back, and the four interleaved code streams of a
// Huffman-coded block. Specialized per element format; the reference (exphuff_reference.h)
// does the same one bit at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/exphuff_table.h"
#include "hycc/dtype.h"

namespace hycc::codec::exphuff {

// Elements [begin, begin + n) of `in`: exponents into exponents[0, n), rests into their place in
// the rest area, exponent counts added to histogram[0, 256).
void split_block(ConstTensorView in, size_t begin, size_t n, uint8_t* rest_area, uint8_t* exponents,
                 uint64_t* histogram);

// The inverse: elements [begin, begin + n) of `out` from exponents[0, n) and the rest area (of
// rest_bytes bytes).
void join_block(const uint8_t* rest_area, size_t rest_bytes, const uint8_t* exponents, size_t begin,
                size_t n, TensorView out);

// Writes the stream sizes and the streams of exponents[0, n); returns their bytes. May write up
// to 8 bytes past them.
size_t encode_streams(const uint8_t* exponents, size_t n, std::span<const Code> codes,
                      uint8_t* out);

// The sizes of a coded block's streams: `sizes` holds the stream-size field, which with the
// streams after it takes `bytes` bytes. Throws CorruptStream where they do not fit.
std::array<size_t, kStreams> stream_sizes(const uint8_t* sizes, size_t bytes);

// Decodes n exponents from the stream sizes and streams in[0, bytes) with `table`
// (build_decoding_table). Throws CorruptStream where they are malformed.
void decode_streams(const uint8_t* in, size_t bytes, size_t n, const uint16_t* table,
                    uint8_t* exponents);

}  // namespace hycc::codec::exphuff
