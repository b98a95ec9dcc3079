// Runtime benchmarks (results in bench/results/runtime.md):
//  (a) parallelism: two independent branches of equal work (matmul chains) on
//      cpu:2, split over both devices vs all on one; target >= 1.7x.
//  (b) overhead: the executor on one device vs a plain sequential LibTorch
//      loop over the same kernels, interleaved in one run; target <= 1.05x.
//      --device cuda:0 runs (b) on a GPU: the plain loop then ends with a
//      device synchronization, as the executor's step does.
// Usage: runtime_bench [--size N] [--chain K] [--rounds R] [--small-size N] [--device D]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_help.h"
#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/placement.h"
#include "placer/runtime/runtime.h"

#ifdef PLACER_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

using namespace placer;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

Op make(const std::string& name, const std::string& type, std::vector<TensorRef> inputs, std::vector<Arg> args,
        std::vector<int64_t> shape) {
  Op op;
  op.name = name;
  op.type = type;
  op.inputs = std::move(inputs);
  op.args = std::move(args);
  op.outputs = {TensorSpec{std::move(shape), DType::Float32}};
  return op;
}

// Two branches b0, b1: x_b -> mm(., w_b) -> tanh -> mm -> tanh ... (chain mms each).
Graph two_branches(int64_t n, int chain, std::vector<std::vector<OpId>>* branch_ops) {
  Graph g;
  g.name = "two_branches";
  branch_ops->assign(2, {});
  for (int b = 0; b < 2; ++b) {
    const std::string p = "b" + std::to_string(b) + "/";
    OpId x = g.add_op(make(p + "x", op_types::kInput, {}, {}, {n, n}));
    OpId w = g.add_op(make(p + "w", op_types::kParam, {}, {}, {n, n}));
    (*branch_ops)[b].push_back(x);
    (*branch_ops)[b].push_back(w);
    OpId prev = x;
    for (int i = 0; i < chain; ++i) {
      OpId mm = g.add_op(make(p + "mm" + std::to_string(i), "aten::mm", {{prev, 0}, {w, 0}},
                              {Arg::tensor(0), Arg::tensor(1)}, {n, n}));
      OpId t = g.add_op(make(p + "tanh" + std::to_string(i), "aten::tanh", {{mm, 0}}, {Arg::tensor(0)}, {n, n}));
      (*branch_ops)[b].push_back(mm);
      (*branch_ops)[b].push_back(t);
      prev = t;
    }
  }
  return g;
}

// A chain of mm -> add(bias) -> relu blocks, and the same as a plain loop.
Graph mlp_chain(int64_t n, int blocks) {
  Graph g;
  g.name = "chain";
  OpId x = g.add_op(make("x", op_types::kInput, {}, {}, {n, n}));
  OpId w = g.add_op(make("w", op_types::kParam, {}, {}, {n, n}));
  OpId bias = g.add_op(make("bias", op_types::kParam, {}, {}, {n}));
  OpId prev = x;
  for (int i = 0; i < blocks; ++i) {
    const std::string s = std::to_string(i);
    OpId mm = g.add_op(make("mm" + s, "aten::mm", {{prev, 0}, {w, 0}}, {Arg::tensor(0), Arg::tensor(1)}, {n, n}));
    OpId add = g.add_op(make("add" + s, "aten::add.Tensor", {{mm, 0}, {bias, 0}},
                             {Arg::tensor(0), Arg::tensor(1), Arg::integer(1)}, {n, n}));
    prev = g.add_op(make("relu" + s, "aten::relu", {{add, 0}}, {Arg::tensor(0)}, {n, n}));
  }
  return g;
}

