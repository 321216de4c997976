// What a compression policy does to each dimension's traffic, as the model needs it: the codec's
// ratio and throughput per dimension. Either given directly (a figures file, configs/sim-policies)
// or derived from a hycc policy (a preset or a policy file: decide() picks the codec per dimension,
// operation and message size) and the codec benchmark's measured figures.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "codec_table.h"
#include "collective_time.h"
#include "hycc/policy.h"

namespace hycc::sim {

// The dimensions the model sends traffic on, with the operation it uses there.
inline constexpr Dimension kSimDimensions[] = {Dimension::kTp,        Dimension::kPp,
                                               Dimension::kDp,        Dimension::kZeroGrad,
                                               Dimension::kZeroParam, Dimension::kEmbedding};
Operation operation_of(Dimension d);  // tp/dp/embedding allreduce, pp sendrecv, zero_grad
                                      // reduce_scatter, zero_param allgather
Collective collective_of(Dimension d);

class SimPolicy {
 public:
  // Nothing compressed.
  static SimPolicy baseline();
  // A figures file (format: docs/sim.md): optional name and description, then tables [default],
  // [tp], [pp], [dp], [zero_grad], [zero_param], [embedding] with codec (a label), ratio,
  // compress_gbps and decompress_gbps (GB/s of uncompressed bytes; absent: the codec is free).
  static SimPolicy parse_figures(std::string_view toml, std::string source);
  // A hycc policy, with codec figures looked up in `codecs` when a call is compressed.
  static SimPolicy from_policy(Policy policy, CodecTable codecs);

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // The figures for a message of `bytes` (uncompressed) of `dtype` on dimension `d`, whose
  // groups have `links` (an adaptive rule takes its candidate of least modelled time there).
  CodecFigures figures(Dimension d, double bytes, DType dtype, const GroupLinks& links = {}) const;

  // Multiplies every codec throughput by `factor` (a faster or slower device than the one the
  // figures were measured on); infinity makes the codecs free. Ratios stay as they are.
  void scale_codec_throughput(double factor) { codec_scale_ = factor; }

 private:
  CodecFigures scaled(CodecFigures c) const;
  CodecFigures figures_of(const PolicyDecision& decision, Dimension d, double bytes,
                          DType dtype) const;

  std::string name_, description_;
  double codec_scale_ = 1;
  // Figures files: per dimension (index = Dimension), with a default.
  std::optional<CodecFigures> given_[7];
  std::optional<Policy> policy_;
  CodecTable codecs_;
};

}  // namespace hycc::sim
