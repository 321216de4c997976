#include "codec/exphuff_table.h"

#include <algorithm>
#include <numeric>

#include "hycc/error.h"

namespace hycc::codec::exphuff {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:exphuff", what));
}

// Depths of the leaves of a Huffman tree for the occurring symbols of `histogram` (two-queue
// construction over leaves sorted by (count, symbol); a tie between a leaf and an inner node
// takes the leaf).
std::vector<uint8_t> huffman_depths(std::span<const uint64_t> histogram) {
  std::vector<uint32_t> leaves;
  for (uint32_t s = 0; s < histogram.size(); ++s) {
    if (histogram[s] != 0) leaves.push_back(s);
  }
  std::stable_sort(leaves.begin(), leaves.end(),
                   [&](uint32_t a, uint32_t b) { return histogram[a] < histogram[b]; });
  const size_t n = leaves.size();
  if (n < 2) throw InvalidArgument(tagged("codec:exphuff", "a Huffman code needs two symbols"));
  // Nodes 0..n-1 are the leaves in sorted order, n.. the inner nodes in creation order.
  std::vector<uint64_t> weight(2 * n - 1);
  std::vector<size_t> parent(2 * n - 1, 0);
  for (size_t i = 0; i < n; ++i) weight[i] = histogram[leaves[i]];
  size_t next_leaf = 0, next_inner = n, created = n;
  const auto take = [&] {
    if (next_leaf < n && (next_inner == created || weight[next_leaf] <= weight[next_inner])) {
      return next_leaf++;
    }
    return next_inner++;
  };
  for (; created < 2 * n - 1; ++created) {
    const size_t a = take(), b = take();
    weight[created] = weight[a] + weight[b];
    parent[a] = parent[b] = created;
  }
  std::vector<uint8_t> depth_of_node(2 * n - 1, 0);
  std::vector<uint8_t> lengths(histogram.size(), 0);
  for (size_t i = 2 * n - 1; i-- > 0;) {  // parents come after their children
    if (i + 1 < 2 * n - 1) depth_of_node[i] = static_cast<uint8_t>(depth_of_node[parent[i]] + 1);
  }
  for (size_t i = 0; i < n; ++i) lengths[leaves[i]] = depth_of_node[i];
  return lengths;
}

}  // namespace

std::vector<uint8_t> code_lengths(std::span<const uint64_t> histogram) {
  std::vector<uint8_t> lengths = huffman_depths(histogram);
  if (*std::max_element(lengths.begin(), lengths.end()) <= kMaxCodeBits) return lengths;
  // Kraft sums in units of 2^-kMaxCodeBits: a code of length l takes 2^(kMaxCodeBits - l).
  constexpr uint32_t kFull = 1u << kMaxCodeBits;
  const auto units = [](int l) { return 1u << (kMaxCodeBits - l); };
  std::vector<uint32_t> used;  // occurring symbols, least frequent first (ties: lower symbol)
  for (uint32_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] != 0) used.push_back(s);
  }
  std::stable_sort(used.begin(), used.end(),
                   [&](uint32_t a, uint32_t b) { return histogram[a] < histogram[b]; });
  uint32_t kraft = 0;
  for (const uint32_t s : used) {
    lengths[s] = std::min<uint8_t>(lengths[s], kMaxCodeBits);
    kraft += units(lengths[s]);
  }
  // Over-full: lengthen the longest code below the limit, the least frequent first, until the
  // lengths form a prefix code again.
  while (kraft > kFull) {
    uint32_t pick = 0;
    int longest = 0;
    for (const uint32_t s : used) {
      if (lengths[s] < kMaxCodeBits && lengths[s] > longest) {
        longest = lengths[s];
        pick = s;
      }
    }
    kraft -= units(longest + 1);
    ++lengths[pick];
  }
  // Room left: shorten codes, the most frequent first, while the code stays a prefix code.
  for (auto it = used.rbegin(); it != used.rend(); ++it) {
    while (lengths[*it] > 1 && kraft + units(lengths[*it]) <= kFull) {
      kraft += units(lengths[*it]);
      --lengths[*it];
    }
  }
  return lengths;
}

