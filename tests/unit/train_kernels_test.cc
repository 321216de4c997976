// hycc-train kernels: each fast fp32 kernel against its double-precision reference (forward and
// backward), and each reference backward against central finite differences of its forward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "kernels.h"
#include "kernels_reference.h"
#include "rng.h"

namespace hycc::train {
namespace {

std::vector<float> randn(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal() * scale);
  return v;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<int> random_ids(size_t n, int limit, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> v(n);
  for (int& x : v) x = static_cast<int>(rng.below(static_cast<uint64_t>(limit)));
  return v;
}

// Fast (float) against reference (double): |fast - ref| <= tol * (1 + |ref|) elementwise.
void expect_close(const std::vector<float>& fast, const std::vector<double>& ref, double tol,
                  const char* what) {
  ASSERT_EQ(fast.size(), ref.size()) << what;
  double worst = 0.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(fast[i] - ref[i]) / (1.0 + std::fabs(ref[i]));
    if (err > worst) {
      worst = err;
      worst_i = i;
    }
  }
  EXPECT_LE(worst, tol) << what << ": worst at " << worst_i << " fast " << fast[worst_i]
                        << " reference " << ref[worst_i];
}

// Checks grad (analytic) against central differences of objective() over x, at up to 40
// positions spread over x. objective reads x.
void expect_matches_finite_differences(std::vector<double>& x, const std::vector<double>& grad,
                                       const std::function<double()>& objective, const char* what) {
  ASSERT_EQ(x.size(), grad.size()) << what;
  const size_t stride = std::max<size_t>(1, x.size() / 40);
  for (size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    const double h = 1e-5 * std::max(1.0, std::fabs(saved));
    x[i] = saved + h;
    const double plus = objective();
    x[i] = saved - h;
    const double minus = objective();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-6 * (1.0 + std::fabs(numeric))) << what << " element " << i;
  }
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

constexpr int B = 2;
constexpr int T = 5;
constexpr int C = 8;
constexpr int N = B * T;

TEST(TrainKernels, Encoder) {
  const int V = 11;
  const auto tokens = random_ids(N, V, 1);
  const auto wte = randn(static_cast<size_t>(V) * C, 2);
  const auto wpe = randn(static_cast<size_t>(T) * C, 3);
  const auto dout = randn(static_cast<size_t>(N) * C, 4);
  std::vector<float> out(N * C);
  encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  auto wte_d = to_double(wte);
  auto wpe_d = to_double(wpe);
  std::vector<double> out_d(N * C);
  auto forward = [&] {
    reference::encoder_forward(out_d.data(), tokens.data(), wte_d.data(), wpe_d.data(), B, T, C);
    return dot(out_d, to_double(dout));
  };
  forward();
  expect_close(out, out_d, 1e-6, "encoder forward");

  std::vector<float> dwte(wte.size()), dwpe(wpe.size());
  encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
  std::vector<double> dwte_d(wte.size()), dwpe_d(wpe.size());
  const auto dout_d = to_double(dout);
  reference::encoder_backward(dwte_d.data(), dwpe_d.data(), dout_d.data(), tokens.data(), B, T, C);
  expect_close(dwte, dwte_d, 1e-6, "encoder dwte");
  expect_close(dwpe, dwpe_d, 1e-6, "encoder dwpe");
  expect_matches_finite_differences(wte_d, dwte_d, forward, "encoder dwte");
  expect_matches_finite_differences(wpe_d, dwpe_d, forward, "encoder dwpe");
}

TEST(TrainKernels, Layernorm) {
  const auto inp = randn(N * C, 5, 2.0);
  const auto weight = randn(C, 6);
  const auto bias = randn(C, 7);
  const auto dout = randn(N * C, 8);
  std::vector<float> out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N,
                    C);
  auto inp_d = to_double(inp);
  auto w_d = to_double(weight);
  auto b_d = to_double(bias);
  const auto dout_d = to_double(dout);
  std::vector<double> out_d(N * C), mean_d(N), rstd_d(N);
  auto forward = [&] {
    reference::layernorm_forward(out_d.data(), mean_d.data(), rstd_d.data(), inp_d.data(),
                                 w_d.data(), b_d.data(), N, C);
    return dot(out_d, dout_d);
  };
  forward();
  expect_close(out, out_d, 1e-5, "layernorm forward");

