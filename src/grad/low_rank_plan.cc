#include "grad/low_rank_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/xxh3.h"
#include "grad/method.h"
#include "hycc/error.h"

namespace hycc::grad {
namespace {

// Elements of a shape (1 for an empty one); 0 when a product overflows size_t.
size_t elements_of(const std::vector<size_t>& shape) {
  size_t product = 1;
  for (const size_t d : shape) {
    if (d != 0 && product > SIZE_MAX / d) return 0;
    product *= d;
  }
  return product;
}

// The smallest c with c * c >= n.
size_t ceil_sqrt(size_t n) {
  auto c = static_cast<size_t>(std::sqrt(static_cast<double>(n)));
  while (c * c < n) ++c;
  while (c > 0 && (c - 1) * (c - 1) >= n) --c;
  return c;
}

}  // namespace

std::vector<std::vector<size_t>> square_view(size_t n) {
  if (n == 0) return {};
  const size_t cols = ceil_sqrt(n), rows = n / cols;
  std::vector<std::vector<size_t>> pieces{{rows, cols}};
  if (rows * cols < n) pieces.push_back({n - rows * cols});
  return pieces;
}

uint64_t first_q_seed(const GradSpec& spec, uint64_t stream, size_t piece) {
  return step_seed(spec.seed, stream, static_cast<int>(piece));
}

LowRankShape low_rank_shape(const GradSpec& spec, const std::vector<size_t>& shape, size_t n) {
  LowRankShape s;
  s.rows = shape.size() >= 2 ? shape[0] : 0;
  s.cols = s.rows > 0 ? n / s.rows : 0;
  s.r = std::min({static_cast<size_t>(spec.rank), s.rows, s.cols});
  s.compresses = s.rows > 0 && s.r > 0 &&
                 static_cast<double>(s.rows) * double(s.cols) >=
                     spec.min_compression * double(s.r) * double(s.rows + s.cols);
  return s;
}

LowRankPlan low_rank_plan(const GradSpec& spec, const GradTensor& tensor, size_t n) {
  LowRankPlan plan;
  auto add = [&](const std::vector<size_t>& shape, size_t offset, size_t count) {
    LowRankPiece piece{offset, count, low_rank_shape(spec, shape, count)};
    if (piece.shape.compresses) {
      piece.p_offset = plan.p_total;
      piece.q_offset = plan.q_total;
      plan.p_total += piece.shape.rows * piece.shape.r;
      plan.q_total += piece.shape.r * piece.shape.cols;
    } else {
      piece.plain_offset = plan.plain_total;
      plan.plain_total += count;
    }
    plan.pieces.push_back(piece);
  };
  // A tensor given without shape or pieces is the bucket of its square view (flat=square).
  const bool flat = spec.flat_square && tensor.shape.empty() && tensor.pieces.empty();
  const std::vector<std::vector<size_t>> view = flat ? square_view(n) : decltype(view){};
  const std::vector<std::vector<size_t>>& pieces = flat ? view : tensor.pieces;
  if (pieces.empty()) {
    add(tensor.shape, 0, n);
    return plan;
  }
  size_t offset = 0;
  for (const std::vector<size_t>& shape : pieces) {
    const size_t count = elements_of(shape);
    add(shape, offset, count);
    offset += count;
  }
  return plan;
}

std::string layout_error(const GradTensor& tensor, size_t n) {
  if (!tensor.shape.empty() && !tensor.pieces.empty()) {
    return detail::concat("key ", tensor.key, " has both a shape and pieces; give one of them");
  }
  if (!tensor.shape.empty()) {
    const size_t product = elements_of(tensor.shape);
    if (product != n) {
      return detail::concat("the shape of key ", tensor.key, " holds ", product,
                            " elements, the tensor ", n);
    }
    return {};
  }
  size_t total = 0;
  for (size_t i = 0; i < tensor.pieces.size(); ++i) {
    const size_t count = elements_of(tensor.pieces[i]);
    if (tensor.pieces[i].empty() || count == 0) {
      return detail::concat("piece ", i, " of key ", tensor.key,
                            tensor.pieces[i].empty() ? " has no dimensions" : " holds no elements");
    }
    if (count > n - total) {
      return detail::concat("the pieces of key ", tensor.key, " hold more than the tensor's ", n,
                            " elements (from piece ", i, " on)");
    }
    total += count;
  }
  if (!tensor.pieces.empty() && total != n) {
    return detail::concat("the pieces of key ", tensor.key, " hold ", total,
                          " elements, the tensor ", n);
  }
  return {};
}

void require_layout(const GradTensor& tensor, size_t n, const char* where) {
  const std::string error = layout_error(tensor, n);
  if (!error.empty()) throw InvalidArgument(tagged(where, error));
}

int64_t layout_hash(const GradTensor& tensor) {
  std::vector<uint64_t> words;
  for (const size_t d : tensor.shape) words.push_back(d);
  for (const std::vector<size_t>& piece : tensor.pieces) {
    words.push_back(~uint64_t{0});  // a separator: {2, 3} + {4} differs from {2} + {3, 4}
    for (const size_t d : piece) words.push_back(d);
  }
  return static_cast<int64_t>(xxh3(words.data(), words.size() * sizeof(uint64_t)));
}

}  // namespace hycc::grad
