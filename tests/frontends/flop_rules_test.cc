// The PyTorch importers' FLOP rules (frontends/torch/src/flop_rules.cc), called
// through estimate_flops with real ATen inputs and the outputs ATen computes from
// them, against hand-computed counts: einsum, bilinear, the recurrent cells, the
// LSTM's flat weights with projections, and the add-product family (addmm,
// baddbmm, addbmm, addmv, addr). One TorchScript module, scripted here, checks
// the rules also see the importer's arguments.
#include <gtest/gtest.h>

#include <torch/script.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "../../frontends/torch/src/recorder.h"
#include "placer/frontends/torch_import.h"

namespace placer {
namespace {

using detail::estimate_flops;

c10::IValue tensors(const std::vector<at::Tensor>& list) {
  c10::List<at::Tensor> out;
  for (const auto& t : list) out.push_back(t);
  return out;
}

at::Tensor randn(std::vector<int64_t> shape) { return at::randn(shape); }

double einsum_flops(const std::string& equation, const std::vector<at::Tensor>& operands) {
  const at::Tensor out = at::einsum(equation, operands);
  return estimate_flops("aten::einsum", {equation, tensors(operands)}, {out});
}

TEST(FlopRules, EinsumBatchedProductCountsLikeBmm) {
  const at::Tensor a = randn({4, 16, 256});
  const double flops = einsum_flops("bik,bjk->bij", {a, a});
  EXPECT_DOUBLE_EQ(flops, 2.0 * 4 * 16 * 16 * 256);  // 524,288: one multiply-add per point, 2 FLOPs
  const at::Tensor bt = a.transpose(1, 2);
  EXPECT_DOUBLE_EQ(flops, estimate_flops("aten::bmm", {a, bt}, {at::bmm(a, bt)}));
}

TEST(FlopRules, EinsumEllipsisBroadcastsAndSpaces) {
  const at::Tensor a = randn({2, 3, 4, 5}), b = randn({3, 5, 6});
  const double flops = einsum_flops("...ik,...kj->...ij", {a, b});
  EXPECT_DOUBLE_EQ(flops, 2.0 * 2 * 3 * 4 * 5 * 6);
  EXPECT_DOUBLE_EQ(flops, estimate_flops("aten::matmul", {a, b}, {at::matmul(a, b)}));
  EXPECT_DOUBLE_EQ(einsum_flops(" ... i k , ... k j -> ... i j", {a, b}), flops);
  // An ellipsis left out of an explicit output is summed.
  EXPECT_DOUBLE_EQ(einsum_flops("...ik,...kj->ij", {a, b}), flops);
}

TEST(FlopRules, EinsumImplicitOutput) {
  const at::Tensor a = randn({3, 4}), b = randn({4, 5}), sq = randn({6, 6});
  EXPECT_DOUBLE_EQ(einsum_flops("ij,jk", {a, b}), 2.0 * 3 * 4 * 5);  // matmul
  EXPECT_DOUBLE_EQ(einsum_flops("ij,ij", {a, a}), 2.0 * 3 * 4);      // dot: every label summed
  EXPECT_DOUBLE_EQ(einsum_flops("ii", {sq}), 6.0);                   // trace: one add per diagonal element
  EXPECT_DOUBLE_EQ(einsum_flops("ji", {a}), 0.0);                    // transpose
  EXPECT_DOUBLE_EQ(einsum_flops("...ij", {a}), 0.0);
}

TEST(FlopRules, EinsumOneOperandAndProductsWithoutSums) {
  const at::Tensor a = randn({3, 4}), v = randn({7});
  EXPECT_DOUBLE_EQ(einsum_flops("ij->ji", {a}), 0.0);
  EXPECT_DOUBLE_EQ(einsum_flops("ij->i", {a}), 12.0);
  EXPECT_DOUBLE_EQ(einsum_flops("ij->", {a}), 12.0);
  EXPECT_DOUBLE_EQ(einsum_flops("ij,ij->ij", {a, a}), 12.0);  // elementwise product, as aten::mul
  EXPECT_DOUBLE_EQ(einsum_flops("i,j->ij", {v, v}), 49.0);    // outer product
}

TEST(FlopRules, EinsumThreeOperandsContractLeftToRight) {
  const at::Tensor a = randn({2, 3}), b = randn({3, 4}), c = randn({4, 5});
  // (ab) over i j k, then (ab)c over i k l.
  EXPECT_DOUBLE_EQ(einsum_flops("ij,jk,kl->il", {a, b, c}), 2.0 * 2 * 3 * 4 + 2.0 * 2 * 4 * 5);
  // j is needed by the output, so the first step sums nothing.
  EXPECT_DOUBLE_EQ(einsum_flops("ij,jk,kl->ijl", {a, b, c}), 2.0 * 3 * 4 + 2.0 * 2 * 3 * 4 * 5);
}

// An equation the rule cannot read costs one op per output element, and never throws.
TEST(FlopRules, EinsumItCannotReadFallsBack) {
  const at::Tensor a = randn({3, 4}), b = randn({4, 5}), out = randn({3, 5});
  const auto flops = [&](const c10::IValue& equation, const c10::IValue& operands) {
    return estimate_flops("aten::einsum", {equation, operands}, {out});
  };
  for (const char* eq : {"ijk,jk->ik", "ij->ik,", "i$,jk->ik", "i..j,jk->ik", "......,jk", "ij,jk,kl->il", "ij",
                         "ij,jk->iz", "ij,jk->->ik", "", "ij,jk->i.k", "..i...,jk"}) {
    EXPECT_DOUBLE_EQ(flops(std::string(eq), tensors({a, b})), 15.0) << eq;
  }
  EXPECT_DOUBLE_EQ(flops(std::string("ij,jk->ik"), tensors({a})), 15.0);
  EXPECT_DOUBLE_EQ(flops(std::string("ij,jk->ik"), tensors({})), 15.0);
  EXPECT_DOUBLE_EQ(flops(std::string("ij,jk->ik"), tensors({a, at::Tensor()})), 15.0);
  EXPECT_DOUBLE_EQ(flops(std::string("ij,jk->ik"), c10::IValue(int64_t{3})), 15.0);
  EXPECT_DOUBLE_EQ(flops(c10::IValue(), tensors({a, b})), 15.0);
  c10::impl::GenericList mixed(c10::AnyType::get());
  mixed.push_back(a);
  mixed.push_back(c10::IValue(2.0));
  EXPECT_DOUBLE_EQ(flops(std::string("ij,jk->ik"), mixed), 15.0);
  EXPECT_DOUBLE_EQ(estimate_flops("aten::einsum", {}, {out}), 15.0);
  // A generic list of tensors is read as the tensor list.
  c10::impl::GenericList generic(c10::AnyType::get());
  generic.push_back(a);
  generic.push_back(b);
  EXPECT_DOUBLE_EQ(flops(std::string("ij,jk->ik"), generic), 2.0 * 3 * 4 * 5);
}

TEST(FlopRules, Bilinear) {
  const at::Tensor x = randn({8, 32}), w = randn({16, 32, 32}), bias = randn({16});
  // Per output element: x1 W_k (32 x 32 multiply-adds), then its dot with x2 (32), and the bias.
  EXPECT_DOUBLE_EQ(estimate_flops("aten::bilinear", {x, x, w, bias}, {at::bilinear(x, x, w, bias)}),
                   128 * 2.0 * (32 * 32 + 32) + 128);
  const at::Tensor x1 = randn({2, 3, 5}), x2 = randn({2, 3, 7}), w2 = randn({4, 5, 7});
  EXPECT_DOUBLE_EQ(estimate_flops("aten::bilinear", {x1, x2, w2, c10::IValue()}, {at::bilinear(x1, x2, w2, {})}),
                   24 * 2.0 * (5 * 7 + 7));
}

// Per row: 2 x (w_ih + w_hh [+ w_hr] elements) + 2 x gates (the biases) + pointwise x hidden.
double cell_flops(double rows, double in, double hidden, double gates, double pointwise, bool biases = true,
                  double proj = 0) {
  const double out = proj > 0 ? proj : hidden;
  const double weights = gates * hidden * (in + out) + proj * hidden;
  return rows * (2.0 * weights + (biases ? 2.0 * gates * hidden : 0.0) + pointwise * hidden);
}

TEST(FlopRules, LstmCellCountsLikeOneStepOfLstm) {
  const at::Tensor x = randn({8, 64}), h = randn({8, 128}), c = randn({8, 128});
  const at::Tensor w_ih = randn({512, 64}), w_hh = randn({512, 128}), b_ih = randn({512}), b_hh = randn({512});
  const auto [hy, cy] = at::lstm_cell(x, {h, c}, w_ih, w_hh, b_ih, b_hh);
  const double flops = estimate_flops("aten::lstm_cell", {x, tensors({h, c}), w_ih, w_hh, b_ih, b_hh}, {hy, cy});
  EXPECT_DOUBLE_EQ(flops, cell_flops(8, 64, 128, 4, 9));  // 1,590,272
  // nn.LSTM over one step of the same batch.
  const at::Tensor seq = x.unsqueeze(0), h0 = h.unsqueeze(0), c0 = c.unsqueeze(0);
  const auto [o, hn, cn] = at::lstm(seq, {h0, c0}, {w_ih, w_hh, b_ih, b_hh}, true, 1, 0.0, false, false, false);
  EXPECT_DOUBLE_EQ(estimate_flops("aten::lstm",
                                  {seq, tensors({h0, c0}), tensors({w_ih, w_hh, b_ih, b_hh}), true, int64_t{1}, 0.0,
                                   false, false, false},
                                  {o, hn, cn}),
                   flops);
  const auto [hy2, cy2] = at::lstm_cell(x, {h, c}, w_ih, w_hh, {}, {});
  EXPECT_DOUBLE_EQ(
      estimate_flops("aten::lstm_cell", {x, tensors({h, c}), w_ih, w_hh, c10::IValue(), c10::IValue()}, {hy2, cy2}),
      cell_flops(8, 64, 128, 4, 9, false));
}

TEST(FlopRules, GruAndRnnCells) {
  const at::Tensor x = randn({8, 64}), h = randn({8, 128});
  const at::Tensor w_ih = randn({384, 64}), w_hh = randn({384, 128}), b_ih = randn({384}), b_hh = randn({384});
  EXPECT_DOUBLE_EQ(
      estimate_flops("aten::gru_cell", {x, h, w_ih, w_hh, b_ih, b_hh}, {at::gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)}),
      cell_flops(8, 64, 128, 3, 8));
  EXPECT_DOUBLE_EQ(estimate_flops("aten::gru_cell", {x, h, w_ih, w_hh, c10::IValue(), c10::IValue()},
                                  {at::gru_cell(x, h, w_ih, w_hh, {}, {})}),
                   cell_flops(8, 64, 128, 3, 8, false));
  const at::Tensor r_ih = randn({128, 64}), r_hh = randn({128, 128}), rb = randn({128});
  EXPECT_DOUBLE_EQ(
      estimate_flops("aten::rnn_tanh_cell", {x, h, r_ih, r_hh, rb, rb}, {at::rnn_tanh_cell(x, h, r_ih, r_hh, rb, rb)}),
      cell_flops(8, 64, 128, 1, 1));
}

// nn.LSTM's flat weights per layer and direction: w_ih, w_hh[, b_ih, b_hh][, w_hr].
std::vector<at::Tensor> lstm_params(int64_t in, int64_t hidden, int64_t proj, int64_t layers, int64_t dirs,
                                    bool biases) {
  std::vector<at::Tensor> params;
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t d = 0; d < dirs; ++d) {
      params.push_back(randn({4 * hidden, l == 0 ? in : dirs * proj}));
      params.push_back(randn({4 * hidden, proj}));
      if (biases) params.push_back(randn({4 * hidden})), params.push_back(randn({4 * hidden}));
      params.push_back(randn({proj, hidden}));
    }
  }
  return params;
}

