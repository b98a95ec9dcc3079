#include "placer/graphs/cluster.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "placer/graphs/error.h"
#include "placer/graphs/validate.h"

namespace placer {

namespace {
constexpr size_t kMaxClusterDevices = 4096;  // in a cluster (records_json.cc reads no more either)
}  // namespace

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::Cpu ? "cpu" : "cuda"; }

bool Device::operator==(const Device& o) const {
  return name == o.name && kind == o.kind && physical == o.physical && memory_bytes == o.memory_bytes &&
         peak_flops == o.peak_flops && mem_bandwidth == o.mem_bandwidth && op_overhead_s == o.op_overhead_s &&
         threads == o.threads;
}

bool Link::operator==(const Link& o) const {
  return from == o.from && to == o.to && latency_s == o.latency_s && bandwidth_Bps == o.bandwidth_Bps;
}

bool Cluster::operator==(const Cluster& o) const {
  return name == o.name && source == o.source && devices == o.devices && links == o.links &&
         default_link == o.default_link;
}

std::optional<DeviceId> Cluster::find(std::string_view device_name) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == device_name) return DeviceId(static_cast<int32_t>(i));
  return std::nullopt;
}

const Link& Cluster::link(DeviceId from, DeviceId to) const {
  const std::string& a = devices[from.value].name;
  const std::string& b = devices[to.value].name;
  for (const Link& l : links)
    if (l.from == a && l.to == b) return l;
  return default_link;
}

double Cluster::transfer_seconds(DeviceId from, DeviceId to, int64_t bytes) const {
  if (from == to) return 0.0;
  const Link& l = link(from, to);
  return l.latency_s + static_cast<double>(bytes) / l.bandwidth_Bps;
}

namespace {

int64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t{8} << 30;
  return static_cast<int64_t>(pages) * page;
}

// A device index: digits, no leading zero ("cuda:00" would name cuda:0 a second time).
bool parse_index(std::string_view text, int64_t& out) {
  if (text.empty() || text.size() > 6 || (text.size() > 1 && text[0] == '0')) return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

// The cores this process may run on (its affinity mask: taskset, a container's cpuset), where the runtime
// puts its CPU devices' threads; every online CPU where the mask cannot be read.
int usable_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Device cpu_device(int index, int count) {
  Device d;
  d.name = "cpu:" + std::to_string(index);
  d.kind = DeviceKind::Cpu;
  d.memory_bytes = host_memory_bytes() / std::max(count, 1);
  d.peak_flops = 5e10;
  d.mem_bandwidth = 1e10;
  d.op_overhead_s = 5e-6;
  // The runtime's share for it (runtime/devices.cc): `taskset -c 0 placer measure --devices cpu:1` gave the
  // device every online CPU's thread on its one core.
  d.threads = std::max(1, usable_core_count() / std::max(count, 1));
  return d;
}

Device cuda_device(const std::string& name, const std::string& physical) {
  Device d;
  d.name = name;
  d.kind = DeviceKind::Cuda;
  d.physical = physical == name ? "" : physical;
  d.memory_bytes = int64_t{80} << 30;
  d.peak_flops = 5e13;
  d.mem_bandwidth = 2e12;
  d.op_overhead_s = 5e-6;
  return d;
}

}  // namespace

