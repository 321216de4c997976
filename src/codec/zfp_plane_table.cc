#include "codec/zfp_plane_table.h"

namespace hycc::codec::zfp {

const TablePlaneCoder& TablePlaneCoder::instance() {
  static const TablePlaneCoder tables;
  return tables;
}

TablePlaneCoder::TablePlaneCoder() {
  const ComputedPlaneCoder computed;
  for (uint32_t n0 = 0; n0 <= kBlockValues; ++n0) {
    for (uint32_t plane = 0; plane < 16; ++plane) {
      uint32_t n = n0, code = 0;
      const uint32_t length = computed.encode(plane, n, code);
      encode_[n0][plane] = static_cast<uint16_t>(code | length << 8);
    }
    for (uint32_t window = 0; window < (1u << kMaxPlaneCodeBits); ++window) {
      uint32_t n = n0, plane = 0;
      const uint32_t used = computed.decode(window, n, plane);
      decode_[n0][window] = pack(plane, used, n);
    }
    for (uint32_t bits = 0; bits < kMaxPlaneCodeBits; ++bits) {
      for (uint32_t window = 0; window < (1u << bits); ++window) {
        uint32_t n = n0, plane = 0;
        const uint32_t used = computed.decode_cut(window, bits, n, plane);
        decode_cut_[n0][(1u << bits) - 1 + window] = pack(plane, used, n);
      }
    }
  }
}

}  // namespace hycc::codec::zfp
