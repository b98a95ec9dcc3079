// torch.export (.pt2) import: the fixtures are small models exported at build
// time by the project environment's torch (scripts/make_export_fixtures.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../error_of.h"
#include "placer/frontends/torch_import.h"
#include "placer/graphs/error.h"
#include "placer/graphs/serialize.h"
#include "placer/graphs/validate.h"

namespace placer {
namespace {

using testing::error_of;

std::string fixture(const std::string& name) { return std::string(PLACER_EXPORT_FIXTURES_DIR) + "/" + name; }

int count_type(const Graph& g, const std::string& type) {
  int n = 0;
  for (const Op& op : g.ops()) n += op.type == type;
  return n;
}

const Op& op_named(const Graph& g, const std::string& name) {
  const auto id = g.find(name);
  if (!id) throw std::runtime_error("no op '" + name + "'");
  return g.op(*id);
}

TEST(ExportImport, TrainingIrCnnWithInPlaceOps) {
  // Exported in train mode, default form: conv2d, batch_norm, relu_ (in
  // place), max_pool2d, flatten, linear; batch norm's counter add_ on a buffer.
  const Graph g = import_exported_program(fixture("tiny_cnn.pt2"), {});
  validate_graph(g);
  EXPECT_EQ(g.attrs.at("source"), "torch.export");
  EXPECT_EQ(count_type(g, "aten::relu_"), 0);
  EXPECT_EQ(count_type(g, "aten::relu"), 1);
  EXPECT_EQ(count_type(g, "aten::add"), 0) << "the buffer counter no output needs is dropped";
  // Parameters keep their module names; buffers are inputs, not trained.
  EXPECT_EQ(op_named(g, "conv.weight").type, op_types::kParam);
  EXPECT_EQ(op_named(g, "conv.weight").outputs[0].shape, (std::vector<int64_t>{8, 3, 3, 3}));
  EXPECT_EQ(op_named(g, "bn.running_mean").type, op_types::kInput);
  EXPECT_EQ(count_type(g, op_types::kSgd), 6);  // conv, bn and fc weights and biases
  // Ops are named by module and laid out by block.
  const Op& conv = op_named(g, "conv/conv2d");
  EXPECT_EQ(conv.outputs[0].shape, (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_DOUBLE_EQ(conv.flops, 2.0 * 2 * 8 * 8 * 8 * 27 + 2 * 8 * 8 * 8);
  EXPECT_EQ(op_named(g, "fc/linear").outputs[0].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_NE(g.attrs.at("input_shapes").find("x:2x3x8x8 (recorded example)"), std::string::npos);
}

TEST(ExportImport, DecomposedCoreAtenForm) {
  const Graph g = import_exported_program(fixture("tiny_cnn_core.pt2"), {});
  validate_graph(g);
  EXPECT_EQ(count_type(g, "aten::convolution"), 1);
  EXPECT_EQ(count_type(g, "aten::_native_batch_norm_legit_no_training"), 1);
  EXPECT_GE(count_type(g, "aten::addmm"), 1);
  EXPECT_EQ(count_type(g, op_types::kSgd), 6);
}

TEST(ExportImport, ForwardOnly) {
  ImportOptions options;
  options.forward_only = true;
  const Graph g = import_exported_program(fixture("tiny_cnn.pt2"), {}, options);
  EXPECT_EQ(count_type(g, op_types::kSgd), 0);
  EXPECT_EQ(count_type(g, op_types::kBackward), 0);
}

TEST(ExportImport, LanguageModelsAndTransformers) {
  for (const char* name : {"tiny_lstm_lm", "tiny_gpt", "tiny_transformer", "tiny_regression", "encoder_eval"}) {
    SCOPED_TRACE(name);
    const Graph g = import_exported_program(fixture(std::string(name) + ".pt2"), {});
    validate_graph(g);
    EXPECT_GT(count_type(g, op_types::kSgd), 0);
  }
  // The LSTM LM draws its tokens below the embedding's table size.
  const Graph lm = import_exported_program(fixture("tiny_lstm_lm.pt2"), {});
  EXPECT_EQ(op_named(lm, "tokens").args.at(0).i, 50);
  EXPECT_EQ(count_type(lm, "aten::lstm.input"), 1);
  // GPT: x * (1/sqrt(d)) is exported as mul.Tensor with a Python float; it runs as mul.Scalar.
  const Graph gpt = import_exported_program(fixture("tiny_gpt.pt2"), {});
  EXPECT_GT(count_type(gpt, "aten::mul.Scalar"), 0);
  EXPECT_EQ(count_type(gpt, "aten::mul.Tensor"), 0);
  // A program that returns its own scalar loss trains on it as it is.
  const Graph reg = import_exported_program(fixture("tiny_regression.pt2"), {});
  EXPECT_FALSE(reg.find("loss").has_value());
  EXPECT_EQ(count_type(reg, "aten::mse_loss"), 1);
}

// x[:, idx] is aten::index with None in its index list (an entry -1): it
// imported, but the graph could not be read back ("tensor list refers to input -1").
TEST(ExportImport, IndexWithNoneReadsBackFromJsonAndBinary) {
  const Graph g = import_exported_program(fixture("tiny_gather.pt2"), {});
  ASSERT_GT(count_type(g, "aten::index.Tensor"), 0);
  validate_graph(g);
  const Graph from_json = graph_from_json(graph_to_json(g));
  EXPECT_EQ(graph_to_json(from_json), graph_to_json(g));
  const Graph from_binary = graph_from_binary(graph_to_binary(g));
  EXPECT_EQ(graph_to_json(from_binary), graph_to_json(g));
}

TEST(ExportImport, SymbolicBatchSize) {
  // Recorded example: batch 4.
  const Graph recorded = import_exported_program(fixture("tiny_dynamic.pt2"), {});
  EXPECT_EQ(op_named(recorded, "fc/linear").outputs[0].shape, (std::vector<int64_t>{4, 5}));
  EXPECT_NE(recorded.attrs.at("input_shapes").find("x:4x3x8x8 (recorded example)"), std::string::npos);
  // --input picks another size within the exported range.
  const Graph given = import_exported_program(fixture("tiny_dynamic.pt2"), {parse_sample_input("x:16x3x8x8:float")});
  EXPECT_EQ(op_named(given, "fc/linear").outputs[0].shape, (std::vector<int64_t>{16, 5}));
  EXPECT_EQ(op_named(given, "conv/conv2d").outputs[0].shape, (std::vector<int64_t>{16, 8, 8, 8}));
  EXPECT_NE(given.attrs.at("input_shapes").find("x:16x3x8x8 (--input)"), std::string::npos);

  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(fixture("tiny_dynamic.pt2"), {parse_sample_input("x:100x3x8x8:float")});
            }).find("must be in [2, 64]"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(fixture("tiny_dynamic.pt2"), {parse_sample_input("x:4x5x8x8:float")});
            }).find("dimension 1 is 3 in the program (a static size)"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(fixture("tiny_dynamic.pt2"), {parse_sample_input("x:4x3x8x8:long")});
            }).find("input 'x' is Float in the program"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(fixture("tiny_dynamic.pt2"), {parse_sample_input("image:4x3x8x8:float")});
            }).find("the program has no input 'image' (its tensor inputs: x)"),
            std::string::npos);
}

