// Moving elements of any dtype to and from float, for codecs whose core works on binary32.
#pragma once

#include <cstddef>

#include "hycc/collectives.h"
#include "hycc/dtype.h"

namespace hycc::codec {

// Converts elements [begin, begin + n) of `in` to float (exact for every dtype).
void load_as_float(ConstTensorView in, size_t begin, size_t n, float* out);

// Stores `n` floats into elements [begin, begin + n) of `out`, rounding to nearest even.
void store_from_float(const float* in, size_t n, TensorView out, size_t begin);

// Converts a whole tensor between dtypes (round to nearest even), sizes must match.
void convert(ConstTensorView in, TensorView out);

// Largest |a - b| over two tensors of equal count (any dtypes), in float. Equal values
// (infinities of one sign included) and NaN against NaN differ by 0, so that the sampled error of
// a call whose input held them (an overflowed fp16 step) is its error on the rest; NaN against a
// number, or an infinity against anything else, gives infinity.
double max_abs_difference(ConstTensorView a, ConstTensorView b);

// acc[i] += element begin + i of `in` (float32 addition).
void add_f32(float* acc, ConstTensorView in, size_t begin, size_t n);
// Element begin + i of `out` = acc[i] (divided by `size` for an average), rounded once.
void store_result(const float* acc, size_t n, ReduceOp op, int size, TensorView out, size_t begin);

}  // namespace hycc::codec
