// Helpers of the collective tests: inputs with known results, the uncompressed reference
// (gather everything, reduce in rank order in float32), the documented error bounds, and the
// cross-rank bit-identity check. Every rank runs every test and every collective call, so checks
// use EXPECT (never an early return that would leave the other ranks waiting).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "coll/coll_internal.h"
#include "common/synthetic_data.h"
#include "common/xxh3.h"
#include "hycc/collectives.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc::test {

// Divides the large counts and segment sizes of the device tests under the sanitizers (the test
// code is compiled with HYCC_TEST_SANITIZED there), where instrumented codecs on oversubscribed
// ranks made them most of the suite's time: the divided counts still make several uneven
// segments and chunks, the code paths of the full ones, which the Release suite runs.
#ifdef HYCC_TEST_SANITIZED
constexpr size_t kSanitizerDivisor = 8;
#else
constexpr size_t kSanitizerDivisor = 1;
#endif

inline const Communicator& world() {
  static const Communicator w = Communicator::world();
  return w;
}

// What a call that may fail ended with.
enum class Outcome { kOk, kInvalid, kComm, kCorrupt, kUnavailable };

inline const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "success";
    case Outcome::kInvalid:
      return "InvalidArgument";
    case Outcome::kComm:
      return "CommError";
    case Outcome::kCorrupt:
      return "CorruptStream";
    case Outcome::kUnavailable:
      return "Unavailable";
  }
  return "?";
}

// Runs `call` and expects it to end with `want`; with a `message_part`, a failure's message
// must contain it.
template <typename F>
void expect_outcome(Outcome want, const std::string& what, const std::string& message_part,
                    F&& call) {
  Outcome got = Outcome::kOk;
  std::string message;
  try {
    call();
  } catch (const InvalidArgument& e) {
    got = Outcome::kInvalid;
    message = e.what();
  } catch (const CommError& e) {
    got = Outcome::kComm;
    message = e.what();
  } catch (const CorruptStream& e) {
    got = Outcome::kCorrupt;
    message = e.what();
  } catch (const Unavailable& e) {
    got = Outcome::kUnavailable;
    message = e.what();
  }
  EXPECT_EQ(outcome_name(got), std::string(outcome_name(want)))
      << what << " on rank " << world().rank() << ": " << message;
  if (got != Outcome::kOk && !message_part.empty()) {
    EXPECT_NE(message.find(message_part), std::string::npos) << what << ": " << message;
  }
}
template <typename F>
void expect_outcome(Outcome want, const std::string& what, F&& call) {
  expect_outcome(want, what, std::string(), std::forward<F>(call));
}

// The codecs every collective is tested with.
inline const std::vector<std::string>& test_codecs() {
  static const std::vector<std::string> specs = {
      "none", "quant:bits=8", "quant:bits=4", "eb:abs=1e-3", "zfp:rate=16", "mpc", "bf16"};
  return specs;
}
inline const std::vector<DType>& test_dtypes() {
  static const std::vector<DType> d = {DType::kF32, DType::kBF16, DType::kF16};
  return d;
}
inline constexpr size_t kLargeCount = 1000003;

// One test case: codec x dtype x element count x in place, for one algorithm.
struct Case {
  std::string codec;
  DType dtype = DType::kF32;
  size_t count = 0;
  bool in_place = false;
  Algorithm algorithm = Algorithm::kAuto;
  size_t segment_bytes = 1 << 20;
};

inline std::string case_name(const Case& c) {
  std::string codec;
  for (const char ch : c.codec) codec += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return std::string(coll::algorithm_name(c.algorithm)) + "_" + codec + "_" +
         std::string(dtype_name(c.dtype)) + "_n" + std::to_string(c.count) +
         (c.in_place ? "_inplace" : "") + "_seg" + std::to_string(c.segment_bytes);
}

struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<Case>& info) const {
    return case_name(info.param);
  }
};