namespace {

// "cpu:N" alone (this machine split into N CPU devices) or "vcuda:N" (N virtual devices on physical
// cuda:0): fills the cluster and returns true; false when the spec is not one of these.
bool parse_whole_list(std::string_view spec, Cluster& cluster) {
  int64_t n = 0;
  if (spec.rfind("cpu:", 0) == 0 && parse_index(spec.substr(4), n)) {
    if (n < 1 || n > 256) throw InputError("devices: cpu:N needs 1 <= N <= 256, got '" + std::string(spec) + "'");
    for (int i = 0; i < n; ++i) cluster.devices.push_back(cpu_device(i, static_cast<int>(n)));
    return true;
  }
  if (spec.rfind("vcuda:", 0) == 0 && parse_index(spec.substr(6), n)) {
    if (n < 1 || n > kMaxDevicesPerGpu)
      throw InputError(detail::concat("devices: vcuda:N needs 1 <= N <= ", kMaxDevicesPerGpu,
                                      " (each virtual device takes two of the 32 CUDA streams torch keeps per GPU), "
                                      "got '",
                                      spec, "'"));
    for (int i = 0; i < n; ++i) {
      Device d = cuda_device("cuda:" + std::to_string(i), "cuda:0");
      d.memory_bytes /= n;
      cluster.devices.push_back(d);
    }
    return true;
  }
  return false;
}

// The terms of a list: "cpu,cuda:0", "cpu:0,cpu:1,cuda:0"; "+" joins whole parts, so a "cpu:N"
// joined by "+" ("cpu:8+cuda:0") expands to N "cpu" terms. A list of more than kMaxClusterDevices is refused
// as it is read: "cpu:256+cpu:256+..." from a request expanded to millions of devices before validate_cluster.
std::vector<std::string> split_device_terms(std::string_view spec) {
  std::vector<std::string> terms;
  int64_t n = 0;
  size_t start = 0;
  auto check_count = [&](size_t more) {
    if (terms.size() + more > kMaxClusterDevices)
      throw InputError(detail::concat("cluster '", spec, "': devices: more than ", kMaxClusterDevices));
  };
  while (start <= spec.size()) {
    size_t comma = spec.find_first_of(",+", start);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view term = spec.substr(start, comma - start);
    const bool joined = (comma < spec.size() && spec[comma] == '+') || (start > 0 && spec[start - 1] == '+');
    if (joined && term.rfind("cpu:", 0) == 0 && parse_index(term.substr(4), n)) {
      if (n < 1 || n > 256) throw InputError("devices: cpu:N needs 1 <= N <= 256, got '" + std::string(term) + "'");
      check_count(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) terms.push_back("cpu");
    } else {
      check_count(1);
      terms.emplace_back(term);
    }
    start = comma + 1;
  }
  return terms;
}

// One device of a list; `next_cpu` numbers the bare "cpu" terms and follows an explicit "cpu:K".
Device device_from_term(const std::string& t, std::string_view spec, int cpus, int& next_cpu) {
  int64_t n = 0;
  if (t == "cpu") return cpu_device(next_cpu++, cpus);
  if (t.rfind("cpu:", 0) == 0 && parse_index(t.substr(4), n)) {
    next_cpu = static_cast<int>(n) + 1;
    return cpu_device(static_cast<int>(n), cpus);
  }
  if (t == "cuda") return cuda_device("cuda:0", "cuda:0");
  if (t.rfind("cuda:", 0) == 0 && parse_index(t.substr(5), n)) return cuda_device(t, t);
  throw InputError("devices: bad device '" + t + "' in '" + std::string(spec) +
                   "' (expected cpu, cpu:K, cuda:K, the whole list cpu:N / vcuda:N, or cpu:N+cuda:K)");
}

}  // namespace

Cluster parse_device_list(std::string_view spec) {
  Cluster cluster;
  cluster.name = std::string(spec);
  cluster.source = "device list '" + std::string(spec) + "': defaults until a profile calibrates it";
  cluster.default_link.latency_s = 10e-6;
  cluster.default_link.bandwidth_Bps = 5e9;
  if (spec.empty()) throw InputError("devices: empty device list (try cpu:2 or cpu,cuda:0)");
  if (parse_whole_list(spec, cluster)) return cluster;

  const std::vector<std::string> terms = split_device_terms(spec);
  int cpus = 0;
  for (const auto& t : terms)
    if (t == "cpu" || t.rfind("cpu:", 0) == 0) ++cpus;
  int next_cpu = 0;
  for (const std::string& t : terms) cluster.devices.push_back(device_from_term(t, spec, cpus, next_cpu));
  validate_cluster(cluster);
  return cluster;
}

