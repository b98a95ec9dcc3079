// Transformer (Vaswani et al. 2017), post-layer-norm, learned positional
// embeddings, GELU feed-forward. Defaults are Transformer-base: 6 encoder and
// 6 decoder layers, d_model 512, 8 heads, ffn 2048, sequence 128, batch 64,
// vocabulary 32,000. With dec_layers = 0 it is an encoder-only model whose
// head predicts a token at every position.
//
// Multi-head attention is spelled out in real ops:
//   q, k, v: linear -> chunk; each: reshape [B,S,h,dh] -> transpose(1,2) ->
//   reshape [B*h,S,dh]; scores = bmm(q, transpose(k,1,2)) * 1/sqrt(dh);
//   softmax(-1); bmm(., v) -> reshape [B,h,S,dh] -> transpose(1,2) ->
//   reshape [B,S,D] -> output linear.
// The decoder's self-attention has no causal mask (same shapes and FLOPs; a
// mask would need a constant tensor op the runtime does not create).
//
// Forward ops: 5 + 39 * layers + (dec_layers > 0 ? 5 + 70 * dec_layers : 0) + 6.
// Layer tags: "embedding", "layer<k>", "dec_layer<k>", "head".
#include <cmath>
#include <string>
#include <vector>

#include "builder_util.h"
#include "placer/graphs/error.h"

namespace placer::detail {

namespace {

struct Dims {
  int64_t batch, seq, d_model, heads, ffn;
  int64_t head_dim() const { return d_model / heads; }
};

class Transformer {
 public:
  Transformer(OpBuilder& b, Dims d) : b_(b), d_(d) {}

  // [B,S,D] -> [B*h,S,dh]. Batch and heads merged across the transpose: ATen's reshape is a view only where
  // their strides line up (batch stride S*D against h * dh): one sequence, one head, or one position of a whole
  // tensor; a chunk of the qkv/kv projection has a batch stride of S*3D (or S*2D), a copy even then.
  TensorRef split_heads(const std::string& p, TensorRef x, bool chunk) {
    x = b_.reshape(p + "_heads", x, {d_.batch, d_.seq, d_.heads, d_.head_dim()});
    x = b_.transpose(p + "_transpose", x, 1, 2);
    const bool view = d_.batch == 1 || d_.heads == 1 || (d_.seq == 1 && !chunk);
    return b_.reshape(p + "_flat", x, {d_.batch * d_.heads, d_.seq, d_.head_dim()}, view);
  }

  // Scaled dot-product attention over split heads, merged and projected; k and v are chunks, q one where
  // q_chunk.
  TensorRef attend(const std::string& p, TensorRef q, TensorRef k, TensorRef v, bool q_chunk) {
    q = split_heads(p + "/q", q, q_chunk);
    k = split_heads(p + "/k", k, true);
    v = split_heads(p + "/v", v, true);
    TensorRef kt = b_.transpose(p + "/k_t", k, 1, 2);
    TensorRef scores = b_.bmm(p + "/scores", q, kt);
    scores = b_.mul_scalar(p + "/scale", scores, 1.0 / std::sqrt(static_cast<double>(d_.head_dim())));
    TensorRef probs = b_.softmax(p + "/softmax", scores, -1);
    TensorRef ctx = b_.bmm(p + "/context", probs, v);
    ctx = b_.reshape(p + "/context_heads", ctx, {d_.batch, d_.heads, d_.seq, d_.head_dim()});
    ctx = b_.transpose(p + "/context_transpose", ctx, 1, 2);
    // Heads and head_dim merged across the transpose (heads stride S*dh against dh): a view with one position,
    // one head or heads of size 1, else a copy.
    const bool merge_view = d_.seq == 1 || d_.heads == 1 || d_.head_dim() == 1;
    ctx = b_.reshape(p + "/context_merge", ctx, {d_.batch, d_.seq, d_.d_model}, merge_view);
    TensorRef wo = b_.param(p + "/out_weight", {d_.d_model, d_.d_model});
    TensorRef bo = b_.param(p + "/out_bias", {d_.d_model});
    return b_.linear(p + "/out", ctx, wo, &bo);
  }

  TensorRef self_attention(const std::string& p, TensorRef x) {
    TensorRef w = b_.param(p + "/qkv_weight", {3 * d_.d_model, d_.d_model});
    TensorRef bias = b_.param(p + "/qkv_bias", {3 * d_.d_model});
    TensorRef qkv = b_.linear(p + "/qkv", x, w, &bias);
    auto parts = b_.chunk(p + "/qkv_split", qkv, 3, -1);
    return attend(p, parts[0], parts[1], parts[2], /*q_chunk=*/true);
  }

  TensorRef cross_attention(const std::string& p, TensorRef x, TensorRef memory) {
    TensorRef wq = b_.param(p + "/q_weight", {d_.d_model, d_.d_model});
    TensorRef bq = b_.param(p + "/q_bias", {d_.d_model});
    TensorRef q = b_.linear(p + "/q", x, wq, &bq);
    TensorRef wkv = b_.param(p + "/kv_weight", {2 * d_.d_model, d_.d_model});
    TensorRef bkv = b_.param(p + "/kv_bias", {2 * d_.d_model});
    TensorRef kv = b_.linear(p + "/kv", memory, wkv, &bkv);
    auto parts = b_.chunk(p + "/kv_split", kv, 2, -1);
    return attend(p, q, parts[0], parts[1], /*q_chunk=*/false);
  }