TEST(FlopRules, LstmWithProjectionsReadsFiveParamsPerLayerDirection) {
  const int64_t T = 5, B = 3, in = 10, H = 16, P = 6;
  for (bool biases : {true, false}) {
    const std::vector<at::Tensor> params = lstm_params(in, H, P, 2, 2, biases);
    const at::Tensor x = randn({T, B, in}), h0 = randn({4, B, P}), c0 = randn({4, B, H});
    const auto [o, hn, cn] = at::lstm(x, {h0, c0}, params, biases, 2, 0.0, false, true, false);
    const double flops = estimate_flops(
        "aten::lstm", {x, tensors({h0, c0}), tensors(params), biases, int64_t{2}, 0.0, false, true, false},
        {o, hn, cn});
    const double layer0 = cell_flops(T * B, in, H, 4, 9, biases, P);
    const double layer1 = cell_flops(T * B, 2 * P, H, 4, 9, biases, P);
    EXPECT_DOUBLE_EQ(flops, 2 * layer0 + 2 * layer1) << "biases " << biases;
  }
}

TEST(FlopRules, LstmPackedSequence) {
  const std::vector<at::Tensor> params = lstm_params(10, 16, 16, 1, 1, true);
  const std::vector<at::Tensor> no_proj(params.begin(), params.begin() + 4);
  const at::Tensor data = randn({7, 10}), batch_sizes = at::tensor({3, 2, 2}, at::kLong);
  const at::Tensor h0 = randn({1, 3, 16}), c0 = randn({1, 3, 16});
  const auto [o, hn, cn] = at::lstm(data, batch_sizes, {h0, c0}, no_proj, true, 1, 0.0, false, false);
  EXPECT_DOUBLE_EQ(
      estimate_flops("aten::lstm",
                     {data, batch_sizes, tensors({h0, c0}), tensors(no_proj), true, int64_t{1}, 0.0, false, false},
                     {o, hn, cn}),
      cell_flops(7, 10, 16, 4, 9));
}

