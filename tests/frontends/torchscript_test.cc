// TorchScript import: tiny fixtures (tests/fixtures, made by
// scripts/make_fixtures.py) with hand-computed shapes, params and FLOPs, the
// error paths, and real torchvision / sequence models traced at test time.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"

namespace placer {
namespace {

std::string fixture(const std::string& name) { return std::string(PLACER_FIXTURES_DIR) + "/" + name; }

std::vector<SampleInput> inputs(std::initializer_list<const char*> specs) {
  std::vector<SampleInput> out;
  for (const char* s : specs) out.push_back(parse_sample_input(s));
  return out;
}

const Op& op_named(const Graph& g, const std::string& name) {
  auto id = g.find(name);
  if (!id) throw std::runtime_error("no op named " + name);
  return g.op(*id);
}

std::map<std::string, int> count_types(const Graph& g, Phase phase = Phase::Forward) {
  std::map<std::string, int> counts;
  for (const Op& op : g.ops()) {
    if (op.phase == phase) ++counts[op.type];
  }
  return counts;
}

int64_t param_bytes(const Graph& g) {
  int64_t total = 0;
  for (const Op& op : g.ops()) total += op.param_bytes;
  return total;
}

// Expects `fn` to throw InputError whose message contains every part.
template <typename Fn>
void expect_input_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(SampleInput, Parses) {
  const SampleInput a = parse_sample_input("x:8x3x224x224:float");
  EXPECT_EQ(a.name, "x");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{8, 3, 224, 224}));
  EXPECT_EQ(a.dtype, DType::Float32);
  EXPECT_EQ(parse_sample_input("tokens:35x20:long").dtype, DType::Int64);
  EXPECT_EQ(parse_sample_input("m:4:bool").dtype, DType::Bool);
  EXPECT_EQ(parse_sample_input("h:2x2:half").dtype, DType::Float16);
  EXPECT_EQ(parse_sample_input("i:7:int").dtype, DType::Int32);
  EXPECT_EQ(parse_sample_input("y:3x4").dtype, DType::Float32);
  EXPECT_TRUE(parse_sample_input("s:scalar:float").shape.empty());
}

TEST(SampleInput, RejectsBadSpecs) {
  expect_input_error([] { parse_sample_input("x"); }, {"'x'", "NAME:"});
  expect_input_error([] { parse_sample_input("x:8x0:float"); }, {"'0'", "positive"});
  expect_input_error([] { parse_sample_input("x:8xa:float"); }, {"'a'"});
  expect_input_error([] { parse_sample_input("x:8x3:complex"); }, {"unknown dtype 'complex'"});
  expect_input_error([] { parse_sample_input("1x:8:float"); }, {"not an identifier"});
  expect_input_error([] { parse_sample_input("x:100000x100000x1000:float"); }, {"2^31"});
}

