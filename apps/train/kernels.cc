// Fast fp32 kernels: OpenMP over pieces fixed by the problem shape (never by the thread count),
// OpenBLAS sgemm for the matrix products. The references are in kernels_reference.cc.
#include "kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace hycc::train {
namespace {

// Tiles of a gemm's output: fixed sizes, so that each element is computed by the same sgemm
// call (same shape, same K order) whatever the number of threads.
constexpr int kTileM = 64;
constexpr int kTileN = 256;
// Channel pieces for reductions over rows (encoder, layernorm and bias gradients).
constexpr int kChannelPiece = 64;

void blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

}  // namespace

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  blas_single_threaded();
  const int tiles_m = (M + kTileM - 1) / kTileM;
  const int tiles_n = (N + kTileN - 1) / kTileN;
#pragma omp parallel for collapse(2) schedule(static)
  for (int tm = 0; tm < tiles_m; ++tm) {
    for (int tn = 0; tn < tiles_n; ++tn) {
      const int m0 = tm * kTileM;
      const int n0 = tn * kTileN;
      const int m = std::min(kTileM, M - m0);
      const int n = std::min(kTileN, N - n0);
      const float* a = trans_a ? A + m0 : A + static_cast<size_t>(m0) * lda;
      const float* b = trans_b ? B + static_cast<size_t>(n0) * ldb : B + n0;
      cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, K, alpha, a, lda, b, ldb, beta,
                  C + static_cast<size_t>(m0) * ldc + n0, ldc);
    }
  }
}

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<size_t>(b) * T + t) * C;
      const float* e = wte + static_cast<size_t>(inp[b * T + t]) * C;
      const float* p = wpe + static_cast<size_t>(t) * C;
      for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C) {
  // Parallel over channel pieces: each (token, channel) sums its rows in (b, t) order.
  const int pieces = (C + kChannelPiece - 1) / kChannelPiece;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < pieces; ++p) {
    const int c0 = p * kChannelPiece;
    const int c1 = std::min(C, c0 + kChannelPiece);
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const float* d = dout + (static_cast<size_t>(b) * T + t) * C;
        float* de = dwte + static_cast<size_t>(inp[b * T + t]) * C;
        float* dp = dwpe + static_cast<size_t>(t) * C;
        for (int c = c0; c < c1; ++c) {
          de[c] += d[c];
          dp[c] += d[c];
        }
      }
    }
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
  constexpr float kEps = 1e-5f;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const float* x = inp + static_cast<size_t>(i) * C;
    float m = 0.0f;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= static_cast<float>(C);
    float v = 0.0f;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= static_cast<float>(C);
    const float s = 1.0f / std::sqrt(v + kEps);
    float* o = out + static_cast<size_t>(i) * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int N, int C) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const float* d = dout + static_cast<size_t>(i) * C;
    const float* x = inp + static_cast<size_t>(i) * C;
    float* dx = dinp + static_cast<size_t>(i) * C;
    float dnorm_mean = 0.0f;
    float dnorm_norm_mean = 0.0f;
    for (int c = 0; c < C; ++c) {
      const float norm = (x[c] - mean[i]) * rstd[i];
      const float dnorm = weight[c] * d[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<float>(C);
    dnorm_norm_mean /= static_cast<float>(C);
    for (int c = 0; c < C; ++c) {
      const float norm = (x[c] - mean[i]) * rstd[i];
      const float dnorm = weight[c] * d[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[i];
    }
  }
  const int pieces = (C + kChannelPiece - 1) / kChannelPiece;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < pieces; ++p) {
    const int c0 = p * kChannelPiece;
    const int c1 = std::min(C, c0 + kChannelPiece);
    for (int i = 0; i < N; ++i) {
      const float* d = dout + static_cast<size_t>(i) * C;
      const float* x = inp + static_cast<size_t>(i) * C;
      for (int c = c0; c < c1; ++c) {
        dweight[c] += (x[c] - mean[i]) * rstd[i] * d[c];
        dbias[c] += d[c];
      }
    }
  }
}