BlockPlan plan_block(std::span<const uint64_t> histogram, size_t n, Fields f) {
  const std::span<const uint64_t> used = histogram.first(static_cast<size_t>(f.symbols()));
  BlockPlan plan;
  const auto present = std::count_if(used.begin(), used.end(), [](uint64_t c) { return c != 0; });
  if (present == 1) {
    plan.mode = BlockMode::kConstant;
    plan.symbol = static_cast<uint8_t>(
        std::find_if(used.begin(), used.end(), [](uint64_t c) { return c != 0; }) - used.begin());
    return plan;
  }
  std::vector<uint8_t> lengths = code_lengths(used);
  uint64_t code_bits = 0;
  for (size_t s = 0; s < used.size(); ++s) code_bits += used[s] * lengths[s];
  const size_t bound = f.table_bytes() + kStreamSizesBytes + (code_bits + 7) / 8 + kStreams;
  if (bound + 8 <= n) {
    plan.mode = BlockMode::kHuffman;
    plan.lengths = std::move(lengths);
  }
  return plan;
}

std::vector<Code> canonical_codes(std::span<const uint8_t> lengths) {
  std::vector<uint32_t> per_length(kMaxCodeBits + 1, 0);
  for (const uint8_t l : lengths) {
    if (l > kMaxCodeBits) corrupt(detail::concat("code length ", int(l), " above ", kMaxCodeBits));
    if (l != 0) ++per_length[l];
  }
  // Kraft: sum of 2^(max - l) must not exceed 2^max.
  uint32_t kraft = 0;
  for (int l = 1; l <= kMaxCodeBits; ++l) kraft += per_length[l] << (kMaxCodeBits - l);
  if (kraft > (1u << kMaxCodeBits)) corrupt("code lengths do not form a prefix code");
  if (kraft == 0) corrupt("a coded block whose code has no symbol");
  std::vector<uint32_t> next(kMaxCodeBits + 2, 0);
  for (int l = 1; l <= kMaxCodeBits; ++l) next[l + 1] = (next[l] + per_length[l]) << 1;
  std::vector<Code> codes(lengths.size());
  for (size_t s = 0; s < lengths.size(); ++s) {
    const int l = lengths[s];
    if (l == 0) continue;
    const uint32_t code = next[l]++;
    uint32_t reversed = 0;
    for (int k = 0; k < l; ++k) reversed |= ((code >> k) & 1u) << (l - 1 - k);
    codes[s] = {static_cast<uint16_t>(reversed), static_cast<uint8_t>(l)};
  }
  return codes;
}

void write_lengths(std::span<const uint8_t> lengths, uint8_t* out) {
  for (size_t s = 0; s < lengths.size(); s += 2) {
    out[s / 2] = static_cast<uint8_t>(lengths[s] | (lengths[s + 1] << 4));
  }
}

std::vector<uint8_t> read_lengths(const uint8_t* in, int symbols) {
  std::vector<uint8_t> lengths(static_cast<size_t>(symbols));
  for (int s = 0; s < symbols; s += 2) {
    lengths[s] = in[s / 2] & 15;
    lengths[s + 1] = in[s / 2] >> 4;
  }
  for (const uint8_t l : lengths) {
    if (l > kMaxCodeBits) corrupt(detail::concat("code length ", int(l), " above ", kMaxCodeBits));
  }
  return lengths;
}

void build_decoding_table(std::span<const Code> codes, uint16_t* table) {
  std::fill(table, table + (size_t{1} << kMaxCodeBits), uint16_t{0});
  for (size_t s = 0; s < codes.size(); ++s) {
    if (codes[s].length != 0) {
      put_table_entries(table, static_cast<uint32_t>(s), codes[s].bits, codes[s].length);
    }
  }
}

}  // namespace hycc::codec::exphuff