// Cases for one algorithm: every codec x dtype x count in {0, 1, 7} x in/out of place (small
// segments in place, to cut a 7-element message into several segments), plus 1000003 elements
// for f32 out of place with every codec and in place for (bf16, none) and (f16, quant:bits=8).
// `codecs` restricts the codecs (native paths compress nothing).
inline std::vector<Case> make_cases(Algorithm a, const std::vector<std::string>& codecs,
                                    bool large = true) {
  std::vector<Case> cases;
  for (const std::string& codec : codecs) {
    for (const DType d : test_dtypes()) {
      for (const size_t n : {size_t{0}, size_t{1}, size_t{7}}) {
        for (const bool in_place : {false, true}) {
          cases.push_back({codec, d, n, in_place, a, in_place ? size_t{4} : size_t{1} << 20});
        }
      }
    }
    if (large) cases.push_back({codec, DType::kF32, kLargeCount, false, a, 64 << 10});
  }
  if (large) {
    cases.push_back({codecs.front(), DType::kBF16, kLargeCount, true, a, 64 << 10});
    if (codecs.size() > 1) {
      cases.push_back({"quant:bits=8", DType::kF16, kLargeCount, true, a, 64 << 10});
    }
  }
  return cases;
}

// Stochastic rounding: the noise differs per stream, yet every rank must end with the same bits
// (ranks holding the same partial sum must compress it into the same stream). Every dtype and
// the small counts of make_cases, plus 100000 f32 elements in several segments.
inline const std::string kStochasticCodec = "quant:bits=4,round=stochastic";
inline std::vector<Case> stochastic_cases(Algorithm a) {
  std::vector<Case> cases = make_cases(a, {kStochasticCodec}, false);
  cases.push_back({kStochasticCodec, DType::kF32, 100000, false, a, 64 << 10});
  return cases;
}

// The codecs the main grid leaves out (fp16, eb:rel, zfp:accuracy, zstd): every dtype and the
// small counts of make_cases, plus 100000 f32 elements in several segments each.
inline std::vector<Case> more_codec_cases(Algorithm a) {
  const std::vector<std::string> codecs = {"fp16", "eb:rel=1e-2", "zfp:accuracy=1e-3", "zstd"};
  std::vector<Case> cases = make_cases(a, codecs, false);
  for (const std::string& codec : codecs) {
    cases.push_back({codec, DType::kF32, 100000, false, a, 64 << 10});
  }
  return cases;
}

// Many small segments, and chunks whose segment counts differ (385 elements split over 2, 3, 4
// or 8 ranks leaves one chunk a segment longer), so that segments of different steps are in
// flight at once in the pipelined ring.
inline std::vector<Case> uneven_segment_cases(Algorithm a) {
  std::vector<Case> cases;
  for (const char* codec : {"mpc", "quant:bits=8", "eb:abs=1e-3"}) {
    for (const DType d : {DType::kF32, DType::kBF16}) {
      for (const bool in_place : {false, true}) cases.push_back({codec, d, 385, in_place, a, 64});
    }
  }
  return cases;
}

// The large count for every codec x dtype x in/out of place that make_cases does not already
// run (it runs f32 out of place with every codec and two 16-bit in-place cases). Suites built
// from these are named FullLarge*; the sanitizer build filters them out (tests/CMakeLists.txt).
inline std::vector<Case> full_large_cases(Algorithm a, bool skip_16bit_out_of_place = false) {
  std::vector<Case> cases;
  const std::vector<std::string>& codecs = test_codecs();
  for (const std::string& codec : codecs) {
    for (const DType d : test_dtypes()) {
      for (const bool in_place : {false, true}) {
        const bool covered = (d == DType::kF32 && !in_place) ||
                             (d == DType::kBF16 && in_place && codec == codecs.front()) ||
                             (d == DType::kF16 && in_place && codec == "quant:bits=8") ||
                             (skip_16bit_out_of_place && d != DType::kF32 && !in_place);
        if (!covered) cases.push_back({codec, d, kLargeCount, in_place, a, 64 << 10});
      }
    }
  }
  return cases;
}

inline CollectiveOptions options_for(const Case& c) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse(c.codec);
  o.algorithm = c.algorithm;
  o.threshold_bytes = c.algorithm == Algorithm::kNative ? o.threshold_bytes : 0;
  o.segment_bytes = c.segment_bytes;
  o.seed = 42;
  return o;
}

// ---- inputs ------------------------------------------------------------------------------------