  // layer_norm(x + y)
  TensorRef residual_norm(const std::string& p, TensorRef x, TensorRef y) {
    TensorRef sum = b_.add(p + "/residual", x, y);
    TensorRef w = b_.param(p + "/norm_weight", {d_.d_model});
    TensorRef bias = b_.param(p + "/norm_bias", {d_.d_model});
    return b_.layer_norm(p + "/norm", sum, w, bias, 1e-5);
  }

  TensorRef feed_forward(const std::string& p, TensorRef x) {
    TensorRef w1 = b_.param(p + "/fc1_weight", {d_.ffn, d_.d_model});
    TensorRef b1 = b_.param(p + "/fc1_bias", {d_.ffn});
    TensorRef h = b_.linear(p + "/fc1", x, w1, &b1);
    h = b_.gelu(p + "/gelu", h);
    TensorRef w2 = b_.param(p + "/fc2_weight", {d_.d_model, d_.ffn});
    TensorRef b2 = b_.param(p + "/fc2_bias", {d_.d_model});
    return b_.linear(p + "/fc2", h, w2, &b2);
  }

  TensorRef encoder_layer(const std::string& p, TensorRef x) {
    b_.layer = p;
    x = residual_norm(p + "/attn", x, self_attention(p + "/attn", x));
    return residual_norm(p + "/ffn", x, feed_forward(p + "/ffn", x));
  }

  TensorRef decoder_layer(const std::string& p, TensorRef x, TensorRef memory) {
    b_.layer = p;
    x = residual_norm(p + "/self_attn", x, self_attention(p + "/self_attn", x));
    x = residual_norm(p + "/cross_attn", x, cross_attention(p + "/cross_attn", x, memory));
    return residual_norm(p + "/ffn", x, feed_forward(p + "/ffn", x));
  }

  TensorRef embed(const std::string& what, int64_t vocab) {
    b_.layer = "embedding";
    TensorRef tokens = b_.input("input/" + what, {d_.batch, d_.seq}, DType::Int64, vocab);
    TensorRef w = b_.param("embedding/" + what + "_weight", {vocab, d_.d_model});
    TensorRef pos = b_.param("embedding/" + what + "_position", {d_.seq, d_.d_model});
    TensorRef e = b_.embedding("embedding/" + what + "_lookup", w, tokens);
    return b_.add("embedding/" + what + "_add_position", e, pos);
  }

  void head(TensorRef x, int64_t vocab) {
    b_.layer = "head";
    TensorRef w = b_.param("head/weight", {vocab, d_.d_model});
    TensorRef bias = b_.param("head/bias", {vocab});
    TensorRef logits = b_.linear("head/logits", x, w, &bias);
    logits = b_.reshape("head/logits_flat", logits, {d_.batch * d_.seq, vocab});
    TensorRef targets = b_.input("input/targets", {d_.batch * d_.seq}, DType::Int64, vocab);
    b_.cross_entropy("head/loss", logits, targets);
  }

 private:
  OpBuilder& b_;
  Dims d_;
};

}  // namespace

OptionTable transformer_options() {
  return {{"layers", {6, 1, 256}},   {"dec_layers", {6, 0, 256}},   {"d_model", {512, 1, 65536}},
          {"heads", {8, 1, 1024}},   {"ffn", {2048, 1, 262144}},    {"seq", {128, 1, 65536}},
          {"batch", {64, 1, 65536}}, {"vocab", {32000, 2, 1000000}}};
}

OpCount transformer_op_count(const Options& o) {
  const int64_t layers = o["layers"], dec_layers = o["dec_layers"];
  return {5 + 39 * layers + (dec_layers > 0 ? 5 + 70 * dec_layers : 0) + 6,
          concat("layers=", layers, " x dec_layers=", dec_layers), "layers or dec_layers"};
}

Graph build_transformer(const Options& o) {
  Dims d{o["batch"], o["seq"], o["d_model"], o["heads"], o["ffn"]};
  if (d.d_model % d.heads != 0) {
    throw InputError(detail::concat("builder transformer: option 'd_model' = ", d.d_model,
                                    " is not divisible by option 'heads' = ", d.heads));
  }
  Graph g;
  OpBuilder b(g);
  Transformer t(b, d);
  TensorRef x = t.embed("src_tokens", o["vocab"]);
  for (int64_t k = 0; k < o["layers"]; ++k) x = t.encoder_layer("layer" + std::to_string(k), x);
  if (o["dec_layers"] > 0) {
    TensorRef memory = x;
    x = t.embed("tgt_tokens", o["vocab"]);
    for (int64_t k = 0; k < o["dec_layers"]; ++k) x = t.decoder_layer("dec_layer" + std::to_string(k), x, memory);
  }
  t.head(x, o["vocab"]);
  return g;
}

}  // namespace placer::detail
