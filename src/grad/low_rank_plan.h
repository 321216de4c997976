// How PowerSGD cuts a gradient into matrices: one tensor viewed as rows = shape[0] by the product
// of the other dimensions, or a bucket of pieces (GradTensor::pieces), each viewed so, or a tensor
// given without either (a flat buffer, as the drop-in library sees) as its square view. A matrix
// is compressed when rows x cols >= min_compression x r (rows + cols); the rest (vectors, small
// matrices) travels uncompressed. The host method and the device step follow the same plan, so
// that they exchange the same factors in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grad/grad_spec.h"
#include "hycc/grad.h"

namespace hycc::grad {

// One matrix: rows, cols, the rank r it uses, and whether it is compressed.
struct LowRankShape {
  size_t rows = 0, cols = 0, r = 0;
  bool compresses = false;
};
LowRankShape low_rank_shape(const GradSpec& spec, const std::vector<size_t>& shape, size_t n);

// One piece of the tensor: elements [offset, offset + count). A compressed piece's P factor is
// at p_offset of the concatenated P factors (rows x r floats), its Qt at q_offset of the
// concatenated Qt factors (r x cols); an uncompressed one is at plain_offset of the plain values.
struct LowRankPiece {
  size_t offset = 0, count = 0;
  LowRankShape shape;
  size_t p_offset = 0, q_offset = 0, plain_offset = 0;
};

struct LowRankPlan {
  std::vector<LowRankPiece> pieces;
  size_t p_total = 0, q_total = 0, plain_total = 0;
  bool compresses() const { return p_total > 0; }
};

// The pieces of a flat tensor of n > 0 elements under flat=square: one matrix of cols =
// ceil(sqrt(n)) columns and rows = floor(n / cols) rows, then the n - rows x cols < cols values
// left over as a vector (uncompressed). Square maximizes the compression of a rank-r
// approximation, rows x cols / (r (rows + cols)), for the elements given.
std::vector<std::vector<size_t>> square_view(size_t n);

// The seed of the first Q of the plan's piece `piece` (and of every Q without warm start: `stream`
// is then the step): the spec's seed, not the tensor's key, so that every rank draws the same Q
// whatever key it gave (the policy collectives and the drop-in library derive keys from buffer
// addresses, which differ between ranks and runs).
uint64_t first_q_seed(const GradSpec& spec, uint64_t stream, size_t piece);

// The plan for a tensor of n elements (its shape or pieces: a valid layout, see layout_error).
LowRankPlan low_rank_plan(const GradSpec& spec, const GradTensor& tensor, size_t n);

// Empty if tensor's shape or pieces describe n elements; otherwise what is wrong.
std::string layout_error(const GradTensor& tensor, size_t n);

// A hash of the tensor's layout (its shape, or the shapes of its pieces), for the cross-rank
// agreement of the gradient compressors' calls (masked to 62 bits there).
int64_t layout_hash(const GradTensor& tensor);

// layout_error as an InvalidArgument tagged `where`. The policy collectives check the tensor
// they would hand a gradient compressor whether or not one runs, so that a bad list of pieces
// fails alike on one rank, below the threshold and under any rule.
void require_layout(const GradTensor& tensor, size_t n, const char* where);

}  // namespace hycc::grad