// Small integers (exact in every dtype and in any summation order): in [-5, 8].
inline float exact_value(int rank, size_t i) {
  return static_cast<float>(rank % 5 - 2) + static_cast<float>(i % 7) - 3.0f;
}
// Uniform in [-1, 1), from a counter-based hash of (rank, i).
inline float lossy_value(int rank, size_t i) {
  const uint64_t h = splitmix64((static_cast<uint64_t>(rank) << 40) ^ i ^ 0x5eedull);
  return static_cast<float>(static_cast<double>(h >> 40) / 16777216.0 * 2.0 - 1.0);
}

// The input of `rank`: exact values for lossless codecs, uniform values otherwise.
inline Buffer make_input(DType dtype, size_t count, int rank, bool lossless, size_t offset = 0) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    v[i] = lossless ? exact_value(rank, offset + i) : lossy_value(rank, offset + i);
  }
  return Buffer::from_floats(dtype, v);
}

// ---- the reference -----------------------------------------------------------------------------

// Every rank's `mine`, gathered uncompressed (MPI_Allgather of the raw bytes), as floats.
inline std::vector<std::vector<float>> gather_all(const Buffer& mine) {
  const int p = world().size();
  const size_t bytes = mine.count() * dtype_size(mine.dtype());
  std::vector<std::byte> all(bytes * static_cast<size_t>(p) + 1);
  MPI_Allgather(mine.view().data, static_cast<int>(bytes), MPI_BYTE, all.data(),
                static_cast<int>(bytes), MPI_BYTE, world().mpi());
  std::vector<std::vector<float>> out(static_cast<size_t>(p), std::vector<float>(mine.count()));
  for (int j = 0; j < p; ++j) {
    const ConstTensorView v{mine.dtype(), mine.count(),
                            all.data() + bytes * static_cast<size_t>(j)};
    codec::load_as_float(v, 0, mine.count(), out[static_cast<size_t>(j)].data());
  }
  return out;
}

// The obvious allreduce: sum in rank order in float32 (x_0, then += x_j), average, round once.
inline Buffer reference_reduce(const std::vector<std::vector<float>>& inputs, DType dtype,
                               ReduceOp op) {
  const size_t n = inputs.empty() ? 0 : inputs[0].size();
  std::vector<float> sum(n);
  for (size_t j = 0; j < inputs.size(); ++j) {
    for (size_t i = 0; i < n; ++i) sum[i] = j == 0 ? inputs[0][i] : sum[i] + inputs[j][i];
  }
  if (op == ReduceOp::kAverage) {
    for (float& s : sum) s /= static_cast<float>(inputs.size());
  }
  return Buffer::from_floats(dtype, sum);
}

// The exact (double) sum or average of the inputs.
inline std::vector<double> exact_reduce(const std::vector<std::vector<float>>& inputs,
                                        ReduceOp op) {
  const size_t n = inputs.empty() ? 0 : inputs[0].size();
  std::vector<double> sum(n, 0.0);
  for (const auto& in : inputs) {
    for (size_t i = 0; i < n; ++i) sum[i] += in[i];
  }
  if (op == ReduceOp::kAverage) {
    for (double& s : sum) s /= static_cast<double>(inputs.size());
  }
  return sum;
}

// ---- error bounds ------------------------------------------------------------------------------

// Bound of one compression of a partial sum of k inputs, each |x| <= 1 (range 2): the codec's
// documented error. zfp fixed-rate has no bound: 2^-8 of the magnitude is ~5x what rate 16
// measures on this data.
inline double compression_error(const std::string& spec, int k) {
  if (spec == "none" || spec == "mpc") return 0;
  if (spec.rfind("quant:bits=", 0) == 0) {
    // Half a step of the range when rounding to nearest, below a whole step stochastically.
    const int bits = std::stoi(spec.substr(11));
    const double steps = spec.find("round=stochastic") != std::string::npos ? 1.0 : 0.5;
    return (2.0 * k * steps / ((1 << bits) - 1)) * 1.001 + 1e-6 * k;
  }
  if (spec.rfind("eb:abs=", 0) == 0) return std::stod(spec.substr(7));
  // eb:rel bounds the error by X times the value range of what it compresses (at most 2k).
  if (spec.rfind("eb:rel=", 0) == 0) return std::stod(spec.substr(7)) * 2.0 * k * 1.001;
  if (spec.rfind("zfp:accuracy=", 0) == 0) return std::stod(spec.substr(13));
  if (spec == "fp16") return k * std::ldexp(1.0, -11);
  if (spec == "zfp:rate=16") return k * std::ldexp(1.0, -8);
  if (spec == "bf16") return k * std::ldexp(1.0, -8);
  ADD_FAILURE() << "no error model for " << spec;
  return 0;
}

