// Convolutional models and the MLP.
//
// inception_v3: torchvision's Inception-V3 (Szegedy et al. 2016) module by
// module: stem (Conv2d_1a..4a, two max pools), Mixed_5b-d (InceptionA),
// Mixed_6a (B), Mixed_6b-e (C, 1x7/7x1 factorized), Mixed_7a (D), Mixed_7b-c
// (E), global average pool, fc, cross-entropy. Every conv is torchvision's
// BasicConv2d: conv2d (no bias) + batch_norm (eps 1e-3) + relu, 6 ops with its
// 3 params. The auxiliary classifier and dropout are left out. Defaults: batch
// 32, 299x299, 1000 classes. "width_div" divides every channel count (for tiny
// test instances); the smallest image is 75x75 as in torchvision.
//   Forward ops: 600 (94 convs, 284 params), for any size.
//
// resnet: ResNet-50 (torchvision v1.5: stride on the 3x3 conv), bottlenecks
// [3, 4, 6, 3] (depth 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]). Defaults:
// batch 32, 224x224, 1000 classes. Forward ops: 35 + 19 x blocks (depth 50: 339, 101: 662, 152: 985).
//
// mlp: `layers` linear layers (input -> width -> ... -> classes) with relu in
// between and a cross-entropy loss. Forward ops: 4 * layers + 2.
//
// Layer tags: "stem", "<module>/<branch>" (e.g. "mixed_5b/branch5x5"; the
// module's concatenation is tagged "<module>"), "stage<s>_block<b>",
// "head", "fc<k>", "loss".
#include <algorithm>
#include <string>
#include <vector>

#include "builder_util.h"
#include "placer/graphs/error.h"

namespace placer::detail {

namespace {

// Classification head: global average pool, fc, cross entropy against labels.
void classifier_head(OpBuilder& b, TensorRef x, int64_t classes) {
  b.layer = "head";
  int64_t batch = b.shape(x).at(0);
  int64_t channels = b.shape(x).at(1);
  TensorRef pooled = b.adaptive_avg_pool2d("head/avgpool", x, 1, 1);
  TensorRef flat = b.flatten("head/flatten", pooled, 1, -1);
  TensorRef w = b.param("head/fc_weight", {classes, channels});
  TensorRef bias = b.param("head/fc_bias", {classes});
  TensorRef logits = b.linear("head/fc", flat, w, &bias);
  TensorRef labels = b.input("input/labels", {batch}, DType::Int64, classes);
  b.cross_entropy("head/loss", logits, labels);
}

// --- Inception-V3 -------------------------------------------------------------

constexpr double kInceptionEps = 1e-3;

class Inception {
 public:
  Inception(OpBuilder& b, int64_t width_div) : b_(b), div_(width_div) {}

  int64_t ch(int64_t n) const { return std::max<int64_t>(1, n / div_); }

  // BasicConv2d named "<module>/<conv>", tagged "<module>/<branch>".
  TensorRef conv(const std::string& module, const std::string& branch, const std::string& conv_name, TensorRef x,
                 int64_t out, int64_t kh, int64_t kw, int64_t stride = 1, int64_t pad_h = 0, int64_t pad_w = 0) {
    b_.layer = branch.empty() ? module : module + "/" + branch;
    return b_.conv_bn_relu(module + "/" + conv_name, x, ch(out), kh, kw, stride, stride, pad_h, pad_w, kInceptionEps);
  }

  TensorRef concat(const std::string& module, const std::vector<TensorRef>& xs) {
    b_.layer = module;
    return b_.cat(module + "/concat", xs, 1);
  }

  TensorRef stem(TensorRef x) {
    const std::string m = "stem";
    x = conv(m, "", "conv2d_1a_3x3", x, 32, 3, 3, 2);
    x = conv(m, "", "conv2d_2a_3x3", x, 32, 3, 3);
    x = conv(m, "", "conv2d_2b_3x3", x, 64, 3, 3, 1, 1, 1);
    b_.layer = m;
    x = b_.max_pool2d("stem/maxpool1", x, 3, 2, 0);
    x = conv(m, "", "conv2d_3b_1x1", x, 80, 1, 1);
    x = conv(m, "", "conv2d_4a_3x3", x, 192, 3, 3);
    b_.layer = m;
    return b_.max_pool2d("stem/maxpool2", x, 3, 2, 0);
  }

