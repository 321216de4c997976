// Plain loops in double precision, following llm.c's CPU reference (train_gpt2.c).
#include "kernels_reference.h"

#include <cmath>
#include <vector>

namespace hycc::train::reference {

void encoder_forward(double* out, const int* inp, const double* wte, const double* wpe, int B,
                     int T, int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const int token = inp[b * T + t];
      for (int c = 0; c < C; ++c) {
        out[(b * T + t) * C + c] = wte[token * C + c] + wpe[t * C + c];
      }
    }
  }
}

void encoder_backward(double* dwte, double* dwpe, const double* dout, const int* inp, int B, int T,
                      int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const int token = inp[b * T + t];
      for (int c = 0; c < C; ++c) {
        dwte[token * C + c] += dout[(b * T + t) * C + c];
        dwpe[t * C + c] += dout[(b * T + t) * C + c];
      }
    }
  }
}

void layernorm_forward(double* out, double* mean, double* rstd, const double* inp,
                       const double* weight, const double* bias, int N, int C) {
  for (int i = 0; i < N; ++i) {
    const double* x = inp + i * C;
    double m = 0.0;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
    double v = 0.0;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    for (int c = 0; c < C; ++c) out[i * C + c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward(double* dinp, double* dweight, double* dbias, const double* dout,
                        const double* inp, const double* weight, const double* mean,
                        const double* rstd, int N, int C) {
  for (int i = 0; i < N; ++i) {
    double dnorm_mean = 0.0;
    double dnorm_norm_mean = 0.0;
    for (int c = 0; c < C; ++c) {
      const double norm = (inp[i * C + c] - mean[i]) * rstd[i];
      const double dnorm = weight[c] * dout[i * C + c];
      dnorm_mean += dnorm / C;
      dnorm_norm_mean += dnorm * norm / C;
    }
    for (int c = 0; c < C; ++c) {
      const double norm = (inp[i * C + c] - mean[i]) * rstd[i];
      const double dnorm = weight[c] * dout[i * C + c];
      dbias[c] += dout[i * C + c];
      dweight[c] += norm * dout[i * C + c];
      dinp[i * C + c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[i];
    }
  }
}

void matmul_forward(double* out, const double* inp, const double* weight, const double* bias, int N,
                    int C, int OC) {
  for (int i = 0; i < N; ++i) {
    for (int o = 0; o < OC; ++o) {
      double sum = bias != nullptr ? bias[o] : 0.0;
      for (int c = 0; c < C; ++c) sum += inp[i * C + c] * weight[o * C + c];
      out[i * OC + o] = sum;
    }
  }
}

void matmul_backward(double* dinp, double* dweight, double* dbias, const double* dout,
                     const double* inp, const double* weight, int N, int C, int OC) {
  for (int i = 0; i < N; ++i) {
    for (int o = 0; o < OC; ++o) {
      const double d = dout[i * OC + o];
      if (dbias != nullptr) dbias[o] += d;
      for (int c = 0; c < C; ++c) {
        if (dinp != nullptr) dinp[i * C + c] += weight[o * C + c] * d;
        dweight[o * C + c] += inp[i * C + c] * d;
      }
    }
  }
}

void attention_forward(double* out, double* preatt, double* att, const double* qkv, int B, int T,
                       int NH, int HS) {
  const int C = NH * HS;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < NH; ++h) {
        const double* q = qkv + (b * T + t) * 3 * C + h * HS;
        double* pre = preatt + ((b * NH + h) * T + t) * T;
        double* a = att + ((b * NH + h) * T + t) * T;
        double maxval = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* k = qkv + (b * T + t2) * 3 * C + C + h * HS;
          double dot = 0.0;
          for (int i = 0; i < HS; ++i) dot += q[i] * k[i];
          pre[t2] = dot * scale;
          if (pre[t2] > maxval) maxval = pre[t2];
        }
        double sum = 0.0;
        for (int t2 = 0; t2 <= t; ++t2) {
          a[t2] = std::exp(pre[t2] - maxval);
          sum += a[t2];
        }
        for (int t2 = 0; t2 < T; ++t2) {
          if (t2 <= t) {
            a[t2] /= sum;
          } else {
            pre[t2] = 0.0;
            a[t2] = 0.0;
          }
        }
        double* o = out + (b * T + t) * C + h * HS;
        for (int i = 0; i < HS; ++i) o[i] = 0.0;
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* v = qkv + (b * T + t2) * 3 * C + 2 * C + h * HS;
          for (int i = 0; i < HS; ++i) o[i] += a[t2] * v[i];
        }
      }
    }
  }
}

