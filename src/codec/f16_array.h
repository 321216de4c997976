// Arrays of binary16 to and from binary32, round to nearest even: with the CPU's F16C
// instructions where it has them (x86-64, checked once at run time), with the branch-free
// functions of float_convert.h otherwise. Both give the same bits for every input, NaN payloads
// included (tests/unit/float_convert_test.cc compares them); F16C is 4-6x faster.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hycc::codec {

void f32_to_f16_array(const float* in, uint16_t* out, size_t n);
// bfloat16 from binary32 bits (float_convert.h's f32_bits_to_bf16 per element): one loop,
// compiled for baseline x86-64 and for x86-64-v3 (AVX2, picked at load time; 2x), the same
// integer arithmetic in both.
void f32_bits_to_bf16_array(const uint32_t* in, uint16_t* out, size_t n);
void f16_to_f32_array(const uint16_t* in, float* out, size_t n);

// The loops over float_convert.h's functions: what runs without F16C, and the tests' reference.
void f32_to_f16_array_portable(const float* in, uint16_t* out, size_t n);
void f16_to_f32_array_portable(const uint16_t* in, float* out, size_t n);

// The F16C loops, for the tests; call them only when f16c_available().
bool f16c_available();
void f32_to_f16_array_f16c(const float* in, uint16_t* out, size_t n);
void f16_to_f32_array_f16c(const uint16_t* in, float* out, size_t n);

}  // namespace hycc::codec