TEST(ExportImport, ErrorsNameTheNodeAndTarget) {
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(fixture("custom_op.pt2"), {});
            }).find("node 'twice' (torch.ops.placer_test.twice.default): not an ATen operator"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(fixture("cond.pt2"), {});
            }).find("node 'cond' (torch.ops.higher_order.cond): higher-order ops"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] { import_exported_program(fixture("missing.pt2"), {}); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(std::string(PLACER_FIXTURES_DIR) + "/not_a_model.pt", {});
            }).find("not a torch.export archive"),
            std::string::npos);
  EXPECT_NE(error_of<InputError>([] {
              import_exported_program(std::string(PLACER_FIXTURES_DIR) + "/tiny_cnn.pt", {});
            }).find("not a torch.export program"),
            std::string::npos);

  // A truncated archive is refused, not half read.
  const std::string name = "truncated_" + std::to_string(::getpid()) + ".pt2";
  const std::string cut = ::testing::TempDir() + "/" + name;
  {
    std::ifstream in(fixture("tiny_cnn.pt2"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  EXPECT_NE(error_of<InputError>([&] { import_exported_program(cut, {}); }).find(name), std::string::npos);
  std::filesystem::remove(cut);
}

// Models the importers read wrong without a word until a review found them.
TEST(ExportImport, WhatWasMisreadSilently) {
  // An in-place write into a view, then its base read: the write was lost and g's branch dropped.
  const std::string view = error_of<InputError>([] { import_exported_program(fixture("view_write.pt2"), {}); });
  EXPECT_NE(view.find("reads 'zeros', which shares its storage with a tensor that node 'copy_'"), std::string::npos)
      << view;
  // A long Python number made a tensor after a double one: it bound to the double's constant (freed, same address).
  const Graph numbers = import_exported_program(fixture("numbers.pt2"), {});
  std::vector<DType> scalars;
  for (const Op& op : numbers.ops())
    if (op.name.rfind("scalar", 0) == 0) scalars.push_back(op.outputs.at(0).dtype);
  EXPECT_EQ(scalars, (std::vector<DType>{DType::Float64, DType::Int64}));
  // A frozen parameter (requires_grad false) is a constant: no gradient, no update; the head trains.
  for (const Graph& g : {import_exported_program(fixture("frozen.pt2"), {}),
                         import_torchscript(fixture("frozen.pt"), {parse_sample_input("x:3x8:float")})}) {
    int64_t param_bytes = 0;
    for (const Op& op : g.ops()) param_bytes += op.param_bytes;
    EXPECT_EQ(param_bytes, (8 * 2 + 2) * 4) << g.attrs.at("source");
    for (const Op& op : g.ops()) {
      if (op.name.find("backbone") != std::string::npos) {
        EXPECT_EQ(op.phase, Phase::Forward) << op.name;
      }
    }
  }
  // Metadata claiming 2^43 elements: refused, naming the tensor (the stride arithmetic overflowed int64).
  const std::string huge = error_of<InputError>([] { import_exported_program(fixture("huge_meta.pt2"), {}); });
  EXPECT_NE(huge.find("tensor 'head.weight': its metadata's sizes and strides describe"), std::string::npos) << huge;
  // (logits, loss): the loss is the model's own, not mean(logits).
  const Graph both = import_exported_program(fixture("logits_and_loss.pt2"), {});
  EXPECT_FALSE(both.find("loss")) << "an aten::mean loss was added";
  ASSERT_TRUE(both.find("cross_entropy_loss"));
  bool differentiated = false;
  for (const Op& op : both.ops()) differentiated |= op.forward == *both.find("cross_entropy_loss");
  EXPECT_TRUE(differentiated);
}

TEST(ExportImport, ImportModelPicksTheFormat) {
  EXPECT_TRUE(is_exported_program(fixture("tiny_cnn.pt2")));
  EXPECT_FALSE(is_exported_program(std::string(PLACER_FIXTURES_DIR) + "/tiny_cnn.pt"));
  EXPECT_EQ(import_model(fixture("tiny_cnn.pt2"), {}).attrs.at("source"), "torch.export");
  // From the archive's bytes (a service request), the same graph.
  std::ifstream in(fixture("tiny_cnn.pt2"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Graph from_bytes = import_exported_program_bytes(bytes, "request.pt2", {});
  EXPECT_EQ(from_bytes.size(), import_exported_program(fixture("tiny_cnn.pt2"), {}).size());
  EXPECT_NE(error_of<InputError>([&] {
              import_exported_program_bytes(bytes.substr(0, 100), "request.pt2", {});
            }).find("request.pt2: not a torch.export archive"),
            std::string::npos);
  EXPECT_EQ(import_model(std::string(PLACER_FIXTURES_DIR) + "/tiny_cnn.pt", {parse_sample_input("x:2x3x8x8:float")})
                .attrs.at("source"),
            "torchscript");
}

TEST(ExportImport, FusedFastPathSaysWhatToDo) {
  // torch.jit.trace of an eval-mode TransformerEncoder records the fused
  // inference op, which has no derivative: the error says how to get the
  // reference ops. torch.export of the same model records them.
  const std::string message =
      error_of<InputError>([] { import_torchscript(fixture("encoder_fastpath.pt"), {parse_sample_input("src:2x5x16:float")}); });
  EXPECT_NE(message.find("_transformer_encoder_layer_fwd"), std::string::npos) << message;
  EXPECT_NE(message.find("model.train()"), std::string::npos) << message;
  EXPECT_NE(message.find("torch.export"), std::string::npos) << message;
  ImportOptions forward;
  forward.forward_only = true;
  EXPECT_NO_THROW(
      import_torchscript(fixture("encoder_fastpath.pt"), {parse_sample_input("src:2x5x16:float")}, forward));
  EXPECT_NO_THROW(import_exported_program(fixture("encoder_eval.pt2"), {}));
}

}  // namespace
}  // namespace placer
