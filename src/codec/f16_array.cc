#include "codec/f16_array.h"

#include "codec/float_convert.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define HYCC_HAVE_F16C_PATH 1
#else
#define HYCC_HAVE_F16C_PATH 0
#endif

// Function multiversioning (GCC on x86-64), not under ThreadSanitizer: see codec_quant.cc.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define HYCC_BF16_X86_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define HYCC_BF16_X86_CLONES
#endif

namespace hycc::codec {

HYCC_BF16_X86_CLONES void f32_bits_to_bf16_array(const uint32_t* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = f32_bits_to_bf16(in[i]);
}

void f32_to_f16_array_portable(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

void f16_to_f32_array_portable(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

#if HYCC_HAVE_F16C_PATH

namespace {

// CPUID leaf 1 and XGETBV, read directly: clang's __builtin_cpu_supports knows no "f16c".
bool cpu_has_avx_and_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const unsigned osxsave = 1u << 27, avx = 1u << 28, f16c = 1u << 29;
  if ((ecx & (osxsave | avx | f16c)) != (osxsave | avx | f16c)) return false;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  return (xcr0_low & 6u) == 6u;  // the operating system saves the XMM and YMM registers
}

}  // namespace

bool f16c_available() {
  static const bool available = cpu_has_avx_and_f16c();
  return available;
}

// VCVTPS2PH with round to nearest even gives float_convert.h's bits for all 2^32 inputs, whatever
// MXCSR's FTZ and DAZ (binary32 denormals round to a signed zero either way).
__attribute__((target("avx,f16c"))) void f32_to_f16_array_f16c(const float* in, uint16_t* out,
                                                               size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  f32_to_f16_array_portable(in + i, out + i, n - i);
}

// VCVTPH2PS widens exactly but quiets signaling NaNs, which f16_to_f32_bits keeps as they are: a
// block of 8 holding one goes the portable way.
__attribute__((target("avx,f16c"))) void f16_to_f32_array_f16c(const uint16_t* in, float* out,
                                                               size_t n) {
  const __m128i exponent_and_quiet = _mm_set1_epi16(0x7e00);
  const __m128i infinity_or_signaling = _mm_set1_epi16(0x7c00);
  const __m128i low_payload = _mm_set1_epi16(0x01ff);
  const __m128i zero = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i top =
        _mm_cmpeq_epi16(_mm_and_si128(h, exponent_and_quiet), infinity_or_signaling);
    const __m128i no_payload = _mm_cmpeq_epi16(_mm_and_si128(h, low_payload), zero);
    if (_mm_movemask_epi8(_mm_andnot_si128(no_payload, top)) != 0) {
      f16_to_f32_array_portable(in + i, out + i, 8);
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  f16_to_f32_array_portable(in + i, out + i, n - i);
}

#else

bool f16c_available() { return false; }
void f32_to_f16_array_f16c(const float* in, uint16_t* out, size_t n) {
  f32_to_f16_array_portable(in, out, n);
}
void f16_to_f32_array_f16c(const uint16_t* in, float* out, size_t n) {
  f16_to_f32_array_portable(in, out, n);
}

#endif

void f32_to_f16_array(const float* in, uint16_t* out, size_t n) {
  if (f16c_available()) {
    f32_to_f16_array_f16c(in, out, n);
  } else {
    f32_to_f16_array_portable(in, out, n);
  }
}

void f16_to_f32_array(const uint16_t* in, float* out, size_t n) {
  if (f16c_available()) {
    f16_to_f32_array_f16c(in, out, n);
  } else {
    f16_to_f32_array_portable(in, out, n);
  }
}

}  // namespace hycc::codec
