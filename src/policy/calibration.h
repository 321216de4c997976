// The measurements behind adaptive rules, kept with each communicator (an MPI attribute, freed
// with it) and shared by every engine: the links of the communicator and the speed of codecs on
// this machine. What a collective uses is agreed by all ranks of the communicator (the slowest
// rank's times, the smallest ratio), so they all decide alike.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>

#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "hycc/comm.h"
#include "policy/cost_model.h"

namespace hycc::policy {

struct Calibration {
  std::optional<LinkFigures> link;
  // Agreed by every rank (changed only in collective calls, in the same order on every rank).
  std::map<std::string, CodecFigures> agreed;
  // This rank's own measurements (for sends, which never communicate to decide).
  std::map<std::string, CodecFigures> local;
};

// comm's calibration, created empty on first use. Not locked: callers serialize.
Calibration& calibration_of(const Communicator& comm);

// One ring exchange (each rank sends to the next, receives from the previous) of a small and
// a large message (1 MiB, grown 4x while it takes under 5 ms, up to 16 MiB), the best of a few
// tries each, the slowest rank's times. Collective over comm.
LinkFigures measure_link(const Communicator& comm);

// The key of a codec's figures: its spec, the dtype and the kind of data it was measured on.
std::string codec_key(const CodecConfig& codec, DType dtype, DataKind data);

// Compresses and decompresses 256 Ki values of `data` as `dtype` (best of 3 after a warmup) on
// this rank. A codec that rejects the dtype gives usable = false.
CodecFigures measure_codec(const CodecConfig& codec, DType dtype, DataKind data);

// Every rank's figures made the same: the largest times, the smallest ratio, usable only where
// usable on every rank. Collective over comm (same number of figures on every rank).
void agree(const Communicator& comm, std::span<CodecFigures> figures);

}  // namespace hycc::policy