// Error of the ring reduce-scatter: the partial sums of 1 .. p-1 inputs are compressed once each.
inline double ring_reduce_scatter_error(const std::string& spec, int p) {
  double e = 0;
  for (int k = 1; k < p; ++k) e += compression_error(spec, k);
  return e;
}

// Relative size of half an ulp of the dtype (with margin: a whole ulp).
inline double dtype_rel_ulp(DType d) {
  return d == DType::kF32    ? std::ldexp(1.0, -23)
         : d == DType::kBF16 ? std::ldexp(1.0, -7)
                             : std::ldexp(1.0, -10);
}

// Checks |got - exact| <= bound plus rounding (into the dtype, of each compression's output,
// and of float32 additions) for every element.
inline void expect_within(const Buffer& got, const std::vector<double>& exact, double bound,
                          int compressions, const std::string& what) {
  const std::vector<float> g = got.to_floats();
  const int p = world().size();
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double mag = std::fabs(exact[i]) + bound;
    const double tol = bound + (1 + compressions) * dtype_rel_ulp(got.dtype()) * mag +
                       p * std::ldexp(1.0, -22) * (p + mag);
    const double err = std::fabs(double(g[i]) - exact[i]);
    if (!(err <= tol)) {
      if (bad++ == 0) first = i;
      worst = std::max(worst, err / tol);
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << g.size()
                     << " elements out of bound; first at " << first << " got "
                     << (g.empty() ? 0.f : g[first]) << " exact " << (g.empty() ? 0. : exact[first])
                     << " bound " << bound << " worst error/tolerance " << worst;
}

inline void expect_bits_equal(const Buffer& got, const Buffer& want, const std::string& what) {
  const std::vector<float> g = got.to_floats(), w = want.to_floats();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::memcmp(&g[i], &w[i], 4) != 0 && bad++ == 0) first = i;
  }
  EXPECT_TRUE(got.bits_equal(want))
      << what << ": " << bad << " of " << g.size()
      << " elements differ from the reference; first at " << first << " got "
      << (g.empty() ? 0.f : g[first]) << " want " << (w.empty() ? 0.f : w[first]);
}

// Every rank holds the same bytes (a checksum compared through MPI_Allgather).
inline void expect_identical_across_ranks(const Buffer& b, const std::string& what) {
  const uint64_t mine = xxh3(b.view().data, b.count() * dtype_size(b.dtype()));
  std::vector<uint64_t> all(static_cast<size_t>(world().size()));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, world().mpi());
  for (size_t j = 0; j < all.size(); ++j) {
    EXPECT_EQ(all[j], all[0]) << what << ": rank " << j << " holds different bits than rank 0";
  }
}

// Elements [offset, offset + count) of a Buffer, as a view and as a copy.
inline TensorView view_of(Buffer& b, size_t offset, size_t count) {
  return {b.dtype(), count, static_cast<std::byte*>(b.data()) + offset * dtype_size(b.dtype())};
}
inline Buffer part_of(const Buffer& b, size_t offset, size_t count) {
  Buffer c(b.dtype(), count);
  if (count != 0) {
    std::memcpy(c.data(),
                static_cast<const std::byte*>(b.view().data) + offset * dtype_size(b.dtype()),
                count * dtype_size(b.dtype()));
  }
  return c;
}
inline std::vector<double> as_doubles(const std::vector<float>& v, size_t offset, size_t count) {
  return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(offset),
                             v.begin() + static_cast<std::ptrdiff_t>(offset + count));
}

// A copy of a Buffer (same dtype and bits).
inline Buffer clone(const Buffer& b) {
  Buffer c(b.dtype(), b.count());
  if (b.count() != 0) std::memcpy(c.data(), b.view().data, b.count() * dtype_size(b.dtype()));
  return c;
}

}  // namespace hycc::test