void bias_forward(float* out, const float* bias, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    float* o = out + static_cast<size_t>(i) * C;
    for (int c = 0; c < C; ++c) o[c] += bias[c];
  }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  gemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC);
  if (bias != nullptr) bias_forward(out, bias, N, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  if (dinp != nullptr) gemm(false, false, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
  gemm(true, false, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias != nullptr) {
    const int pieces = (OC + kChannelPiece - 1) / kChannelPiece;
#pragma omp parallel for schedule(static)
    for (int p = 0; p < pieces; ++p) {
      const int o1 = std::min(OC, (p + 1) * kChannelPiece);
      for (int i = 0; i < N; ++i) {
        const float* d = dout + static_cast<size_t>(i) * OC;
        for (int o = p * kChannelPiece; o < o1; ++o) dbias[o] += d[o];
      }
    }
  }
}

// Per (batch, head): S = scale * Q K^T (T,T), causal softmax in place, out = P V.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int HS) {
  blas_single_threaded();
  const int C = NH * HS;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv + static_cast<size_t>(b) * T * 3 * C + h * HS;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* p = att + (static_cast<size_t>(b) * NH + h) * T * T;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, HS, scale, q, 3 * C, k, 3 * C,
                  0.0f, p, T);
      for (int t = 0; t < T; ++t) {
        float* row = p + static_cast<size_t>(t) * T;
        float maxval = row[0];
        for (int t2 = 1; t2 <= t; ++t2) maxval = std::max(maxval, row[t2]);
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          row[t2] = std::exp(row[t2] - maxval);
          sum += row[t2];
        }
        const float inv = 1.0f / sum;
        for (int t2 = 0; t2 <= t; ++t2) row[t2] *= inv;
        for (int t2 = t + 1; t2 < T; ++t2) row[t2] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, HS, T, 1.0f, p, T, v, 3 * C, 0.0f,
                  out + static_cast<size_t>(b) * T * C + h * HS, C);
    }
  }
}

// Per (batch, head): dV += P^T dO; dP = dO V^T; dS = P * (dP - rowsum(P * dP));
// dQ += scale * dS K; dK += scale * dS^T Q. Heads own disjoint slices of dqkv.
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int NH, int HS) {
  blas_single_threaded();
  const int C = NH * HS;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const size_t base = static_cast<size_t>(b) * T * 3 * C + h * HS;
      const float* q = qkv + base;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = dqkv + base;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* p = att + (static_cast<size_t>(b) * NH + h) * T * T;
      float* dp = datt + (static_cast<size_t>(b) * NH + h) * T * T;
      const float* d = dout + static_cast<size_t>(b) * T * C + h * HS;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, HS, T, 1.0f, p, T, d, C, 1.0f, dv,
                  3 * C);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, HS, 1.0f, d, C, v, 3 * C, 0.0f, dp,
                  T);
      for (int t = 0; t < T; ++t) {
        float* drow = dp + static_cast<size_t>(t) * T;
        const float* prow = p + static_cast<size_t>(t) * T;
        float dot = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) dot += prow[t2] * drow[t2];
        for (int t2 = 0; t2 <= t; ++t2) drow[t2] = prow[t2] * (drow[t2] - dot);
        for (int t2 = t + 1; t2 < T; ++t2) drow[t2] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, HS, T, scale, dp, T, k, 3 * C, 1.0f,
                  dq, 3 * C);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, HS, T, scale, dp, T, q, 3 * C, 1.0f,
                  dk, 3 * C);
    }
  }
}

void gelu_forward(float* out, const float* inp, int N) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const float x = inp[i];
    const float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + cube)));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const float x = inp[i];
    const float cube = 0.044715f * x * x * x;
    const float arg = kGeluScale * (x + cube);
    const float th = std::tanh(arg);
    const float sech2 = 1.0f - th * th;
    const float grad =
        0.5f * (1.0f + th) + x * 0.5f * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += grad * dout[i];
  }
}

void residual_forward(float* out, const float* a, const float* b, int N) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int N) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

void crossentropy_forward(float* probs, float* losses, const float* logits, const int* targets,
                          int N, int V) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const float* x = logits + static_cast<size_t>(i) * V;
    float* p = probs + static_cast<size_t>(i) * V;
    float maxval = x[0];
    for (int v = 1; v < V; ++v) maxval = std::max(maxval, x[v]);
    float sum = 0.0f;
    for (int v = 0; v < V; ++v) {
      p[v] = std::exp(x[v] - maxval);
      sum += p[v];
    }
    const float inv = 1.0f / sum;
    for (int v = 0; v < V; ++v) p[v] *= inv;
    if (losses != nullptr) losses[i] = -std::log(p[targets[i]]);
  }
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss,
                           int N, int V) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < N; ++i) {
    const float* p = probs + static_cast<size_t>(i) * V;
    float* d = dlogits + static_cast<size_t>(i) * V;
    for (int v = 0; v < V; ++v) {
      const float indicator = v == targets[i] ? 1.0f : 0.0f;
      d[v] += (p[v] - indicator) * dloss;
    }
  }
}

}  // namespace hycc::train