  TensorRef a(const std::string& m, TensorRef x, int64_t pool_features) {
    TensorRef b1 = conv(m, "branch1x1", "branch1x1", x, 64, 1, 1);
    TensorRef b5 = conv(m, "branch5x5", "branch5x5_1", x, 48, 1, 1);
    b5 = conv(m, "branch5x5", "branch5x5_2", b5, 64, 5, 5, 1, 2, 2);
    TensorRef b3 = conv(m, "branch3x3dbl", "branch3x3dbl_1", x, 64, 1, 1);
    b3 = conv(m, "branch3x3dbl", "branch3x3dbl_2", b3, 96, 3, 3, 1, 1, 1);
    b3 = conv(m, "branch3x3dbl", "branch3x3dbl_3", b3, 96, 3, 3, 1, 1, 1);
    b_.layer = m + "/branch_pool";
    TensorRef bp = b_.avg_pool2d(m + "/branch_pool_avg", x, 3, 1, 1);
    bp = conv(m, "branch_pool", "branch_pool", bp, pool_features, 1, 1);
    return concat(m, {b1, b5, b3, bp});
  }

  TensorRef b(const std::string& m, TensorRef x) {
    TensorRef b3 = conv(m, "branch3x3", "branch3x3", x, 384, 3, 3, 2);
    TensorRef bd = conv(m, "branch3x3dbl", "branch3x3dbl_1", x, 64, 1, 1);
    bd = conv(m, "branch3x3dbl", "branch3x3dbl_2", bd, 96, 3, 3, 1, 1, 1);
    bd = conv(m, "branch3x3dbl", "branch3x3dbl_3", bd, 96, 3, 3, 2);
    b_.layer = m + "/branch_pool";
    TensorRef bp = b_.max_pool2d(m + "/branch_pool_max", x, 3, 2, 0);
    return concat(m, {b3, bd, bp});
  }

  TensorRef c(const std::string& m, TensorRef x, int64_t c7) {
    TensorRef b1 = conv(m, "branch1x1", "branch1x1", x, 192, 1, 1);
    TensorRef b7 = conv(m, "branch7x7", "branch7x7_1", x, c7, 1, 1);
    b7 = conv(m, "branch7x7", "branch7x7_2", b7, c7, 1, 7, 1, 0, 3);
    b7 = conv(m, "branch7x7", "branch7x7_3", b7, 192, 7, 1, 1, 3, 0);
    TensorRef bd = conv(m, "branch7x7dbl", "branch7x7dbl_1", x, c7, 1, 1);
    bd = conv(m, "branch7x7dbl", "branch7x7dbl_2", bd, c7, 7, 1, 1, 3, 0);
    bd = conv(m, "branch7x7dbl", "branch7x7dbl_3", bd, c7, 1, 7, 1, 0, 3);
    bd = conv(m, "branch7x7dbl", "branch7x7dbl_4", bd, c7, 7, 1, 1, 3, 0);
    bd = conv(m, "branch7x7dbl", "branch7x7dbl_5", bd, 192, 1, 7, 1, 0, 3);
    b_.layer = m + "/branch_pool";
    TensorRef bp = b_.avg_pool2d(m + "/branch_pool_avg", x, 3, 1, 1);
    bp = conv(m, "branch_pool", "branch_pool", bp, 192, 1, 1);
    return concat(m, {b1, b7, bd, bp});
  }

