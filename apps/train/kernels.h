// Forward and backward kernels of the GPT in fp32 on the CPU (llm.c's layers). Shapes are given
// in comments as (dim, ...), row-major; N = B * T rows. Every backward ACCUMULATES (+=) into its
// gradient outputs, so callers zero them first (or accumulate micro-batches on purpose).
//
// Determinism: every kernel splits its work into pieces whose boundaries do not depend on the
// number of threads, and every reduction runs in a fixed order inside one piece, so results are
// bit-identical for any OMP_NUM_THREADS. Matrix products call OpenBLAS sgemm single-threaded
// (openblas_set_num_threads(1)) on fixed tiles of the output from inside our OpenMP loops.
#pragma once

namespace hycc::train {

// C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C, row-major with leading dimensions;
// op(X) = X^T when trans_x. Computed as fixed tiles of C, in parallel.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

// out (B,T,C) = wte[inp] (V,C) + wpe[t] (maxT,C); inp (B,T) token ids.
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C);
// dwte (V,C) +=, dwpe (maxT,C) += from dout (B,T,C).
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C);

// out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) saved for the backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C);
// dinp (N,C) +=, dweight (C) +=, dbias (C) +=.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int N, int C);

// out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC); bias may be null.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC);
// dinp (N,C) +=, dweight (OC,C) +=, dbias (OC) += from dout (N,OC). dinp and dbias may be null.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC);

// out (N,C) += bias (C): the bias of a row-parallel matmul, added after the reduction.
void bias_forward(float* out, const float* bias, int N, int C);

// Causal self-attention over NH heads of size HS (C = NH * HS).
// qkv (B,T,3C): per position [q (C) | k (C) | v (C)], head h at h*HS in each part.
// out (B,T,C); att (B,NH,T,T) softmax probabilities saved for the backward (0 above diagonal).
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int NH, int HS);
// dqkv (B,T,3C) +=; datt (B,NH,T,T) is scratch.
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int NH, int HS);

// out (N) = gelu(inp (N)), tanh approximation.
void gelu_forward(float* out, const float* inp, int N);
// dinp (N) += gelu'(inp) * dout.
void gelu_backward(float* dinp, const float* inp, const float* dout, int N);

// out (N) = a + b.
void residual_forward(float* out, const float* a, const float* b, int N);
// da (N) += dout, db (N) += dout.
void residual_backward(float* da, float* db, const float* dout, int N);

// probs (N,V) = softmax(logits (N,V)); losses (N) = -log probs[target].
void crossentropy_forward(float* probs, float* losses, const float* logits, const int* targets,
                          int N, int V);
// dlogits (N,V) += (probs - onehot(target)) * dloss, where dloss is d(objective)/d(losses[i]),
// the same for every row (1 / tokens in the optimizer step for a mean loss).
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss,
                           int N, int V);

}  // namespace hycc::train
