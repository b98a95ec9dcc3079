// Unrolled LSTM models: the RNN language model and the attention NMT model of
// ColocRL (Mirhoseini et al. 2017) and the hierarchical planner.
//
// rnnlm (defaults: 2 layers of 2048 LSTM units, 20 unrolled steps, batch 64,
// vocabulary 40,000; the embedding size equals the hidden size):
//   tokens[T,B] -> embedding -> unbind over time -> L x T LSTM cells ->
//   per step: logits = addmm(b, h, W[H,V]); loss_t = cross_entropy_loss
//   -> stack(loss_t) -> mean = the loss.
//   Forward ops: 10 + 4L + 12LT + 2T.
//
// nmt (defaults: 2 encoder + 2 decoder layers of 1024 units, 40 source and
// 40 target steps, batch 64, vocabulary 40,000): a unidirectional LSTM
// encoder; the decoder layer l starts from the final state of encoder layer
// l; Luong global (dot) attention over the top encoder outputs after the top
// decoder layer at every target step:
//   scores = bmm(memory[B,S,H], h[B,H,1]); a = softmax(scores, 1);
//   ctx = bmm(memory^T[B,H,S], a); out = tanh(addmm(b, cat([ctx, h]), Wc[2H,H]))
//   then a per-step softmax layer as in rnnlm.
//   Forward ops: 18 + 6L + 12L(S+T) + 10T with S = T = steps.
//
// Both are unrolled: build_graph refuses layers x steps past kMaxBuilderForwardOps forward ops (500,000:
// rnnlm at 64 layers reaches it above 649 steps, nmt above 323), counted from these formulas before building.
//
// Layer tags: "embedding", "lstm<l>" (rnnlm), "enc_lstm<l>", "dec_lstm<l>",
// "attention", "softmax".
#include <string>
#include <vector>

#include "builder_util.h"
#include "placer/graphs/error.h"