  TensorRef d(const std::string& m, TensorRef x) {
    TensorRef b3 = conv(m, "branch3x3", "branch3x3_1", x, 192, 1, 1);
    b3 = conv(m, "branch3x3", "branch3x3_2", b3, 320, 3, 3, 2);
    TensorRef b7 = conv(m, "branch7x7x3", "branch7x7x3_1", x, 192, 1, 1);
    b7 = conv(m, "branch7x7x3", "branch7x7x3_2", b7, 192, 1, 7, 1, 0, 3);
    b7 = conv(m, "branch7x7x3", "branch7x7x3_3", b7, 192, 7, 1, 1, 3, 0);
    b7 = conv(m, "branch7x7x3", "branch7x7x3_4", b7, 192, 3, 3, 2);
    b_.layer = m + "/branch_pool";
    TensorRef bp = b_.max_pool2d(m + "/branch_pool_max", x, 3, 2, 0);
    return concat(m, {b3, b7, bp});
  }

  TensorRef e(const std::string& m, TensorRef x) {
    TensorRef b1 = conv(m, "branch1x1", "branch1x1", x, 320, 1, 1);
    TensorRef b3 = conv(m, "branch3x3", "branch3x3_1", x, 384, 1, 1);
    TensorRef b3a = conv(m, "branch3x3", "branch3x3_2a", b3, 384, 1, 3, 1, 0, 1);
    TensorRef b3b = conv(m, "branch3x3", "branch3x3_2b", b3, 384, 3, 1, 1, 1, 0);
    b_.layer = m + "/branch3x3";
    b3 = b_.cat(m + "/branch3x3_concat", {b3a, b3b}, 1);
    TensorRef bd = conv(m, "branch3x3dbl", "branch3x3dbl_1", x, 448, 1, 1);
    bd = conv(m, "branch3x3dbl", "branch3x3dbl_2", bd, 384, 3, 3, 1, 1, 1);
    TensorRef bda = conv(m, "branch3x3dbl", "branch3x3dbl_3a", bd, 384, 1, 3, 1, 0, 1);
    TensorRef bdb = conv(m, "branch3x3dbl", "branch3x3dbl_3b", bd, 384, 3, 1, 1, 1, 0);
    b_.layer = m + "/branch3x3dbl";
    bd = b_.cat(m + "/branch3x3dbl_concat", {bda, bdb}, 1);
    b_.layer = m + "/branch_pool";
    TensorRef bp = b_.avg_pool2d(m + "/branch_pool_avg", x, 3, 1, 1);
    bp = conv(m, "branch_pool", "branch_pool", bp, 192, 1, 1);
    return concat(m, {b1, b3, bd, bp});
  }

