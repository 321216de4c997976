// The study's loss tolerance per dimension (tools/study's summary.json, docs/study.md) turned
// into a policy: for each dimension, the candidate with the largest compression ratio on the
// layout's element type whose loss gap stays inside a budget at the upper end of its 95%
// interval. Dimensions the study did not measure, or where no candidate fits, stay uncompressed,
// except zero_grad, which takes dp's pick when only dp was measured (the same gradients).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codec_table.h"
#include "hycc/dtype.h"

namespace hycc::sim {

struct TolerancePick {
  std::string dimension;
  std::string compressor;    // as the study named it; empty: nothing fits the budget
  double upper_percent = 0;  // mean gap + half-width of its 95% interval
  double ratio = 1;          // of its codec on the layout's dtype (codec figures)
};

struct TolerancePolicy {
  std::string toml;  // a hycc policy file with one rule per picked dimension
  std::vector<TolerancePick> picks;
  std::vector<std::string> notes;  // cells skipped, and why
};

// summary: the text of a summary.json; budget_percent: the largest loss gap (in percent of the
// baseline's loss) a pick's upper bound may reach.
TolerancePolicy policy_from_tolerance(std::string_view summary, const std::string& source,
                                      double budget_percent, const CodecTable& codecs, DType dtype);

}  // namespace hycc::sim