namespace placer::detail {

namespace {

std::string step_name(const std::string& layer, int64_t t) { return layer + "/t" + std::to_string(t); }

// Runs one LSTM layer over the whole sequence; returns the per-step outputs
// and the final state.
std::vector<TensorRef> lstm_layer(OpBuilder& b, const std::string& layer, const std::vector<TensorRef>& xs,
                                  int64_t hidden, LstmState& state) {
  b.layer = layer;
  int64_t in = b.shape(xs.at(0)).at(1);
  TensorRef w = b.param(layer + "/weight", {in + hidden, 4 * hidden});
  TensorRef bias = b.param(layer + "/bias", {4 * hidden});
  std::vector<TensorRef> outs;
  for (size_t t = 0; t < xs.size(); ++t) {
    state = lstm_cell(b, step_name(layer, static_cast<int64_t>(t)), xs[t], state, w, bias);
    outs.push_back(state.h);
  }
  return outs;
}

LstmState zero_state(OpBuilder& b, const std::string& layer, int64_t batch, int64_t hidden) {
  b.layer = layer;
  return LstmState{b.input(layer + "/h0", {batch, hidden}), b.input(layer + "/c0", {batch, hidden})};
}

// Per-step output projection and loss, averaged over the steps.
void softmax_layer(OpBuilder& b, const std::vector<TensorRef>& hs, int64_t batch, int64_t vocab) {
  b.layer = "softmax";
  int64_t steps = static_cast<int64_t>(hs.size());
  int64_t hidden = b.shape(hs.at(0)).at(1);
  TensorRef targets = b.input("input/targets", {steps, batch}, DType::Int64, vocab);
  TensorRef w = b.param("softmax/weight", {hidden, vocab});
  TensorRef bias = b.param("softmax/bias", {vocab});
  auto target_steps = b.unbind("softmax/targets", targets, 0);
  std::vector<TensorRef> losses;
  for (int64_t t = 0; t < steps; ++t) {
    std::string p = step_name("softmax", t);
    TensorRef logits = b.addmm(p + "/logits", bias, hs[t], w);
    losses.push_back(b.cross_entropy(p + "/loss", logits, target_steps[t]));
  }
  TensorRef all = b.stack("softmax/losses", losses, 0);
  b.mean("softmax/loss", all);
}

std::vector<TensorRef> embed(OpBuilder& b, const std::string& what, int64_t steps, int64_t batch, int64_t vocab,
                             int64_t dim) {
  b.layer = "embedding";
  TensorRef tokens = b.input("input/" + what, {steps, batch}, DType::Int64, vocab);
  TensorRef w = b.param("embedding/" + what + "_weight", {vocab, dim});
  TensorRef e = b.embedding("embedding/" + what + "_lookup", w, tokens);
  return b.unbind("embedding/" + what + "_steps", e, 0);
}

}  // namespace

namespace {

OpCount lstm_op_count(const Options& o, int64_t forward_ops) {
  return {forward_ops, concat("layers=", o["layers"], " x steps=", o["steps"]), "layers or steps"};
}

}  // namespace

OpCount rnnlm_op_count(const Options& o) {
  const int64_t layers = o["layers"], steps = o["steps"];
  return lstm_op_count(o, 10 + 4 * layers + 12 * layers * steps + 2 * steps);
}

OpCount nmt_op_count(const Options& o) {
  const int64_t layers = o["layers"], steps = o["steps"];
  return lstm_op_count(o, 18 + 6 * layers + 12 * layers * (steps + steps) + 10 * steps);
}

OptionTable rnnlm_options() {
  return {{"layers", {2, 1, 64}},
          {"hidden", {2048, 1, 16384}},
          {"steps", {20, 1, 1000}},
          {"batch", {64, 1, 65536}},
          {"vocab", {40000, 2, 1000000}}};
}

Graph build_rnnlm(const Options& o) {
  Graph g;
  OpBuilder b(g);
  int64_t layers = o["layers"], hidden = o["hidden"], steps = o["steps"], batch = o["batch"], vocab = o["vocab"];
  std::vector<TensorRef> xs = embed(b, "tokens", steps, batch, vocab, hidden);
  for (int64_t l = 0; l < layers; ++l) {
    std::string layer = "lstm" + std::to_string(l);
    LstmState state = zero_state(b, layer, batch, hidden);
    xs = lstm_layer(b, layer, xs, hidden, state);
  }
  softmax_layer(b, xs, batch, vocab);
  return g;
}

OptionTable nmt_options() {
  return {{"layers", {2, 1, 64}},
          {"hidden", {1024, 1, 16384}},
          {"steps", {40, 1, 1000}},
          {"batch", {64, 1, 65536}},
          {"vocab", {40000, 2, 1000000}}};
}

Graph build_nmt(const Options& o) {
  Graph g;
  OpBuilder b(g);
  int64_t layers = o["layers"], hidden = o["hidden"], steps = o["steps"], batch = o["batch"], vocab = o["vocab"];

  std::vector<TensorRef> src = embed(b, "src_tokens", steps, batch, vocab, hidden);
  std::vector<TensorRef> tgt = embed(b, "tgt_tokens", steps, batch, vocab, hidden);

  std::vector<LstmState> final_states;
  for (int64_t l = 0; l < layers; ++l) {
    std::string layer = "enc_lstm" + std::to_string(l);
    LstmState state = zero_state(b, layer, batch, hidden);
    src = lstm_layer(b, layer, src, hidden, state);
    final_states.push_back(state);
  }
  for (int64_t l = 0; l < layers; ++l) {
    LstmState state = final_states[l];
    tgt = lstm_layer(b, "dec_lstm" + std::to_string(l), tgt, hidden, state);
  }

  b.layer = "attention";
  TensorRef memory = b.stack("attention/memory", src, 1);                // [B,S,H]
  TensorRef memory_t = b.transpose("attention/memory_t", memory, 1, 2);  // [B,H,S]
  TensorRef wc = b.param("attention/weight", {2 * hidden, hidden});
  TensorRef bc = b.param("attention/bias", {hidden});
  std::vector<TensorRef> attended;
  for (int64_t t = 0; t < steps; ++t) {
    std::string p = step_name("attention", t);
    TensorRef q = b.unsqueeze(p + "/query", tgt[t], 2);  // [B,H,1]
    TensorRef scores = b.bmm(p + "/scores", memory, q);  // [B,S,1]
    TensorRef weights = b.softmax(p + "/weights", scores, 1);
    TensorRef ctx = b.bmm(p + "/context", memory_t, weights);  // [B,H,1]
    TensorRef flat = b.reshape(p + "/context_flat", ctx, {batch, hidden});
    TensorRef both = b.cat(p + "/concat", {flat, tgt[t]}, 1);  // [B,2H]
    TensorRef combined = b.addmm(p + "/combine", bc, both, wc);
    attended.push_back(b.tanh(p + "/output", combined));
  }
  softmax_layer(b, attended, batch, vocab);
  return g;
}

}  // namespace placer::detail
