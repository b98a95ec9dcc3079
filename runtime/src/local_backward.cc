// A backward op's autograd nodes, run in the executor's own thread.
//
// torch::autograd::grad runs them through the autograd engine, which hands
// every node of a CUDA tensor to its own device thread: two thread hand-offs
// per backward op, which made a 980-op NMT step 2.0-2.6x slower on an H100
// (bench/results/gpu_h100.md). The nodes of one forward op form a small graph;
// this runs it in dependency order and does what the engine does between
// nodes: a node's gradients are reduced to the shape and cast to the dtype its
// next node expects (InputMetadata), and its saved tensors are released unless
// the graph is retained. A leaf's gradient is what reaches its AccumulateGrad
// node, which is not run (nothing accumulates into .grad).
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "internal.h"

namespace placer {

namespace {

using torch::autograd::Node;

class LocalBackward {
 public:
  LocalBackward(const std::vector<at::Tensor>& leaves, bool retain_graph)
      : result_(leaves.size()), retain_(retain_graph) {
    // A leaf may be asked for more than once (a backward op's args[1] naming one input twice): each index
    // gets its gradient, as from torch::autograd::grad (keeping one index left the others zeros).
    for (size_t j = 0; j < leaves.size(); ++j) leaf_index_[leaves[j].unsafeGetTensorImpl()].push_back(j);
  }

  // The outputs' gradient edges get their incoming gradients; every node they
  // reach is found, with the number of edges that wait on it.
  void seed(const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& grads) {
    std::vector<Node*> stack;
    for (size_t k = 0; k < outs.size(); ++k) {
      const torch::autograd::Edge e = torch::autograd::impl::gradient_edge(outs[k]);
      if (!e.function) continue;
      hold_.push_back(e.function);  // a view's grad_fn can be made afresh for this call: keep it alive
      add(e.function.get(), e.input_nr, grads[k]);
      if (seen_.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const auto& next : n->next_edges()) {
        if (!next.function) continue;
        ++waiting_[next.function.get()];
        if (seen_.insert(next.function.get()).second) stack.push_back(next.function.get());
      }
    }
  }

  std::vector<at::Tensor> run() {
    std::vector<Node*> ready;
    for (Node* n : seen_)
      if (waiting_[n] == 0) ready.push_back(n);
    at::AutoGradMode no_graph(false);
    while (!ready.empty()) {
      Node* n = ready.back();
      ready.pop_back();
      std::vector<at::Tensor> in = std::move(buffers_[n]);
      if (in.empty()) in.resize(n->num_inputs());
      if (auto* acc = dynamic_cast<torch::autograd::AccumulateGrad*>(n)) {
        auto it = leaf_index_.find(acc->variable.unsafeGetTensorImpl());
        if (it != leaf_index_.end() && !in.empty())
          for (size_t j : it->second) result_[j] = in[0];
        continue;
      }
      if (!retain_) n->will_release_variables();
      std::vector<at::Tensor> out = (*n)(std::move(in));
      if (!retain_) n->release_variables();
      pass_on(*n, out, ready);
    }
    return std::move(result_);
  }

 private:
  void add(Node* node, uint32_t input, at::Tensor g) {
    auto& buf = buffers_[node];
    if (buf.empty()) buf.resize(node->num_inputs());
    buf[input] = buf[input].defined() ? buf[input] + g : std::move(g);
  }

  // A node's outputs to the nodes after it (as the engine validates them);
  // a node whose every incoming edge has delivered is ready.
  void pass_on(Node& n, std::vector<at::Tensor>& out, std::vector<Node*>& ready) {
    for (size_t i = 0; i < out.size() && i < n.next_edges().size(); ++i) {
      const auto& next = n.next_edge(i);
      if (!next.function) continue;
      if (out[i].defined()) {
        const auto& meta = next.function->input_metadata(next.input_nr);
        at::Tensor g = meta.maybe_reduce(i, std::move(out[i]), [](const std::string& m) { return m; });
        if (g.scalar_type() != c10::typeMetaToScalarType(meta.options().dtype())) g = g.to(meta.options().dtype());
        add(next.function.get(), next.input_nr, std::move(g));
      }
      if (--waiting_[next.function.get()] == 0) ready.push_back(next.function.get());
    }
  }

  std::unordered_map<Node*, std::vector<at::Tensor>> buffers_;
  std::unordered_map<Node*, int> waiting_;  // edges from nodes still to run
  std::unordered_set<Node*> seen_;
  std::vector<std::shared_ptr<Node>> hold_;
  std::unordered_map<const c10::TensorImpl*, std::vector<size_t>> leaf_index_;
  std::vector<at::Tensor> result_;
  bool retain_;
};

}  // namespace

std::vector<at::Tensor> grad_in_this_thread(const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& grads,
                                            const std::vector<at::Tensor>& leaves, bool retain_graph) {
  LocalBackward backward(leaves, retain_graph);
  backward.seed(outs, grads);
  return backward.run();
}

}  // namespace placer