void attention_backward(double* dqkv, const double* dout, const double* qkv, const double* att,
                        int B, int T, int NH, int HS) {
  const int C = NH * HS;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<double> datt(T);
  std::vector<double> dpre(T);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < NH; ++h) {
        const double* a = att + ((b * NH + h) * T + t) * T;
        const double* d = dout + (b * T + t) * C + h * HS;
        const double* q = qkv + (b * T + t) * 3 * C + h * HS;
        double* dq = dqkv + (b * T + t) * 3 * C + h * HS;
        // out = sum_t2 att[t2] * v[t2]
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* v = qkv + (b * T + t2) * 3 * C + 2 * C + h * HS;
          double* dv = dqkv + (b * T + t2) * 3 * C + 2 * C + h * HS;
          datt[t2] = 0.0;
          for (int i = 0; i < HS; ++i) {
            datt[t2] += v[i] * d[i];
            dv[i] += a[t2] * d[i];
          }
        }
        // softmax: dpre[t3] = sum_t2 att[t2] * (indicator(t2 == t3) - att[t3]) * datt[t2]
        for (int t3 = 0; t3 <= t; ++t3) {
          dpre[t3] = 0.0;
          for (int t2 = 0; t2 <= t; ++t2) {
            const double indicator = t2 == t3 ? 1.0 : 0.0;
            dpre[t3] += a[t2] * (indicator - a[t3]) * datt[t2];
          }
        }
        // pre[t2] = scale * q . k[t2]
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* k = qkv + (b * T + t2) * 3 * C + C + h * HS;
          double* dk = dqkv + (b * T + t2) * 3 * C + C + h * HS;
          for (int i = 0; i < HS; ++i) {
            dq[i] += k[i] * dpre[t2] * scale;
            dk[i] += q[i] * dpre[t2] * scale;
          }
        }
      }
    }
  }
}

void gelu_forward(double* out, const double* inp, int N) {
  const double s = std::sqrt(2.0 / M_PI);
  for (int i = 0; i < N; ++i) {
    const double x = inp[i];
    out[i] = 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
  }
}

void gelu_backward(double* dinp, const double* inp, const double* dout, int N) {
  const double s = std::sqrt(2.0 / M_PI);
  for (int i = 0; i < N; ++i) {
    const double x = inp[i];
    const double th = std::tanh(s * (x + 0.044715 * x * x * x));
    const double grad =
        0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * s * (1.0 + 3 * 0.044715 * x * x);
    dinp[i] += grad * dout[i];
  }
}

void residual_forward(double* out, const double* a, const double* b, int N) {
  for (int i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

void residual_backward(double* da, double* db, const double* dout, int N) {
  for (int i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

void crossentropy_forward(double* probs, double* losses, const double* logits, const int* targets,
                          int N, int V) {
  for (int i = 0; i < N; ++i) {
    double maxval = -INFINITY;
    for (int v = 0; v < V; ++v) maxval = std::fmax(maxval, logits[i * V + v]);
    double sum = 0.0;
    for (int v = 0; v < V; ++v) sum += std::exp(logits[i * V + v] - maxval);
    for (int v = 0; v < V; ++v) probs[i * V + v] = std::exp(logits[i * V + v] - maxval) / sum;
    losses[i] = -std::log(probs[i * V + targets[i]]);
  }
}

void crossentropy_backward(double* dlogits, const double* probs, const int* targets, double dloss,
                           int N, int V) {
  for (int i = 0; i < N; ++i) {
    for (int v = 0; v < V; ++v) {
      const double indicator = v == targets[i] ? 1.0 : 0.0;
      dlogits[i * V + v] += (probs[i * V + v] - indicator) * dloss;
    }
  }
}

}  // namespace hycc::train::reference
