// Reference kernels: the same layers as kernels.h written as the plainest loops, in double
// precision, single-threaded. They are the oracle of the fast kernels' tests and, being exact
// to about 1e-15, of the finite-difference checks of every backward. Same shapes and the same
// accumulate-into-gradients convention as kernels.h.
#pragma once

namespace hycc::train::reference {

void encoder_forward(double* out, const int* inp, const double* wte, const double* wpe, int B,
                     int T, int C);
void encoder_backward(double* dwte, double* dwpe, const double* dout, const int* inp, int B, int T,
                      int C);

void layernorm_forward(double* out, double* mean, double* rstd, const double* inp,
                       const double* weight, const double* bias, int N, int C);
void layernorm_backward(double* dinp, double* dweight, double* dbias, const double* dout,
                        const double* inp, const double* weight, const double* mean,
                        const double* rstd, int N, int C);

void matmul_forward(double* out, const double* inp, const double* weight, const double* bias, int N,
                    int C, int OC);
void matmul_backward(double* dinp, double* dweight, double* dbias, const double* dout,
                     const double* inp, const double* weight, int N, int C, int OC);

// preatt, att (B,NH,T,T): scores before and after the causal softmax.
void attention_forward(double* out, double* preatt, double* att, const double* qkv, int B, int T,
                       int NH, int HS);
void attention_backward(double* dqkv, const double* dout, const double* qkv, const double* att,
                        int B, int T, int NH, int HS);

void gelu_forward(double* out, const double* inp, int N);
void gelu_backward(double* dinp, const double* inp, const double* dout, int N);

void residual_forward(double* out, const double* a, const double* b, int N);
void residual_backward(double* da, double* db, const double* dout, int N);

void crossentropy_forward(double* probs, double* losses, const double* logits, const int* targets,
                          int N, int V);
void crossentropy_backward(double* dlogits, const double* probs, const int* targets, double dloss,
                           int N, int V);

}  // namespace hycc::train::reference
