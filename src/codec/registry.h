// The table of codecs: names, wire ids, help text and factories. One entry per codec file.
#pragma once

#include <memory>
#include <string_view>

#include "codec/spec_args.h"
#include "hycc/codec.h"

namespace hycc::codec {

struct CodecEntry {
  std::string_view name;  // canonical spec name
  CodecId id;
  std::string_view help;  // accepted parameters with ranges and defaults
  // Builds the codec from a parsed spec; must call args.finish(help).
  std::shared_ptr<const Codec> (*from_spec)(SpecArgs& args);
  // Rebuilds the codec from header parameters; throws CorruptStream if they are invalid.
  std::shared_ptr<const Codec> (*from_params)(const CodecParams& params);
};

// One accessor per codec file.
const CodecEntry& none_entry();
const CodecEntry& bf16_entry();
const CodecEntry& fp16_entry();
const CodecEntry& quant_entry();
const CodecEntry& eb_entry();
const CodecEntry& zfp_entry();
const CodecEntry& mpc_entry();
const CodecEntry& zstd_entry();
const CodecEntry& exphuff_entry();

// nullptr if unknown. Accepts the aliases "f16" and "half" for "fp16".
const CodecEntry* find_codec(std::string_view name);
const CodecEntry* find_codec(CodecId id);

}  // namespace hycc::codec