 private:
  OpBuilder& b_;
  int64_t div_;
};

// --- ResNet --------------------------------------------------------------------

std::vector<int64_t> resnet_blocks(int64_t depth) {
  if (depth == 50) return {3, 4, 6, 3};
  if (depth == 101) return {3, 4, 23, 3};
  if (depth == 152) return {3, 8, 36, 3};
  throw InputError(detail::concat("builder resnet: option 'depth' = ", depth, " is not one of 50, 101, 152"));
}

}  // namespace

OptionTable inception_v3_options() {
  return {
      {"batch", {32, 1, 4096}}, {"image", {299, 75, 2048}}, {"classes", {1000, 2, 100000}}, {"width_div", {1, 1, 64}}};
}

OpCount inception_v3_op_count(const Options&) { return {600, "inception_v3 (one size)", "nothing"}; }

Graph build_inception_v3(const Options& o) {
  Graph g;
  OpBuilder b(g);
  Inception net(b, o["width_div"]);
  b.layer = "stem";
  TensorRef x = b.input("input/images", {o["batch"], 3, o["image"], o["image"]});
  x = net.stem(x);
  x = net.a("mixed_5b", x, 32);
  x = net.a("mixed_5c", x, 64);
  x = net.a("mixed_5d", x, 64);
  x = net.b("mixed_6a", x);
  x = net.c("mixed_6b", x, 128);
  x = net.c("mixed_6c", x, 160);
  x = net.c("mixed_6d", x, 160);
  x = net.c("mixed_6e", x, 192);
  x = net.d("mixed_7a", x);
  x = net.e("mixed_7b", x);
  x = net.e("mixed_7c", x);
  classifier_head(b, x, o["classes"]);
  return g;
}

OptionTable resnet_options() {
  return {{"batch", {32, 1, 4096}},
          {"image", {224, 32, 2048}},
          {"classes", {1000, 2, 100000}},
          {"width_div", {1, 1, 64}},
          {"depth", {50, 50, 152}}};
}

// Stem 8, head 7, a bottleneck 19 (three convs of 6, 6 and 5 ops, the add and the relu), a downsample 5 per stage.
OpCount resnet_op_count(const Options& o) {
  const std::vector<int64_t> blocks = resnet_blocks(o["depth"]);
  int64_t ops = 8 + 7;
  for (const int64_t n : blocks) ops += 19 * n + 5;
  return {ops, concat("depth=", o["depth"]), "depth"};
}

Graph build_resnet(const Options& o) {
  std::vector<int64_t> blocks = resnet_blocks(o["depth"]);
  int64_t div = o["width_div"];
  auto ch = [div](int64_t n) { return std::max<int64_t>(1, n / div); };
  constexpr double eps = 1e-5;

  Graph g;
  OpBuilder b(g);
  b.layer = "stem";
  TensorRef x = b.input("input/images", {o["batch"], 3, o["image"], o["image"]});
  x = b.conv_bn_relu("stem/conv1", x, ch(64), 7, 7, 2, 2, 3, 3, eps);
  x = b.max_pool2d("stem/maxpool", x, 3, 2, 1);

  for (size_t s = 0; s < blocks.size(); ++s) {
    int64_t width = ch(64 << s);
    int64_t out = 4 * width;
    for (int64_t k = 0; k < blocks[s]; ++k) {
      std::string name = "stage" + std::to_string(s + 1) + "_block" + std::to_string(k);
      b.layer = name;
      int64_t stride = (k == 0 && s > 0) ? 2 : 1;
      TensorRef identity = x;
      TensorRef y = b.conv_bn_relu(name + "/conv1", x, width, 1, 1, 1, 1, 0, 0, eps);
      y = b.conv_bn_relu(name + "/conv2", y, width, 3, 3, stride, stride, 1, 1, eps);
      y = b.conv_bn_relu(name + "/conv3", y, out, 1, 1, 1, 1, 0, 0, eps, /*relu=*/false);
      if (k == 0) identity = b.conv_bn_relu(name + "/downsample", x, out, 1, 1, stride, stride, 0, 0, eps, false);
      y = b.add(name + "/residual", y, identity);
      x = b.relu(name + "/relu", y);
    }
  }
  classifier_head(b, x, o["classes"]);
  return g;
}

OptionTable mlp_options() {
  return {{"batch", {32, 1, 1 << 20}},
          {"input", {256, 1, 1 << 20}},
          {"width", {256, 1, 1 << 20}},
          {"classes", {10, 2, 1 << 20}},
          {"layers", {3, 1, 10000}}};
}

OpCount mlp_op_count(const Options& o) { return {4 * o["layers"] + 2, concat("layers=", o["layers"]), "layers"}; }

Graph build_mlp(const Options& o) {
  Graph g;
  OpBuilder b(g);
  int64_t layers = o["layers"];
  b.layer = "fc0";
  TensorRef x = b.input("input/features", {o["batch"], o["input"]});
  for (int64_t k = 0; k < layers; ++k) {
    std::string name = "fc" + std::to_string(k);
    b.layer = name;
    int64_t out = k + 1 == layers ? o["classes"] : o["width"];
    TensorRef w = b.param(name + "/weight", {out, b.shape(x).at(1)});
    TensorRef bias = b.param(name + "/bias", {out});
    x = b.linear(name + "/linear", x, w, &bias);
    if (k + 1 < layers) x = b.relu(name + "/relu", x);
  }
  b.layer = "loss";
  TensorRef labels = b.input("input/labels", {o["batch"]}, DType::Int64, o["classes"]);
  b.cross_entropy("loss/cross_entropy", x, labels);
  return g;
}

}  // namespace placer::detail