  std::vector<float> dinp(N * C), dw(C), db(C);
  layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(),
                     mean.data(), rstd.data(), N, C);
  std::vector<double> dinp_d(N * C), dw_d(C), db_d(C);
  reference::layernorm_backward(dinp_d.data(), dw_d.data(), db_d.data(), dout_d.data(),
                                inp_d.data(), w_d.data(), mean_d.data(), rstd_d.data(), N, C);
  expect_close(dinp, dinp_d, 1e-5, "layernorm dinp");
  expect_close(dw, dw_d, 1e-5, "layernorm dweight");
  expect_close(db, db_d, 1e-5, "layernorm dbias");
  expect_matches_finite_differences(inp_d, dinp_d, forward, "layernorm dinp");
  expect_matches_finite_differences(w_d, dw_d, forward, "layernorm dweight");
  expect_matches_finite_differences(b_d, db_d, forward, "layernorm dbias");
}

// Sizes that cross the fast gemm's tiles (64 rows, 256 columns) and odd ones.
class TrainMatmul : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(TrainMatmul, MatchesReference) {
  const auto [n, c, oc] = GetParam();
  const auto inp = randn(static_cast<size_t>(n) * c, 9);
  const auto weight = randn(static_cast<size_t>(oc) * c, 10);
  const auto bias = randn(oc, 11);
  const auto dout = randn(static_cast<size_t>(n) * oc, 12);
  std::vector<float> out(static_cast<size_t>(n) * oc);
  matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), n, c, oc);
  auto inp_d = to_double(inp);
  auto w_d = to_double(weight);
  auto b_d = to_double(bias);
  const auto dout_d = to_double(dout);
  std::vector<double> out_d(out.size());
  auto forward = [&] {
    reference::matmul_forward(out_d.data(), inp_d.data(), w_d.data(), b_d.data(), n, c, oc);
    return dot(out_d, dout_d);
  };
  forward();
  const double tol = 1e-6 * std::sqrt(static_cast<double>(std::max(c, n)));
  expect_close(out, out_d, tol, "matmul forward");

  // Accumulation: gradients start non-zero and the kernels add to them.
  std::vector<float> dinp(inp.size(), 1.0f), dw(weight.size(), 1.0f), db(oc, 1.0f);
  matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(), n, c,
                  oc);
  std::vector<double> dinp_d(inp.size(), 1.0), dw_d(weight.size(), 1.0), db_d(oc, 1.0);
  reference::matmul_backward(dinp_d.data(), dw_d.data(), db_d.data(), dout_d.data(), inp_d.data(),
                             w_d.data(), n, c, oc);
  expect_close(dinp, dinp_d, tol, "matmul dinp");
  expect_close(dw, dw_d, tol, "matmul dweight");
  expect_close(db, db_d, tol, "matmul dbias");
  if (n * c * oc <= 4000) {
    for (double& x : dinp_d) x -= 1.0;
    for (double& x : dw_d) x -= 1.0;
    for (double& x : db_d) x -= 1.0;
    expect_matches_finite_differences(inp_d, dinp_d, forward, "matmul dinp");
    expect_matches_finite_differences(w_d, dw_d, forward, "matmul dweight");
    expect_matches_finite_differences(b_d, db_d, forward, "matmul dbias");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TrainMatmul,
                         ::testing::Values(std::make_tuple(10, 8, 12), std::make_tuple(1, 1, 1),
                                           std::make_tuple(7, 5, 3),
                                           std::make_tuple(130, 33, 300)));

