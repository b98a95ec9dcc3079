// grad_in_this_thread (runtime/src/local_backward.cc) against the autograd
// engine: the same gradients for ops with broadcasting, views, several outputs,
// unused leaves and a retained graph.
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <functional>
#include <string>
#include <vector>

#include "../../runtime/src/internal.h"

namespace placer {
namespace {

using Fn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

void expect_same_gradients(const std::string& what, const std::vector<at::Tensor>& inputs, const Fn& f) {
  SCOPED_TRACE(what);
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& x : inputs) leaves.push_back(x.detach().requires_grad_(x.is_floating_point()));
  std::vector<at::Tensor> outs;
  {
    at::AutoGradMode on(true);
    outs = f(leaves);
  }
  std::vector<at::Tensor> used_outs, grads, float_leaves;
  for (const at::Tensor& y : outs)
    if (y.requires_grad()) {
      used_outs.push_back(y);
      grads.push_back(at::randn_like(y));
    }
  for (const at::Tensor& l : leaves)
    if (l.requires_grad()) float_leaves.push_back(l);
  ASSERT_FALSE(used_outs.empty());
  // Retained first, so that the engine can run over the same graph afterwards.
  const std::vector<at::Tensor> mine = grad_in_this_thread(used_outs, grads, float_leaves, /*retain_graph=*/true);
  std::vector<at::Tensor> engine;
  {
    at::AutoGradMode on(true);
    engine = torch::autograd::grad(used_outs, float_leaves, grads, /*retain_graph=*/false, false, true);
  }
  ASSERT_EQ(mine.size(), engine.size());
  for (size_t j = 0; j < mine.size(); ++j) {
    ASSERT_EQ(mine[j].defined(), engine[j].defined()) << "leaf " << j;
    if (!mine[j].defined()) continue;
    EXPECT_EQ(mine[j].sizes(), engine[j].sizes()) << "leaf " << j;
    EXPECT_TRUE(at::allclose(mine[j], engine[j], 1e-6, 1e-6)) << "leaf " << j;
  }
}

TEST(LocalBackward, SameGradientsAsTheAutogradEngine) {
  at::manual_seed(3);
  const at::Tensor a = at::randn({4, 5}), b = at::randn({5}), w = at::randn({3, 5}), c = at::randn({4, 3});
  expect_same_gradients("broadcast add", {a, b}, [](const auto& x) { return std::vector<at::Tensor>{x[0] + x[1]}; });
  expect_same_gradients("linear", {a, w, at::randn({3})},
                        [](const auto& x) { return std::vector<at::Tensor>{at::linear(x[0], x[1], x[2])}; });
  expect_same_gradients("view and transpose", {a},
                        [](const auto& x) { return std::vector<at::Tensor>{x[0].t().reshape({20}).narrow(0, 2, 9)}; });
  expect_same_gradients("two outputs", {a}, [](const auto& x) {
    auto [values, indices] = at::max(x[0], 1);
    return std::vector<at::Tensor>{values, x[0].sin()};
  });
  expect_same_gradients("chunk", {a}, [](const auto& x) {
    auto parts = x[0].chunk(2, 1);
    return std::vector<at::Tensor>{parts[0] * 2, parts[1].exp()};
  });
  expect_same_gradients("composite (softmax of a matmul)", {a, w.t().contiguous()},
                        [](const auto& x) { return std::vector<at::Tensor>{at::softmax(at::matmul(x[0], x[1]), 1)}; });
  expect_same_gradients("unused leaf", {a, c}, [](const auto& x) { return std::vector<at::Tensor>{x[0].relu()}; });
  expect_same_gradients("an integer input", {a, at::tensor({0, 2, 1, 3}, at::kLong)},
                        [](const auto& x) { return std::vector<at::Tensor>{x[0].index_select(0, x[1])}; });
  expect_same_gradients(
      "lstm cell", {at::randn({2, 3}), at::randn({2, 4}), at::randn({2, 4}), at::randn({16, 3}), at::randn({16, 4})},
      [](const auto& x) {
        auto [h, cell] = at::lstm_cell(x[0], {x[1], x[2]}, x[3], x[4]);
        return std::vector<at::Tensor>{h, cell};
      });
}

// One leaf asked for twice (a backward op's args[1] naming an input twice): both
// get its gradient, as from the engine (one of them used to stay undefined).
TEST(LocalBackward, ALeafAskedForTwiceGetsItsGradientBothTimes) {
  const at::Tensor x = at::randn({3}).requires_grad_(true);
  at::Tensor y;
  {
    at::AutoGradMode on(true);
    y = x.exp();
  }
  const auto g = grad_in_this_thread({y}, {at::ones_like(y)}, {x, x}, /*retain_graph=*/false);
  ASSERT_EQ(g.size(), 2u);
  ASSERT_TRUE(g[0].defined());
  ASSERT_TRUE(g[1].defined());
  EXPECT_TRUE(at::allclose(g[0], x.detach().exp()));
  EXPECT_TRUE(at::allclose(g[1], x.detach().exp()));
}

// Without retain, saved tensors are released: a second run over the graph fails as in the engine.
TEST(LocalBackward, ReleasesSavedTensorsUnlessRetained) {
  const at::Tensor x = at::randn({3}).requires_grad_(true);
  at::Tensor y;
  {
    at::AutoGradMode on(true);
    y = x.exp();
  }
  const auto g = grad_in_this_thread({y}, {at::ones_like(y)}, {x}, /*retain_graph=*/false);
  EXPECT_TRUE(at::allclose(g[0], x.detach().exp()));
  EXPECT_THROW(grad_in_this_thread({y}, {at::ones_like(y)}, {x}, false), c10::Error);
}

}  // namespace
}  // namespace placer