TEST(TorchScriptImport, TinyCnnForward) {
  ImportOptions options;
  options.forward_only = true;
  const Graph g = import_torchscript(fixture("tiny_cnn.pt"), inputs({"x:2x3x8x8:float"}), options);
  EXPECT_EQ(g.name, "tiny_cnn");
  EXPECT_FALSE(g.is_training());
  // 1 input + 6 params + 2 batchnorm buffers + 6 ATen ops.
  EXPECT_EQ(g.size(), 15);
  const auto types = count_types(g);
  EXPECT_EQ(types.at("placer::input"), 3);
  EXPECT_EQ(types.at("placer::param"), 6);
  EXPECT_EQ(types.at("aten::_convolution"), 1);
  EXPECT_EQ(types.at("aten::batch_norm"), 1);
  EXPECT_EQ(types.at("aten::relu"), 1);  // relu_ made functional
  EXPECT_EQ(types.at("aten::max_pool2d"), 1);
  EXPECT_EQ(types.at("aten::flatten.using_ints"), 1);
  EXPECT_EQ(types.at("aten::linear"), 1);
  // conv 3->4 3x3 (108 + 4), bn (4 + 4), fc 64->5 (320 + 5), float32.
  EXPECT_EQ(param_bytes(g), (108 + 4 + 4 + 4 + 320 + 5) * 4);
  EXPECT_EQ(op_named(g, "conv.weight").param_bytes, 108 * 4);
  EXPECT_EQ(op_named(g, "conv.weight").outputs[0].shape, (std::vector<int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(op_named(g, "bn.running_var").type, "placer::input");
  EXPECT_EQ(op_named(g, "bn.running_var").param_bytes, 0);

  const Op& x = op_named(g, "x");
  EXPECT_EQ(x.type, "placer::input");
  EXPECT_EQ(x.outputs[0].shape, (std::vector<int64_t>{2, 3, 8, 8}));

  const Op& conv = op_named(g, "conv/_convolution");
  EXPECT_EQ(conv.outputs[0].shape, (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_EQ(conv.layer, "conv");
  // 2 * 512 outputs * 27 weights each + 512 bias adds.
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 512 * 27 + 512);
  // _convolution(input, weight, bias, stride, padding, dilation, transposed,
  //              output_padding, groups, benchmark, deterministic, cudnn_enabled, allow_tf32)
  ASSERT_EQ(conv.args.size(), 13u);
  EXPECT_EQ(conv.args[0], Arg::tensor(0));
  EXPECT_EQ(conv.args[1], Arg::tensor(1));
  EXPECT_EQ(conv.args[2], Arg::tensor(2));
  EXPECT_EQ(conv.args[3], Arg::int_list({1, 1}));
  EXPECT_EQ(conv.args[4], Arg::int_list({1, 1}));
  EXPECT_EQ(conv.args[6], Arg::boolean(false));
  EXPECT_EQ(conv.args[8], Arg::integer(1));
  EXPECT_EQ(g.op(conv.inputs[0].op).name, "x");
  EXPECT_EQ(g.op(conv.inputs[1].op).name, "conv.weight");

  const Op& pool = op_named(g, "pool/max_pool2d");
  EXPECT_EQ(pool.outputs[0].shape, (std::vector<int64_t>{2, 4, 4, 4}));
  EXPECT_DOUBLE_EQ(pool.flops, 128.0 * 4);

  const Op& flatten = op_named(g, "flatten");
  EXPECT_EQ(flatten.outputs[0].shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(flatten.args, (std::vector<Arg>{Arg::tensor(0), Arg::integer(1), Arg::integer(-1)}));

  const Op& fc = op_named(g, "fc/linear");
  EXPECT_EQ(fc.outputs[0].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(fc.outputs[0].dtype, DType::Float32);
  EXPECT_DOUBLE_EQ(fc.flops, 2.0 * 10 * 64 + 10);
}

TEST(TorchScriptImport, TinyCnnTraining) {
  const Graph g = import_torchscript(fixture("tiny_cnn.pt"), inputs({"x:2x3x8x8:float"}));
  EXPECT_TRUE(g.is_training());
  const Op& loss = op_named(g, "loss");
  EXPECT_EQ(loss.type, "aten::mean");
  EXPECT_EQ(loss.args, (std::vector<Arg>{Arg::tensor(0), Arg::none()}));
  EXPECT_TRUE(loss.outputs[0].shape.empty());
  EXPECT_EQ(g.op(loss.inputs[0].op).name, "fc/linear");
  // 6 forward ATen ops + loss each get a backward op; 6 params get an update.
  EXPECT_EQ(count_types(g, Phase::Backward).at("placer::backward"), 7);
  EXPECT_EQ(count_types(g, Phase::Update).at("placer::sgd"), 6);
  EXPECT_EQ(g.size(), 16 + 7 + 6);
  EXPECT_NO_THROW(validate_graph(g));
  EXPECT_EQ(graph_from_binary(graph_to_binary(g)), g);
}

TEST(TorchScriptImport, FrozenArchiveWeightsBecomeParams) {
  // torch.jit.freeze folded the batchnorm into the conv: conv 108 + 4, fc 320 + 5.
  const Graph g = import_torchscript(fixture("tiny_cnn_frozen.pt"), inputs({"x:2x3x8x8:float"}));
  EXPECT_EQ(param_bytes(g), (108 + 4 + 320 + 5) * 4);
  EXPECT_EQ(count_types(g).at("placer::param"), 4);
  EXPECT_EQ(count_types(g, Phase::Update).at("placer::sgd"), 4);
  EXPECT_EQ(count_types(g).count("aten::batch_norm"), 0u);
}

TEST(TorchScriptImport, LstmLanguageModel) {
  ImportOptions options;
  options.forward_only = true;
  const Graph g = import_torchscript(fixture("tiny_lstm_lm.pt"), inputs({"tokens:5x2:long"}), options);
  const Op& tokens = op_named(g, "tokens");
  // Integer input drawn below the embedding's table size (20 words).
  EXPECT_EQ(tokens.args, (std::vector<Arg>{Arg::integer(20)}));
  const auto types = count_types(g);
  EXPECT_EQ(types.at("aten::embedding"), 1);
  EXPECT_EQ(types.at("aten::lstm.input"), 1);
  EXPECT_EQ(types.at("aten::linear"), 1);
  const Op* lstm = nullptr;
  for (const Op& op : g.ops()) {
    if (op.type == "aten::lstm.input") lstm = &op;
  }
  ASSERT_NE(lstm, nullptr);
  EXPECT_EQ(lstm->layer, "lstm");
  ASSERT_EQ(lstm->outputs.size(), 3u);
  EXPECT_EQ(lstm->outputs[0].shape, (std::vector<int64_t>{5, 2, 8}));
  EXPECT_EQ(lstm->outputs[1].shape, (std::vector<int64_t>{2, 2, 8}));
  ASSERT_EQ(lstm->args.size(), 9u);
  EXPECT_EQ(lstm->args[2].kind, Arg::Kind::TensorList);
  EXPECT_EQ(lstm->args[2].ints.size(), 8u);  // 2 layers x (w_ih, w_hh, b_ih, b_hh)
  // Per layer and token: 2*(32*8 + 32*8) matmul + 2*32 bias + 9*8 elementwise.
  EXPECT_DOUBLE_EQ(lstm->flops, 2 * 10 * (2.0 * (256 + 256) + 64 + 72));
  // embedding 20x8 + lstm 2 x (4*8*8*2 + 2*32) + decoder 8x20+20
  EXPECT_EQ(param_bytes(g), (160 + 2 * (512 + 64) + 180) * 4);
  const Op& out = op_named(g, "decoder/linear");
  EXPECT_EQ(out.outputs[0].shape, (std::vector<int64_t>{5, 2, 20}));

  const Graph train = import_torchscript(fixture("tiny_lstm_lm.pt"), inputs({"tokens:5x2:long"}));
  EXPECT_EQ(count_types(train, Phase::Update).at("placer::sgd"), 11);
}

TEST(TorchScriptImport, UnrolledLstmCells) {
  const Graph g = import_torchscript(fixture("tiny_lstm_unrolled.pt"), inputs({"tokens:3x2:long"}));
  const auto types = count_types(g);
  EXPECT_EQ(types.at("aten::sigmoid"), 9);
  EXPECT_EQ(types.at("aten::tanh"), 6);
  EXPECT_EQ(types.at("aten::chunk"), 3);
  EXPECT_EQ(types.at("aten::zeros"), 1);  // h0 and c0 are the same call: merged by freezing's CSE
  EXPECT_EQ(types.at("aten::stack"), 1);
  // The gates linear is shared by the 3 steps: one param op, three consumers.
  const OpId gates_w = *g.find("gates.weight");
  EXPECT_EQ(g.consumers(gates_w).size(), 3u + 1u);  // 3 linears + its sgd update
  for (const Op& op : g.ops()) {
    if (op.type != "aten::chunk") continue;
    ASSERT_EQ(op.outputs.size(), 4u);
    for (const auto& o : op.outputs) EXPECT_EQ(o.shape, (std::vector<int64_t>{2, 8}));
    // Views of the gates (Tensor(a)[]: the alias set is the list's elements'), not fresh memory.
    EXPECT_EQ(op.view_of, (std::vector<int32_t>{0, 0, 0, 0})) << op.name;
  }
  EXPECT_EQ(op_named(g, "decoder/linear").outputs[0].shape, (std::vector<int64_t>{3, 2, 20}));
  EXPECT_TRUE(g.is_training());
}

TEST(TorchScriptImport, TransformerEncoderLayer) {
  const Graph g = import_torchscript(fixture("tiny_transformer.pt"), inputs({"src:4x2x8:float"}));
  const auto types = count_types(g);
  // torch 2.x traces nn.MultiheadAttention as one fused attention op.
  EXPECT_EQ(types.at("aten::scaled_dot_product_attention"), 1);
  EXPECT_EQ(types.count("aten::bmm"), 0u);
  EXPECT_EQ(types.at("aten::layer_norm"), 2);
  EXPECT_EQ(types.count("aten::size"), 0u);  // shape arithmetic is folded into constants
  EXPECT_EQ(types.count("aten::Int"), 0u);
  // Attention: batch 2 x 2 heads, 4 queries and 4 keys of head dim 4:
  // 4 x 4 x 4 x (2*4 scores + 5 softmax + 2*4 weighted sum).
  const Op* attention = nullptr;
  for (const Op& op : g.ops()) {
    if (op.type == "aten::scaled_dot_product_attention") attention = &op;
  }
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->outputs[0].shape, (std::vector<int64_t>{2, 2, 4, 4}));
  EXPECT_DOUBLE_EQ(attention->flops, 4.0 * 4 * 4 * (8 + 5 + 8));
  // in_proj 8->24, out_proj 8->8, linear1 8->16, linear2 16->8, 2 layer norms.
  EXPECT_EQ(param_bytes(g), (8 * 24 + 24 + 64 + 8 + 128 + 16 + 128 + 8 + 2 * 16) * 4);
  // `contiguous` of the transposed in-projection ([3,4,2,8]) copies: its schema says it may alias, and the
  // copy's memory went uncounted. Views stay views, and a `contiguous` whose input already is (the permuted
  // attention output, as the CPU kernel lays it out) stays one too: the kernel's outputs decide.
  EXPECT_EQ(op_named(g, "self_attn/contiguous").view_of, (std::vector<int32_t>{-1}));
  EXPECT_EQ(op_named(g, "self_attn/view_3").view_of, (std::vector<int32_t>{0}));
  EXPECT_EQ(op_named(g, "self_attn/permute").view_of, (std::vector<int32_t>{0}));
}

TEST(TorchScriptImport, ScalarOutputIsTheLoss) {
  const Graph g = import_torchscript(fixture("tiny_regression.pt"), inputs({"target:4x2:float", "x:4x3:float"}));
  EXPECT_FALSE(g.find("loss").has_value());
  EXPECT_EQ(count_types(g).at("aten::mse_loss"), 1);
  EXPECT_EQ(count_types(g, Phase::Update).at("placer::sgd"), 2);
  // Inputs are added in forward's argument order, whatever the order given.
  EXPECT_EQ(g.ops()[0].name, "x");
  EXPECT_EQ(g.ops()[1].name, "target");
}

TEST(TorchScriptImport, ErrorsNameTheProblem) {
  expect_input_error([] { import_torchscript(fixture("missing.pt"), inputs({"x:1:float"})); },
                     {"missing.pt", "no such file"});
  expect_input_error([] { import_torchscript(fixture("not_a_model.pt"), inputs({"x:1:float"})); },
                     {"not_a_model.pt", "not a TorchScript archive"});
  expect_input_error([] { import_torchscript(fixture("tiny_cnn.pt"), inputs({"image:2x3x8x8:float"})); },
                     {"no argument 'image'", "x"});
  expect_input_error([] { import_torchscript(fixture("tiny_regression.pt"), inputs({"x:4x3:float"})); },
                     {"missing --input", "'target'"});
  expect_input_error(
      [] {
        import_torchscript(fixture("tiny_regression.pt"), inputs({"x:4x3:float", "x:4x3:float", "target:4x2"}));
      },
      {"'x' is given twice"});
  expect_input_error([] { import_torchscript(fixture("control_flow.pt"), inputs({"x:2x4:float"})); },
                     {"control flow", "prim::If"});
  // Shapes that the model cannot take: the failing node is named.
  expect_input_error([] { import_torchscript(fixture("tiny_cnn.pt"), inputs({"x:2x5x8x8:float"})); },
                     {"aten::_convolution", "conv"});
}

TEST(TorchScriptImport, OpWithoutDerivativeFailsOnlyForTraining) {
  ImportOptions options;
  options.forward_only = true;
  const Graph g = import_torchscript(fixture("no_derivative.pt"), inputs({"x:2x4:float"}), options);
  EXPECT_EQ(count_types(g).at("aten::nextafter"), 1);
  try {
    import_torchscript(fixture("no_derivative.pt"), inputs({"x:2x4:float"}));
    ADD_FAILURE() << "expected a GraphError";
  } catch (const GraphError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no_derivative.pt"), std::string::npos) << what;
    EXPECT_NE(what.find("aten::nextafter"), std::string::npos) << what;
    EXPECT_NE(what.find("derivative for 'nextafter' is not implemented"), std::string::npos) << what;
  }
}

// ---------------------------------------------------------------- real models, traced now

struct RealModel {
  std::string name, file;
  std::vector<std::string> inputs;
  int64_t parameters = 0;
  std::vector<int64_t> output_shape;
};

// Parses the JSON lines make_fixtures.py --real prints (flat, known keys).
std::vector<RealModel> parse_manifest(const std::string& text) {
  std::vector<RealModel> models;
  std::istringstream lines(text);
  std::string line;
  const auto field = [](const std::string& l, const std::string& key) {
    const auto at = l.find("\"" + key + "\": ");
    if (at == std::string::npos) return std::string();
    size_t begin = at + key.size() + 4, end = begin;
    if (l[begin] == '"') return l.substr(begin + 1, l.find('"', begin + 1) - begin - 1);
    if (l[begin] == '[') return l.substr(begin + 1, l.find(']', begin) - begin - 1);
    while (end < l.size() && l[end] != ',' && l[end] != '}') ++end;
    return l.substr(begin, end - begin);
  };
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    RealModel m;
    m.name = field(line, "name");
    m.file = field(line, "file");
    m.parameters = std::stoll(field(line, "parameters"));
    std::istringstream ins(field(line, "inputs"));
    for (std::string part; std::getline(ins, part, ',');) {
      const auto q1 = part.find('"'), q2 = part.rfind('"');
      m.inputs.push_back(part.substr(q1 + 1, q2 - q1 - 1));
    }
    std::istringstream shape(field(line, "output_shape"));
    for (std::string dim; std::getline(shape, dim, ',');) m.output_shape.push_back(std::stoll(dim));
    models.push_back(m);
  }
  return models;
}

TEST(TorchScriptImport, RealModelsTracedByPyTorch) {
  // The project environment (scripts/install-deps.sh) has torch and torchvision.
  ASSERT_EQ(std::system(PLACER_PYTHON " -c 'import torch, torchvision' >/dev/null 2>&1"), 0)
      << PLACER_PYTHON " cannot import torch and torchvision: run scripts/install-deps.sh";
  const auto dir = std::filesystem::temp_directory_path() / ("placer_ts_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string command = std::string(PLACER_PYTHON) + " " + std::string(PLACER_SOURCE_DIR) +
                              "/scripts/make_fixtures.py --real " + dir.string() +
                              " resnet18 mobilenet_v2 googlenet inception_v3 lstm_lm transformer_encoder 2>/dev/null";
  std::string manifest;
  {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    ASSERT_TRUE(pipe);
    std::array<char, 4096> buffer{};
    while (fgets(buffer.data(), buffer.size(), pipe.get())) manifest += buffer.data();
  }
  const auto models = parse_manifest(manifest);
  ASSERT_EQ(models.size(), 6u) << manifest;
  for (const RealModel& m : models) {
    SCOPED_TRACE(m.name);
    std::vector<SampleInput> samples;
    for (const auto& spec : m.inputs) samples.push_back(parse_sample_input(spec));
    const Graph g = import_torchscript(m.file, samples);
    EXPECT_TRUE(g.is_training());
    EXPECT_NO_THROW(validate_graph(g));
    EXPECT_EQ(graph_from_json(graph_to_json(g)), g);
    const auto forward = count_types(g);
    int aten = 0;
    for (const auto& [type, n] : forward) aten += type.rfind("aten::", 0) == 0 ? n : 0;
    EXPECT_GE(aten, 4);  // the LSTM LM: embedding, lstm, linear, loss
    EXPECT_GE(count_types(g, Phase::Backward).at("placer::backward"), 4);
    // Every trainable parameter is a param op of its own, nothing else is.
    EXPECT_EQ(param_bytes(g), m.parameters * 4);
    // The loss reduces the model's output, whose shape PyTorch reported.
    const Op& loss = op_named(g, "loss");
    EXPECT_EQ(g.op(loss.inputs[0].op).outputs[loss.inputs[0].output].shape, m.output_shape);
    if (m.name == "resnet18") {
      // 20 convs, 20 batch norms, 17 relus, 8 residual adds, max/avg pool,
      // flatten, fc + loss; 62 parameter tensors, 40 batch-norm buffers.
      EXPECT_EQ(forward.at("aten::_convolution"), 20);
      EXPECT_EQ(forward.at("aten::batch_norm"), 20);
      EXPECT_EQ(forward.at("aten::relu"), 17);
      EXPECT_EQ(forward.at("aten::add.Tensor"), 8);
      EXPECT_EQ(forward.at("placer::param"), 62);
      EXPECT_EQ(forward.at("placer::input"), 41);
      EXPECT_EQ(aten, 70);
      EXPECT_EQ(g.size(), 1 + 62 + 40 + 70 + 70 + 62);
      EXPECT_EQ(op_named(g, "layer1.0.conv1/_convolution").layer, "layer1.0");
      EXPECT_EQ(op_named(g, "layer1.0.conv1.weight").layer, "layer1.0");
      EXPECT_EQ(op_named(g, "layer1.0/add").layer, "layer1.0");
      EXPECT_EQ(op_named(g, "layer2.0.downsample.0/_convolution").layer, "layer2.0.downsample");
      EXPECT_EQ(op_named(g, "fc/linear").layer, "fc");
    }
    std::printf("[ model    ] %-20s %5lld ops (%d forward ATen), %.3g GFLOP forward\n", m.name.c_str(),
                static_cast<long long>(g.size()), aten, [&] {
                  double f = 0;
                  for (const Op& op : g.ops()) f += op.phase == Phase::Forward ? op.flops : 0.0;
                  return f / 1e9;
                }());
  }
  placer::remove_tree(dir);
}

}  // namespace
}  // namespace placer