TEST(TrainKernels, Attention) {
  const int NH = 2;
  const int HS = 4;
  const int TT = 7;
  const int CC = NH * HS;
  const size_t n = static_cast<size_t>(B) * TT;
  const auto qkv = randn(n * 3 * CC, 13);
  const auto dout = randn(n * CC, 14);
  std::vector<float> out(n * CC), att(static_cast<size_t>(B) * NH * TT * TT);
  attention_forward(out.data(), att.data(), qkv.data(), B, TT, NH, HS);
  auto qkv_d = to_double(qkv);
  const auto dout_d = to_double(dout);
  std::vector<double> out_d(out.size()), pre_d(att.size()), att_d(att.size());
  auto forward = [&] {
    reference::attention_forward(out_d.data(), pre_d.data(), att_d.data(), qkv_d.data(), B, TT, NH,
                                 HS);
    return dot(out_d, dout_d);
  };
  forward();
  expect_close(out, out_d, 1e-5, "attention forward");
  expect_close(att, att_d, 1e-5, "attention probabilities");

  std::vector<float> dqkv(qkv.size()), datt(att.size());
  attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, TT, NH, HS);
  std::vector<double> dqkv_d(qkv.size());
  reference::attention_backward(dqkv_d.data(), dout_d.data(), qkv_d.data(), att_d.data(), B, TT, NH,
                                HS);
  expect_close(dqkv, dqkv_d, 1e-5, "attention dqkv");
  expect_matches_finite_differences(qkv_d, dqkv_d, forward, "attention dqkv");
}

TEST(TrainKernels, Gelu) {
  const int n = 101;
  const auto inp = randn(n, 15, 3.0);
  const auto dout = randn(n, 16);
  std::vector<float> out(n), dinp(n);
  gelu_forward(out.data(), inp.data(), n);
  gelu_backward(dinp.data(), inp.data(), dout.data(), n);
  auto inp_d = to_double(inp);
  const auto dout_d = to_double(dout);
  std::vector<double> out_d(n), dinp_d(n);
  auto forward = [&] {
    reference::gelu_forward(out_d.data(), inp_d.data(), n);
    return dot(out_d, dout_d);
  };
  forward();
  reference::gelu_backward(dinp_d.data(), inp_d.data(), dout_d.data(), n);
  expect_close(out, out_d, 1e-6, "gelu forward");
  expect_close(dinp, dinp_d, 1e-6, "gelu backward");
  expect_matches_finite_differences(inp_d, dinp_d, forward, "gelu");
}

TEST(TrainKernels, Residual) {
  const int n = 37;
  const auto a = randn(n, 17);
  const auto b = randn(n, 18);
  const auto dout = randn(n, 19);
  std::vector<float> out(n), da(n), db(n);
  residual_forward(out.data(), a.data(), b.data(), n);
  residual_backward(da.data(), db.data(), dout.data(), n);
  auto a_d = to_double(a);
  auto b_d = to_double(b);
  const auto dout_d = to_double(dout);
  std::vector<double> out_d(n), da_d(n), db_d(n);
  auto forward = [&] {
    reference::residual_forward(out_d.data(), a_d.data(), b_d.data(), n);
    return dot(out_d, dout_d);
  };
  forward();
  reference::residual_backward(da_d.data(), db_d.data(), dout_d.data(), n);
  expect_close(out, out_d, 1e-7, "residual forward");
  expect_close(da, da_d, 0.0, "residual da");
  expect_close(db, db_d, 0.0, "residual db");
  expect_matches_finite_differences(a_d, da_d, forward, "residual da");
  expect_matches_finite_differences(b_d, db_d, forward, "residual db");
}

TEST(TrainKernels, CrossEntropy) {
  const int V = 13;
  const auto logits = randn(static_cast<size_t>(N) * V, 20, 2.0);
  const auto targets = random_ids(N, V, 21);
  const float dloss = 1.0f / N;
  std::vector<float> probs(logits.size()), losses(N), dlogits(logits.size());
  crossentropy_forward(probs.data(), losses.data(), logits.data(), targets.data(), N, V);
  crossentropy_backward(dlogits.data(), probs.data(), targets.data(), dloss, N, V);
  auto logits_d = to_double(logits);
  std::vector<double> probs_d(logits.size()), losses_d(N), dlogits_d(logits.size());
  auto forward = [&] {
    reference::crossentropy_forward(probs_d.data(), losses_d.data(), logits_d.data(),
                                    targets.data(), N, V);
    double sum = 0.0;
    for (double l : losses_d) sum += l * dloss;
    return sum;
  };
  forward();
  reference::crossentropy_backward(dlogits_d.data(), probs_d.data(), targets.data(), dloss, N, V);
  expect_close(probs, probs_d, 1e-6, "softmax");
  expect_close(losses, losses_d, 1e-6, "losses");
  expect_close(dlogits, dlogits_d, 1e-7, "dlogits");
  expect_matches_finite_differences(logits_d, dlogits_d, forward, "crossentropy dlogits");
}

}  // namespace
}  // namespace hycc::train