namespace {

// A device's or link's constant (validate.h's ranges; a peak_flops of 1e-320
// made every op infinite, an overhead of 1e100 broke CLP).
void check_range(double value, double lo, double hi, const std::string& where, const char* field, const char* unit) {
  const std::string problem = range_problem(value, lo, hi, unit);
  if (!problem.empty()) throw InputError(where + field + ": " + problem);
}

constexpr double kMaxSeconds = 1e3;  // a fixed cost per op or per transfer
// A device's memory: 9e18 bytes on two devices overflowed the sums of capacities.
constexpr int64_t kMaxMemoryBytes = int64_t{1} << 60;  // 1 EiB

// "cpu:K" / "cuda:K" with K an index (parse_index).
bool is_device_name(const std::string& name, const std::string& prefix) {
  int64_t idx = 0;
  return name.rfind(prefix, 0) == 0 && parse_index(std::string_view(name).substr(prefix.size()), idx);
}

// The real device a CUDA device runs on (empty: its name); "cuda:-1" became device index -1. A CPU device
// has none: the runtime reads it for CUDA devices only.
void check_physical(const Device& d, const std::string& where) {
  if (d.physical.empty()) return;
  if (d.kind == DeviceKind::Cpu)
    throw InputError(where + "physical: must be empty on a cpu device, got '" + d.physical + "'");
  if (!is_device_name(d.physical, "cuda:"))
    throw InputError(where + "physical: expected 'cuda:K' (the GPU it runs on) or empty, got '" + d.physical + "'");
}

void check_device(const Device& d, const std::string& where) {
  const std::string prefix = d.kind == DeviceKind::Cpu ? "cpu:" : "cuda:";
  if (!is_device_name(d.name, prefix))
    throw InputError(where + "name: expected '" + prefix + "K' for a " + device_kind_name(d.kind) + " device");
  check_physical(d, where);
  if (d.memory_bytes <= 0) throw InputError(where + "memory_bytes: must be positive");
  if (d.memory_bytes > kMaxMemoryBytes)
    throw InputError(detail::concat(where, "memory_bytes: ", d.memory_bytes, " is over ", kMaxMemoryBytes, " (1 EiB)"));
  check_range(d.peak_flops, kMinRate, kMaxRate, where, "peak_flops", "FLOP/s");
  check_range(d.mem_bandwidth, kMinRate, kMaxRate, where, "mem_bandwidth", "bytes/s");
  check_range(d.op_overhead_s, 0.0, kMaxSeconds, where, "op_overhead_s", "s");
  if (d.threads < 0) throw InputError(where + "threads: must be >= 0");
}

}  // namespace

void validate_cluster(const Cluster& cluster) {
  if (cluster.devices.empty()) throw InputError("cluster '" + cluster.name + "': devices: no devices");
  if (cluster.devices.size() > kMaxClusterDevices)
    throw InputError(detail::concat("cluster '", cluster.name, "': devices: more than ", kMaxClusterDevices));
  std::set<std::string> names;
  for (size_t i = 0; i < cluster.devices.size(); ++i) {
    const Device& d = cluster.devices[i];
    const std::string where = "cluster '" + cluster.name + "': devices[" + std::to_string(i) + "] '" + d.name + "': ";
    check_device(d, where);
    if (!names.insert(d.name).second) throw InputError(where + "name: duplicate device name");
  }
  auto check_link = [&](const Link& l, const std::string& where) {
    check_range(l.latency_s, 0.0, kMaxSeconds, where, "latency_s", "s");
    check_range(l.bandwidth_Bps, kMinRate, kMaxRate, where, "bandwidth_Bps", "bytes/s");
  };
  check_link(cluster.default_link, "cluster '" + cluster.name + "': default_link: ");
  std::set<std::pair<std::string, std::string>> pairs;  // a pair given twice: the first was used, silently
  for (size_t i = 0; i < cluster.links.size(); ++i) {
    const Link& l = cluster.links[i];
    const std::string where = "cluster '" + cluster.name + "': links[" + std::to_string(i) + "]: ";
    if (!names.count(l.from)) throw InputError(where + "from: unknown device '" + l.from + "'");
    if (!names.count(l.to)) throw InputError(where + "to: unknown device '" + l.to + "'");
    if (l.from == l.to) throw InputError(where + "a link from a device to itself");
    if (!pairs.emplace(l.from, l.to).second)
      throw InputError(where + "the link from '" + l.from + "' to '" + l.to + "' is given twice");
    check_link(l, where);
  }
}

}  // namespace placer
