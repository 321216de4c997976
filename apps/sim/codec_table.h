// Codec figures measured by `hycc-bench codec --json FILE`: ratio and single-thread compress and
// decompress throughput per (codec spec, element type).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collective_time.h"
#include "hycc/dtype.h"

namespace hycc::sim {

class CodecTable {
 public:
  // Adds the rows of one `hycc-bench codec --json` output (a JSON array of objects with codec,
  // dtype, ratio, compress_gbps, decompress_gbps); `source` names it in errors and in
  // provenance. Throws InvalidArgument for text that is not such an array.
  void add_json(std::string_view json_text, const std::string& source);

  // The figures of a canonical codec spec on `dtype`; throws InvalidArgument naming the spec,
  // the dtype, the sources read and the command that would measure it.
  CodecFigures find(const std::string& codec, DType dtype) const;
  bool empty() const { return rows_.empty(); }
  const std::vector<std::string>& sources() const { return sources_; }

 private:
  struct Row {
    std::string codec;
    DType dtype;
    CodecFigures figures;
  };
  std::vector<Row> rows_;
  std::vector<std::string> sources_;
};

}  // namespace hycc::sim
