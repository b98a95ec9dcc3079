// Per-op and per-transfer costs for the simulator: calibrated from a measured
// Profile when there is one, else a roofline model from the cluster's constants.
#pragma once

#include <string>
#include <vector>

#include "placer/graphs/cluster.h"
#include "placer/graphs/ir.h"
#include "placer/graphs/profile.h"

namespace placer {

// The roofline time of one op on one device (0 for placer::input/param).
double roofline_seconds(const Graph& graph, OpId op, const Device& device);

class CostModel {
 public:
  // max(flops / peak_flops, bytes touched / mem_bandwidth) + op_overhead_s per op.
  static CostModel roofline(const Graph& graph, const Cluster& cluster);
  // Ops found in the profile (by name, else by signature, on the same device
  // kind) take the measured time; the rest fall back to roofline. Links use
  // the profile's alpha/beta fits where given.
  // How the profile's mixed step prices a copy between two CPU devices of one
  // contention group beyond the link fit: per byte (group_copy_s_per_byte, the
  // default), or per copy whatever its size (group_copy_s; `placer fidelity`
  // reports it beside the default on the same measurements).
  enum class GroupCopyPricing : uint8_t { PerByte, PerCopy };
  static CostModel calibrated(const Graph& graph, const Cluster& cluster, const Profile& profile,
                              GroupCopyPricing pricing = GroupCopyPricing::PerByte);
  // A graph whose ops are copies of the graph the profile measured (a pipelined mini-batch, pipeline.h):
  // its ops as calibrated() sets them, and what the measured graph's steps fit (each CPU device's
  // anchor, the mixed step's copy cost) fitted on `measured` and carried over. On the copies' own names
  // those fits were skipped: a pipeline of one micro-batch simulated 15% longer than the same step.
  static CostModel calibrated_copies(const Graph& graph, const Graph& measured, const Cluster& cluster,
                                     const Profile& profile, GroupCopyPricing pricing = GroupCopyPricing::PerByte);

  double op_seconds(OpId op, DeviceId device) const {
    return op_s_[static_cast<size_t>(op.value) * devices_ + device.value];
  }
  double transfer_seconds(DeviceId from, DeviceId to, int64_t bytes) const;
  int32_t devices() const { return devices_; }
  int64_t ops() const { return devices_ ? static_cast<int64_t>(op_s_.size()) / devices_ : 0; }
  // Fraction of ops whose cost came from a measurement (0 for roofline).
  double calibrated_fraction() const { return calibrated_fraction_; }
  // Calibrated on a profile taken on other devices than the cluster's (its ops
  // then take a profiled device's times of their kind, else the roofline's):
  // what differs, e.g. "taken on 'cpu:2'; cpu:2, cpu:3 not in it". Empty: the
  // same devices (or the roofline).
  const std::string& profile_mismatch() const { return profile_mismatch_; }
  // Calibrated on a profile of another graph that has this graph's name (and
  // op names) but other shapes, e.g. a builder graph rebuilt at another size:
  // which op differs, e.g. "its op 'y' was aten::mm(float[8]), here
  // aten::mm(float[16])". Its ops then take the times of profiled ops of the
  // same signature, else the roofline's, and the profile's whole-graph steps
  // (device steps, mixed step) are not used. Empty: the profile is of this
  // graph, or says it is of another by its name.
  const std::string& graph_mismatch() const { return graph_mismatch_; }
  // The graph a profile says it is of, where that is another graph (by name): its ops
  // then calibrate this graph's by signature only. Empty: this graph's, or unnamed.
  const std::string& profile_of_graph() const { return profile_of_graph_; }
  // What a user is told of either mismatch, with what to do about it ("" when
  // neither): "the profile was taken on ...: ...; profile these devices". Also
  // when a profile names no graph and its whole-graph steps go unused.
  std::string profile_warning() const;
  // The anchor of the profile's CPU device steps (Profile::cpu_steps): the
  // step of the graph alone on the device its ops were timed on, over that
  // placement simulated with the ops as timed one by one (1.25: the ops sum to
  // 80% of the step; every CPU device's op times were scaled by it, times its
  // own step over that device's). 1 where no step anchored the model.
  double cpu_step_anchor() const { return cpu_step_anchor_; }

