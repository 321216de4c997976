// The linear algebra of PowerSGD on row-major float32 matrices: M is rows x cols, P is rows x r,
// and Q is kept transposed, Qt is r x cols, so that every inner loop runs over contiguous memory.
// Each fast function has a plain reference (textbook loops) that the unit tests compare against.
//
// The order of the float32 operations of the three products is part of their definition: the
// device kernels (grad/cuda/low_rank_kernels.cu) perform the same operations in the same
// order, so that a GPU step of PowerSGD has the host's bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace hycc::grad {

// Rows per partial sum of multiply_mtp: every output is a sum over all rows, and blocks of rows
// summed separately (then added in block order) let a GPU spread one output over many threads.
inline constexpr size_t kMtpRowBlock = 64;

// P = M Q (P[i][k] = sum_j M[i][j] Qt[k][j]): per output, 8 partial sums (partial t takes the
// terms j = t mod 8 in order, from 0), added as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
void multiply_mq(std::span<const float> m, size_t rows, size_t cols, std::span<const float> qt,
                 size_t r, std::span<float> p);
// Qt = (M^T P)^T (Qt[k][j] = sum_i P[i][k] M[i][j]): per output, the terms of each block of
// kMtpRowBlock rows summed in order from 0, and the block sums added in order to 0.
void multiply_mtp(std::span<const float> m, size_t rows, size_t cols, std::span<const float> p,
                  size_t r, std::span<float> qt);
// Out = P Q^T (Out[i][j] = sum_k P[i][k] Qt[k][j]): the terms k = 0..r-1 added in order to 0.
void multiply_pqt(std::span<const float> p, std::span<const float> qt, size_t rows, size_t cols,
                  size_t r, std::span<float> out);

// Orthonormalizes the r columns of P (rows x r) in place, Gram-Schmidt from the first column.
// A column with less than 1e-5 of its norm left after the projections (dependent on the columns
// before it, or 0) becomes 0. Fast: classical Gram-Schmidt applied twice
// per column (CGS2), one pass over the rows for all the dot products, in double.
void orthogonalize(std::span<float> p, size_t rows, size_t r);

// References.
void multiply_mq_reference(std::span<const float> m, size_t rows, size_t cols,
                           std::span<const float> qt, size_t r, std::span<float> p);
void multiply_mtp_reference(std::span<const float> m, size_t rows, size_t cols,
                            std::span<const float> p, size_t r, std::span<float> qt);
void multiply_pqt_reference(std::span<const float> p, std::span<const float> qt, size_t rows,
                            size_t cols, size_t r, std::span<float> out);
// Modified Gram-Schmidt, one column at a time, in double.
void orthogonalize_reference(std::span<float> p, size_t rows, size_t r);

// Fills x with standard normal values from a counter-based generator (Box-Muller on splitmix64
// of (seed, i)): the same seed gives the same values on every rank.
void fill_normal(std::span<float> x, uint64_t seed);

}  // namespace hycc::grad
