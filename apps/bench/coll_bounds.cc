#include "coll_bounds.h"

#include <cmath>
#include <limits>

#include "bench_util.h"
#include "codec/spec_args.h"

namespace hycc::bench {
namespace {

// Ring reduce-scatter: hop k (k = 1 .. p-1) compresses a partial sum of k inputs.
double ring_reduce_scatter_error(const ErrorModel& m, int p, double a) {
  double total = 0;
  for (int k = 1; k < p; ++k) total += m.per_compression(double(k) * a + total);
  return total;
}

// Ring allreduce: the reduce-scatter, then the owner compresses the reduced chunk (averaged first)
// once for the allgather.
double ring_allreduce_error(const ErrorModel& m, ReduceOp redop, int p, double a) {
  double total = ring_reduce_scatter_error(m, p, a);
  if (redop == ReduceOp::kAverage) total /= p;
  const double mag = redop == ReduceOp::kAverage ? a : double(p) * a;
  return total + m.per_compression(mag + total);
}

// Two-level: the ring over p / per_node nodes whose inputs are exact node sums within per_node a;
// the average divides by p at the end, as the flat ring's.
double two_level_allreduce_error(const ErrorModel& m, ReduceOp redop, int p, int per_node,
                                 double a) {
  const int nodes = p / per_node;
  const double node_a = double(per_node) * a;
  double total = ring_reduce_scatter_error(m, nodes, node_a);
  if (redop == ReduceOp::kAverage) total /= p;
  const double mag = redop == ReduceOp::kAverage ? a : double(p) * a;
  return total + m.per_compression(mag + total);
}

// Recursive doubling: with p2 the largest power of two <= p, folded pairs first add one
// compressed input; each level doubles the error and adds two compressions of partial sums
// (E_L = 2 E_{L-1} + 2 e(M_L), at most (3 p2 - 2) eb for an absolute bound eb). Averaged at the
// end.
double recursive_doubling_error(const ErrorModel& m, ReduceOp redop, int p, double a) {
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const bool folded = p > p2;
  double total = folded ? m.per_compression(a) : 0;
  double mag = folded ? 2.0 * a : a;
  for (int d = 1; d < p2; d <<= 1, mag *= 2) total = 2 * total + 2 * m.per_compression(mag + total);
  return redop == ReduceOp::kAverage ? total / p : total;
}

}  // namespace

// Unit roundoff of the dtype (half an ulp, relative).
double unit_roundoff(DType dtype) {
  return dtype == DType::kF32 ? 0x1p-24 : dtype == DType::kBF16 ? 0x1p-8 : 0x1p-11;
}

ErrorModel error_model(const CodecConfig& codec, DType dtype) {
  codec::SpecArgs args = codec::SpecArgs::parse(codec.spec());  // canonical: every key spelled
  const std::string name = args.name();
  const auto param = [&](const char* key) { return args.get_double(key, 0, 0, 1e308); };
  ErrorModel m;
  m.lossy = !codec.lossless();
  std::function<double(double)> core = [](double) { return 0.0; };
  if (!m.lossy || (name == "bf16" && dtype == DType::kBF16) ||
      (name == "fp16" && dtype == DType::kF16)) {
    m.lossy = false;  // a cast to the same type is the identity
    m.text = "0";
    m.why = "lossless";
  } else if (name == "bf16" || name == "fp16") {
    const double r = name == "bf16" ? 0x1p-8 : 0x1p-11;
    m.text = format("M*2^%d", name == "bf16" ? -8 : -11);
    m.why = format("half an ulp of %s", name.c_str());
    core = [r](double mag) { return r * mag; };
  } else if (name == "quant") {
    const bool stochastic =
        args.get_choice("round", "nearest", {"nearest", "stochastic"}) == "stochastic";
    const int bits = int(param("bits"));
    const double k = stochastic ? 2.0 : 1.0, levels = double((1 << bits) - 1);
    m.text = format("%sM/(2^%d-1)", stochastic ? "2" : "", bits);
    m.why = format("quant %s: |x-x'| <= scale%s, scale = range/(2^bits-1) <= 2M/(2^bits-1)",
                   stochastic ? "stochastic" : "nearest", stochastic ? "" : "/2");
    core = [k, levels](double mag) { return k * mag / levels; };
  } else if (name == "eb" || (name == "zfp" && args.has("accuracy"))) {
    const bool rel = args.has("rel");
    const double x = param(name == "zfp" ? "accuracy" : rel ? "rel" : "abs");
    m.text = format(rel ? "%g*2M" : "%g", x);
    m.why = name == "zfp" ? "zfp:accuracy, the applied tolerance"
            : rel         ? "eb:rel, |x-x'| <= rel * range, range <= 2M"
                          : "eb:abs, |x-x'| <= abs in the output dtype";
    core = [x, rel](double mag) { return rel ? x * 2 * mag : x; };
  } else if (name == "zfp") {
    // Fixed-rate zfp bounds no error: a block of 4 values gets 4R bits, 9 of them for the common
    // exponent, the rest for the leading bit planes of the decorrelated block, so the error
    // scales like M * 2^-(R - c). Empirical c = 6: twice the worst error measured with these
    // inputs at rates 4, 8 and 16 (one compression, ring and recursive doubling), and on gaussian
    // data (docs/results.md: rate 8, max error 0.67 at max |x| ~ 5.5).
    const double r = param("rate");
    m.guaranteed = false;
    m.text = format("M*2^(6-%g)", r);
    m.why = "zfp:rate guarantees no bound; empirical: twice the worst error seen";
    core = [r](double mag) { return mag * std::exp2(6.0 - r); };
  } else {
    m.guaranteed = false;
    m.text = "infinity";
    m.why = "no documented bound: only non-finite values count as wrong";
    core = [](double) { return std::numeric_limits<double>::infinity(); };
  }
  // Besides the codec's own bound, the decoded value is rounded into the dtype, and quant's
  // documented slack is a few float32 ulps of the block's magnitude.
  const double u = m.lossy ? unit_roundoff(dtype) + 16 * 0x1p-24 : 0.0;
  if (m.lossy) {
    m.text += " + M*(u + 16*2^-24)";
    m.why += "\n#     M*(u + 16*2^-24): rounding into the dtype, float32 slack of quant";
  }
  m.per_compression = [core, u](double mag) { return core(mag) + u * mag; };
  return m;
}

Bound error_bound(CollOp op, Algorithm algo, const ErrorModel& m, ReduceOp redop, int p,
                  int per_node, double a) {
  if (p == 1) return {0, "one rank: nothing is compressed"};
  if (!m.lossy) return {0, "lossless codec"};
  const std::string avg = redop == ReduceOp::kAverage ? ", then /p" : "";
  const double one = m.per_compression(a);
  switch (op) {
    case CollOp::kAllreduce: {
      const double ring = ring_allreduce_error(m, redop, p, a);
      const double rd = recursive_doubling_error(m, redop, p, a);
      const std::string ring_text = redop == ReduceOp::kAverage
                                        ? "ring: (e(A)+e(2A)+...+e((p-1)A))/p + e(A)"
                                        : "ring: e(A)+e(2A)+...+e((p-1)A) + e(pA)";
      const std::string rd_text = "rd: E_L = 2 E_(L-1) + 2 e(2^(L-1) A) per level" + avg;
      if (algo == Algorithm::kTwoLevel && per_node > 1) {
        const std::string text =
            redop == ReduceOp::kAverage
                ? format("two_level, N = p/%d nodes: (e(%dA)+...+e((N-1)%dA))/p + e(A)", per_node,
                         per_node, per_node)
                : format("two_level, N = p/%d nodes: e(%dA)+...+e((N-1)%dA) + e(pA)", per_node,
                         per_node, per_node);
        return {two_level_allreduce_error(m, redop, p, per_node, a), text};
      }
      if (algo == Algorithm::kRing || algo == Algorithm::kTwoLevel) return {ring, ring_text};
      if (algo == Algorithm::kRecursiveDoubling) return {rd, rd_text};
      if (algo == Algorithm::kCompressOnce) {
        return {redop == ReduceOp::kAverage ? one : p * one, "compress_once: p e(A)" + avg};
      }
      // auto runs the two-level algorithm instead of the ring where it can; its bound is below
      // the ring's (fewer, larger partial sums), so the larger of ring and rd covers it.
      return {std::max(ring, rd), format("auto, the larger of\n#     %s = %.4g\n#     %s = %.4g",
                                         ring_text.c_str(), ring, rd_text.c_str(), rd)};
    }
    case CollOp::kReduceScatter: {
      if (algo == Algorithm::kTwoLevel && per_node > 1) {
        const double rs = ring_reduce_scatter_error(m, p / per_node, double(per_node) * a);
        return {redop == ReduceOp::kAverage ? rs / p : rs,
                format("two_level, N = p/%d nodes: e(%dA)+...+e((N-1)%dA)", per_node, per_node,
                       per_node) +
                    avg};
      }
      const double rs = ring_reduce_scatter_error(m, p, a);
      return {redop == ReduceOp::kAverage ? rs / p : rs, "ring: e(A)+e(2A)+...+e((p-1)A)" + avg};
    }
    default:
      return {one, "e(A): each value compressed once"};
  }
}

}  // namespace hycc::bench