TEST(FlopRules, ProductsWithAnAdd) {
  const at::Tensor s = randn({64, 64}), batch = randn({10, 64, 64});
  // addbmm: the ten 64^3 multiply-adds summed into one 64 x 64, plus the add.
  EXPECT_DOUBLE_EQ(estimate_flops("aten::addbmm", {s, batch, batch, 1.0, 1.0}, {at::addbmm(s, batch, batch)}),
                   2.0 * 10 * 64 * 64 * 64 + 64 * 64);  // 5,246,976
  const at::Tensor b1 = randn({10, 8, 16}), b2 = randn({10, 16, 4}), bs = randn({10, 8, 4});
  EXPECT_DOUBLE_EQ(estimate_flops("aten::baddbmm", {bs, b1, b2, 1.0, 1.0}, {at::baddbmm(bs, b1, b2)}),
                   2.0 * 10 * 8 * 16 * 4 + 10 * 8 * 4);
  const at::Tensor m1 = randn({8, 16}), m2 = randn({16, 4}), bias = randn({4});
  EXPECT_DOUBLE_EQ(estimate_flops("aten::addmm", {bias, m1, m2, 1.0, 1.0}, {at::addmm(bias, m1, m2)}),
                   2.0 * 8 * 16 * 4 + 8 * 4);
  const at::Tensor v16 = randn({16}), v8 = randn({8});
  EXPECT_DOUBLE_EQ(estimate_flops("aten::addmv", {v8, m1, v16, 1.0, 1.0}, {at::addmv(v8, m1, v16)}), 2.0 * 8 * 16 + 8);
  const at::Tensor v4 = randn({4}), s84 = randn({8, 4});
  EXPECT_DOUBLE_EQ(estimate_flops("aten::addr", {s84, v8, v4, 1.0, 1.0}, {at::addr(s84, v8, v4)}), 2.0 * 8 * 4);
  // Malformed arguments fall back to one op per output element.
  EXPECT_DOUBLE_EQ(estimate_flops("aten::addbmm", {s, m1, m2}, {s}), 64.0 * 64);
}