  // Contention between devices that share a host (cpu:N devices share this
  // machine's memory system and cores). An op on a device of a contention
  // group takes op_seconds when it runs alone in its group and
  // contended_seconds when every other device of the group is busy, in
  // proportion in between. A copy between two CPU devices of one group is
  // made by the destination device (the runtime's rule for cpu:N), not on a
  // channel. No groups: devices are independent.
  bool has_contention() const { return !contended_s_.empty(); }
  double contended_seconds(OpId op, DeviceId device) const {
    return contended_s_[static_cast<size_t>(op.value) * devices_ + device.value];
  }
  int32_t contention_group(DeviceId device) const { return group_.empty() ? -1 : group_[device.value]; }
  void set_contended_seconds(OpId op, DeviceId device, double seconds);
  // A copy made on `device` (within its group) takes this many times its link
  // time while every other device of the group is busy (1 = no slowdown).
  double copy_contention(DeviceId device) const { return copy_factor_.empty() ? 1.0 : copy_factor_[device.value]; }
  void set_copy_contention(DeviceId device, double factor);
  // Puts devices in one contention group (a new group number each call).
  void set_contention_group(const std::vector<DeviceId>& devices);
  // A copy between two devices of one contention group costs this much more
  // per byte than its link fit says: fitted on the profile's mixed step
  // (Profile::mixed), where copies run beside the other devices' work.
  double group_copy_s_per_byte() const { return group_copy_s_per_byte_; }
  void set_group_copy_s_per_byte(double seconds);
  // The same priced per copy, whatever its size (GroupCopyPricing::PerCopy).
  double group_copy_s() const { return group_copy_s_; }
  void set_group_copy_s(double seconds);
  // A copy between a CPU device and a GPU (devices of different kinds) takes
  // this many seconds more than its link fit says, whatever its size: fitted on
  // the profile's mixed step over every CPU device and a GPU. On an H200's
  // cpu:8+cuda:0 the simulator's error grew with the number of such copies,
  // not with their bytes (bench/results/gpu_crossings.md).
  double cross_copy_s() const { return cross_copy_s_; }
  void set_cross_copy_s(double seconds);
  // Whether the simulator makes those copies on their destination device, ahead
  // of its ops (set with the fit above), instead of on the link's channel beside
  // the devices' work.
  bool cross_copies_on_destination() const { return cross_on_destination_; }
  void set_cross_copies_on_destination(bool on) { cross_on_destination_ = on; }
  // Multiplies every CPU<->GPU link's time by factor (scale_link on each of
  // cross_kind_links; hybrid training's calibration).
  void scale_cross_links(const Cluster& cluster, double factor);

  // Overrides, e.g. for tests with hand-computed costs.
  void set_op_seconds(OpId op, DeviceId device, double seconds);
  void set_link(DeviceId from, DeviceId to, double alpha_s, double beta_Bps);

  // Every op costs op_seconds on every device; links are free (alpha = 0,
  // beta = 0 means no per-byte cost). A start for hand-made test costs.
  static CostModel uniform(int64_t ops, int32_t devices, double op_seconds);
  double link_alpha_s(DeviceId from, DeviceId to) const {
    return alpha_s_[static_cast<size_t>(from.value) * devices_ + to.value];
  }
  double link_beta_Bps(DeviceId from, DeviceId to) const {
    return beta_Bps_[static_cast<size_t>(from.value) * devices_ + to.value];
  }
  // Multiplies every op cost on a device (hybrid-mode recalibration).
  void scale_device(DeviceId device, double factor);
  // Multiplies a link's transfer times (alpha x factor, beta / factor).
  void scale_link(DeviceId from, DeviceId to, double factor);

 private:
  int32_t devices_ = 0;
  std::vector<double> op_s_;     // [op * devices + device]
  std::vector<double> alpha_s_;  // [from * devices + to]
  std::vector<double> beta_Bps_;
  double calibrated_fraction_ = 0.0;
  std::string profile_mismatch_;
  std::string graph_mismatch_;
  std::string profile_of_graph_;
  std::string unused_steps_;  // a profile naming no graph: its steps not used ("cpu_steps, mixed_step"; "": none)
  double cpu_step_anchor_ = 1.0;
  std::vector<double> cpu_step_scale_;  // [device]: what the profile's CPU steps scaled it by; empty: none
  std::vector<double> contended_s_;     // [op * devices + device]; empty = no contention
  std::vector<int32_t> group_;          // [device]: contention group, -1 = none
  std::vector<double> copy_factor_;     // [device]; empty = 1
  int32_t groups_ = 0;
  double group_copy_s_per_byte_ = 0.0;
  double group_copy_s_ = 0.0;
  double cross_copy_s_ = 0.0;
  bool cross_on_destination_ = false;
  std::vector<int8_t> kinds_;  // [device]: DeviceKind (roofline and calibrated models; empty: unknown)
};

// Every ordered pair of devices of different kinds (CPU<->GPU links).
std::vector<std::pair<DeviceId, DeviceId>> cross_kind_links(const Cluster& cluster);

}  // namespace placer
