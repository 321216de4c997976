// Compresses one gradient-like tensor with five codecs and prints what each keeps: stream size,
// ratio, largest error. No MPI needed. Exits with 1 if the lossless codec is not bit-exact.
#include <hycc/codec.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const size_t n = 1 << 20;
  std::vector<float> grad(n), back(n);
  for (size_t i = 0; i < n; ++i) {
    grad[i] = 0.01f * std::sin(0.001f * float(i)) + 0.001f * std::cos(0.37f * float(i));
  }
  std::printf("%-16s %12s %8s %12s\n", "codec", "bytes", "ratio", "max error");
  for (const char* spec : {"bf16", "quant:bits=8", "quant:bits=4", "zfp:rate=8", "mpc"}) {
    const hycc::CodecConfig codec = hycc::CodecConfig::parse(spec);
    const std::vector<std::byte> stream =
        hycc::compress(codec, {hycc::DType::kF32, n, grad.data()});
    hycc::decompress(stream, {hycc::DType::kF32, n, back.data()});  // validates the stream
    float worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(back[i] - grad[i]));
    std::printf("%-16s %12zu %8.2f %12.3g\n", spec, stream.size(),
                double(n * sizeof(float)) / double(stream.size()), double(worst));
    if (codec.lossless() && worst != 0) return 1;
  }
  std::printf("codecs: OK\n");
  return 0;
}