TEST(FlopRules, Tensordot) {
  const at::Tensor a = randn({3, 4, 5}), b = randn({4, 5, 6});
  const std::vector<int64_t> da{1, 2}, db{0, 1};
  EXPECT_DOUBLE_EQ(estimate_flops("aten::tensordot", {a, b, da, db}, {at::tensordot(a, b, da, db)}),
                   2.0 * 3 * 6 * 4 * 5);
}

// The importer hands the rules its own arguments: an einsum's equation and list,
// a cell's state list, addbmm's batches.
TEST(FlopRules, ScriptedModuleThroughTheImporter) {
  torch::jit::Module m("FlopModel");
  m.define(R"(
def forward(self, a, x, h, c, w_ih, w_hh, batch):
    q = torch.einsum("bik,bjk->bij", [a, a])
    hy, cy = torch.lstm_cell(x, [h, c], w_ih, w_hh)
    w = torch.addbmm(batch[0], batch, batch)
    return q.sum() + hy.sum() + cy.sum() + w.sum()
)");
  const std::string path =
      (std::filesystem::temp_directory_path() / ("flop_rules_" + std::to_string(getpid()) + ".pt")).string();
  m.save(path);
  std::vector<SampleInput> inputs;
  for (const char* s : {"a:4x16x256:float", "x:8x64:float", "h:8x128:float", "c:8x128:float", "w_ih:512x64:float",
                        "w_hh:512x128:float", "batch:10x64x64:float"})
    inputs.push_back(parse_sample_input(s));
  ImportOptions options;
  options.forward_only = true;
  const Graph g = import_torchscript(path, inputs, options);
  std::filesystem::remove(path);
  std::map<std::string, double> flops;
  for (const Op& op : g.ops()) flops[op.type.substr(0, op.type.find('.'))] += op.flops;
  EXPECT_DOUBLE_EQ(flops["aten::einsum"], 2.0 * 4 * 16 * 16 * 256);
  EXPECT_DOUBLE_EQ(flops["aten::lstm_cell"], cell_flops(8, 64, 128, 4, 9, false));
  EXPECT_DOUBLE_EQ(flops["aten::addbmm"], 2.0 * 10 * 64 * 64 * 64 + 64 * 64);
}

}  // namespace
}  // namespace placer