double plain_loop(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, int blocks) {
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor h = x;
  for (int i = 0; i < blocks; ++i) h = at::relu(at::add(at::mm(h, w), bias, 1));
#ifdef PLACER_WITH_CUDA
  if (h.is_cuda()) c10::cuda::device_synchronize();
#endif
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct OverheadResult {
  double executor = 0, plain = 0;
};

int g_threads = 0;               // --threads: intra-op threads of the device and the plain loop
std::string g_device = "cpu:1";  // --device: where (b) runs

OverheadResult overhead(int64_t n, int blocks, int rounds) {
  const Graph g = mlp_chain(n, blocks);
  Cluster cluster = parse_device_list(g_device);
  if (g_threads > 0) cluster.devices[0].threads = g_threads;
  Runtime rt(cluster);
  const Placement p = single_device(g, DeviceId(0));
  MeasureOptions one;
  one.warmup_steps = 0;
  one.measured_steps = 1;
  // The plain loop gets the same cores as the device (a GPU device's host thread: one).
  at::set_num_threads(std::max(1, cluster.devices[0].threads));
  // Same distributions as the runtime draws (normal inputs, uniform +-1/sqrt(fan_in) params):
  // sgemm time depends on the values (zeros after relu), so they must match.
  const double bound = 1.0 / std::sqrt(double(n));
  const c10::Device where =
      cluster.devices[0].kind == DeviceKind::Cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  const at::Tensor x = at::randn({n, n}).to(where), w = (at::rand({n, n}) * (2 * bound) - bound).to(where),
                   b = (at::rand({n}) * (2 * bound) - bound).to(where);
  std::vector<double> ex, pl;
  rt.measure(g, p, one);
  plain_loop(x, w, b, blocks);
  for (int r = 0; r < rounds; ++r) {  // interleaved: drift hits both alike
    one.seed = r;
    ex.push_back(rt.measure(g, p, one).step_s);
    pl.push_back(plain_loop(x, w, b, blocks));
  }
  return {median(ex), median(pl)};
}

constexpr char kUsage[] =
    "usage: runtime_bench [--size N] [--chain K] [--rounds R] [--blocks B] [--small-size N] [--threads T]\n"
    "                     [--skip-a 1] [--device cpu:1|cuda:0]\n"
    "The executor's parallelism on cpu:2 and its overhead against a plain LibTorch loop.\n";

}  // namespace

int main(int argc, char** argv) {
  if (placer::bench::asked_for_help(argc, argv, kUsage)) return 0;
  int64_t size = 256, small = 32;
  int chain = 8, rounds = 15, blocks = 100;
  bool skip_a = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--size"))
      size = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--chain"))
      chain = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--blocks"))
      blocks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--small-size"))
      small = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      g_threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--skip-a"))
      skip_a = std::atoi(argv[i + 1]) != 0;
    else if (!std::strcmp(argv[i], "--device"))
      g_device = argv[i + 1];
    else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  std::printf("# runtime_bench\n\nmachine: %u hardware threads; load average: ", std::thread::hardware_concurrency());
  {
    std::ifstream la("/proc/loadavg");
    std::string l;
    std::getline(la, l);
    std::printf("%s\n\n", l.c_str());
  }

  // (a) parallelism
  if (!skip_a) {
    std::vector<std::vector<OpId>> branch;
    const Graph g = two_branches(size, chain, &branch);
    Runtime rt(parse_device_list("cpu:2"));
    const Placement one = single_device(g, DeviceId(0));
    Placement split = one;
    for (OpId op : branch[1]) split.device_of[op.value] = DeviceId(1);
    MeasureOptions o;
    o.warmup_steps = 2;
    o.measured_steps = rounds;
    const StepResult r1 = rt.measure(g, one, o);
    const StepResult r2 = rt.measure(g, split, o);
    if (!r1.ok() || !r2.ok()) {
      std::fprintf(stderr, "failed: %s %s\n", r1.message.c_str(), r2.message.c_str());
      return 1;
    }
    std::printf("## (a) two independent branches on cpu:2 (%d x [mm %lldx%lld + tanh] per branch, %d steps)\n\n", chain,
                (long long)size, (long long)size, rounds);
    std::printf("| placement | median step (s) | IQR (s) | busy cpu:0 (s) | busy cpu:1 (s) |\n|---|---|---|---|---|\n");
    std::printf("| all on cpu:0 | %.4f | %.4f | %.4f | %.4f |\n", r1.step_s, r1.iqr_s, r1.devices[0].busy_s,
                r1.devices[1].busy_s);
    std::printf("| branch per device | %.4f | %.4f | %.4f | %.4f |\n", r2.step_s, r2.iqr_s, r2.devices[0].busy_s,
                r2.devices[1].busy_s);
    std::printf("\nspeedup: **%.2fx** (target >= 1.7x, limit 2x)\n\n", r1.step_s / r2.step_s);
  }
  // (b) overhead
  std::printf("## (b) executor vs plain LibTorch loop, one device (%s), interleaved, %d rounds\n\n", g_device.c_str(),
              rounds);
  std::printf("| ops | op size | executor median (s) | plain loop median (s) | ratio |\n|---|---|---|---|---|\n");
  for (int64_t n : {size, small}) {
    const OverheadResult r = overhead(n, blocks, rounds);
    std::printf("| %d (mm, add, relu) | %lldx%lld | %.5f | %.5f | **%.3fx** |\n", 3 * blocks, (long long)n,
                (long long)n, r.executor, r.plain, r.executor / r.plain);
  }
  std::printf("\ntarget: ratio <= 1.05x at realistic op sizes; the small size shows the per-op cost.\n");
  return 0;
}
