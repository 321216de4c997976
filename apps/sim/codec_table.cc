#include "codec_table.h"

#include <nlohmann/json.hpp>

#include "hycc/error.h"

namespace hycc::sim {

void CodecTable::add_json(std::string_view json_text, const std::string& source) {
  nlohmann::json rows;
  try {
    rows = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(tagged("sim", source, ": not JSON: ", e.what()));
  }
  if (!rows.is_array()) {
    throw InvalidArgument(tagged("sim", source,
                                 ": expected the JSON array that hycc-bench codec "
                                 "--json writes"));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& r = rows[i];
    try {
      Row row;
      row.codec = r.at("codec").get<std::string>();
      row.dtype = parse_dtype(r.at("dtype").get<std::string>());
      row.figures.codec = row.codec;
      row.figures.ratio = r.at("ratio").get<double>();
      row.figures.compress_bandwidth = r.at("compress_gbps").get<double>() * 1e9;
      row.figures.decompress_bandwidth = r.at("decompress_gbps").get<double>() * 1e9;
      if (!(row.figures.ratio > 0 && row.figures.compress_bandwidth > 0 &&
            row.figures.decompress_bandwidth > 0)) {
        throw InvalidArgument("ratio and throughputs must be above 0");
      }
      rows_.push_back(std::move(row));
    } catch (const std::exception& e) {
      throw InvalidArgument(tagged("sim", source, ": row ", i + 1, ": ", e.what()));
    }
  }
  sources_.push_back(source);
}

CodecFigures CodecTable::find(const std::string& codec, DType dtype) const {
  for (const Row& r : rows_) {
    if (r.codec == codec && r.dtype == dtype) return r.figures;
  }
  std::string read;
  for (const auto& s : sources_) read += (read.empty() ? "" : ", ") + s;
  throw InvalidArgument(tagged("sim", "no codec figures for '", codec, "' on ", dtype_name(dtype),
                               " in [", read, "]; measure them with: hycc-bench codec --dtype ",
                               dtype_name(dtype), " --codec ", codec, " --json FILE"));
}

}  // namespace hycc::sim
