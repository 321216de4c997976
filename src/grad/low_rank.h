// The linear algebra of PowerSGD on row-major float32 matrices: M is rows x cols, P is rows x r,
// and Q is kept transposed, Qt is r x cols, so that every inner loop runs over contiguous memory.
// Each fast function has a plain reference (textbook loops) that the unit tests compare against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace hycc::grad {

// P = M Q (P[i][k] = sum_j M[i][j] Qt[k][j]).
void multiply_mq(std::span<const float> m, size_t rows, size_t cols, std::span<const float> qt,
                 size_t r, std::span<float> p);
// Qt = (M^T P)^T (Qt[k][j] = sum_i P[i][k] M[i][j]).
void multiply_mtp(std::span<const float> m, size_t rows, size_t cols, std::span<const float> p,
                  size_t r, std::span<float> qt);
// Out = P Q^T (Out[i][j] = sum_k P[i][k] Qt[k][j]).
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
