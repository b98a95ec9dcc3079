// The fidelity report: JSON (read and written), markdown and an SVG scatter plot.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <utility>

#include "placer/env/fidelity.h"
#include "placer/env/pipeline_objective.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placer/graphs/json_reader.h"
#include "placer/graphs/json_writer.h"
#include "placer/graphs/stats.h"
#include "placer/graphs/xml.h"

namespace placer {

std::string rank_correlation_text(double rho, const char* printf_format) {
  return std::isnan(rho) ? "undefined (all values tied)" : format_number(printf_format, rho);
}

namespace {

// "objective", "microbatches", "schedule": absent (or "step") for one training step.
std::optional<PipelineSpec> read_pipeline(FieldReader<JsonNode>& top) {
  std::string objective = "step";
  top.read("objective", &objective);
  const std::optional<Objective> parsed = parse_objective(objective);
  if (!parsed) top.fail("objective", "unknown objective '" + objective + "' (known: step, pipeline)");
  if (*parsed != Objective::Pipeline) return std::nullopt;
  PipelineSpec spec;
  spec.microbatches = static_cast<int>(top.integer(top.need("microbatches"), "microbatches", 1, 1024));
  const std::string schedule = top.string(top.need("schedule"), "schedule");
  const std::optional<PipelineSchedule> s = parse_schedule(schedule);
  if (!s) top.fail("schedule", "unknown schedule '" + schedule + "' (known: gpipe, 1f1b)");
  spec.schedule = *s;
  return spec;
}

// A calibration in the report: the profile it uses, its name after "calibrated on", and a point's
// JSON key for the simulator calibrated this way when it is the report's other calibration.
struct CalibrationText {
  const char* profile;
  const char* instead;
  const char* key;
};
CalibrationText calibration_text(const std::string& calibration) {
  if (calibration == "rounds_mean")
    return {"The profile is the rounds' mean (each op's mean over the rounds, as one `placer profile` estimates it)",
            "the rounds' mean", "simulated_round_mean_s"};
  return {"The profile keeps each op's fastest round", "each op's fastest round", "simulated_fastest_round_s"};
}

// What a time in the report is of: "step" or "mini-batch".
const char* time_unit(const std::optional<PipelineSpec>& pipeline) { return pipeline ? "mini-batch" : "step"; }
}  // namespace

namespace {

using Reader = FieldReader<JsonNode>;

// A time in the report: a step or a part of one, 10^4 s at most (as a profile's).
constexpr double kMaxSeconds = 1e4;

double need_number(Reader& f, const char* key) { return f.number(f.need(key), f.path(key)); }

// Whether `key` holds a list (absent or null: no; anything else: an error).
bool has_list(Reader& top, const char* key, JsonNode* v) {
  *v = top.get(key);
  if (!v->present() || v->is_null()) return false;
  if (!v->is_list()) top.fail(top.path(key), "expected a list, got " + v->describe());
  return true;
}

// The numbers at `key`, if any, each in [lo, hi].
void read_numbers(Reader& top, const char* key, std::vector<double>* out,
                  double lo = -std::numeric_limits<double>::infinity(),
                  double hi = std::numeric_limits<double>::infinity()) {
  JsonNode v;
  if (has_list(top, key, &v))
    for (size_t k = 0; k < v.size(); ++k) out->push_back(top.number(v.at(k), index_path(top.path(key), k), lo, hi));
}

// The optional times at these keys, where present: each a number in [0, kMaxSeconds].
void read_seconds(Reader& f, std::initializer_list<std::pair<const char*, double*>> fields) {
  for (const auto& [key, out] : fields) f.read(key, out, 0.0, kMaxSeconds);
}

// The objects at `key`, if any, each handed to `each` with its reader.
template <typename Each>
void read_objects(Reader& top, const char* key, Each each) {
  JsonNode v;
  if (!has_list(top, key, &v)) return;
  for (size_t k = 0; k < v.size(); ++k) {
    Reader item(v.at(k), index_path(key, k), top.on_fail());
    if (!v.at(k).is_map()) top.fail(item.path(), "expected an object, got " + v.at(k).describe());
    each(item);
  }
}

FidelityRetake read_retake(Reader& t) {
  FidelityRetake x;
  const double seconds = 10.0;  // a probe reading is bounded at 50 ms; anything near 10 s is not one
  if (!t.read("round", &x.round, 0, 100000)) t.fail(t.path("round"), "missing required field");
  if (!t.read("probe_s", &x.probe_s, 0.0, seconds)) t.fail(t.path("probe_s"), "missing required field");
  if (!t.read("quiet_s", &x.quiet_s, 0.0, seconds)) t.fail(t.path("quiet_s"), "missing required field");
  t.read("retake_probe_s", &x.retake_probe_s, 0.0, seconds);
  t.read("kept", &x.kept);
  t.finish();
  if (!(x.quiet_s > 0 && x.probe_s > x.quiet_s))
    t.fail(t.path("probe_s"), "must be above quiet_s > 0 (a retake answers a reading above the quietest)");
  if (x.kept && !(x.retake_probe_s > 0 && x.retake_probe_s < x.probe_s))
    t.fail(t.path("kept"), "a kept retake must have read lower than probe_s (0 < retake_probe_s < probe_s)");
  return x;
}

FidelityPoint read_point(Reader& pt, const char* other_calibration_key) {
  FidelityPoint p;
  p.kind = pt.string(pt.need("kind"), pt.path("kind"));
  // A step is a finite time > 0 (10^4 s at most, as a profile's): a zero made the MAPE leave the point out, an
  // inf made it inf.
  p.measured_s = pt.number(pt.need("measured_s"), pt.path("measured_s"), 1e-12, kMaxSeconds);
  p.measured_iqr_s = pt.number(pt.need("measured_iqr_s"), pt.path("measured_iqr_s"), 0.0, kMaxSeconds);
  p.simulated_s = pt.number(pt.need("simulated_s"), pt.path("simulated_s"), 1e-12, kMaxSeconds);
  pt.read("ci_level", &p.ci_level, 0.0, 1.0);  // absent: written before, at 95%
  read_seconds(pt, {{"ci_low_s", &p.ci_low_s},
                    {"ci_high_s", &p.ci_high_s},
                    {"simulated_unfitted_s", &p.simulated_unfitted_s},
                    {"simulated_per_copy_s", &p.simulated_per_copy_s},
                    {"simulated_equal_cpus_s", &p.simulated_equal_cpus_s},
                    {other_calibration_key, &p.simulated_other_calibration_s}});
  // Counts are whole numbers in range (a cast of 1e30 to an integer is undefined), and every round's step
  // is a step (one skipped shifted the rounds the retest pairs).
  pt.read("steps", &p.steps, 0, 1000000000);
  p.transfer_bytes = pt.integer(pt.need("transfer_bytes"), pt.path("transfer_bytes"), 0, int64_t{1} << 62);
  read_numbers(pt, "rounds_s", &p.rounds_s, 1e-12, kMaxSeconds);
  pt.finish();
  return p;
}

// The report's own fields: what was measured where, and the fitted copy costs.
void read_header(Reader& top, FidelityReport& r) {
  r.graph = top.string(top.need("graph"), "graph");
  r.devices = top.string(top.need("devices"), "devices");
  r.command = top.string(top.need("command"), "command");
  r.host = top.string(top.need("host"), "host");
  top.read("selection", &r.selection);
  r.calibration = "fastest_round";  // a report that names none predates the rounds' mean
  top.read("calibration", &r.calibration);
  if (r.calibration != "rounds_mean" && r.calibration != "fastest_round")
    top.fail("calibration", "expected \"rounds_mean\" or \"fastest_round\", got \"" + r.calibration + "\"");
  r.pipeline = read_pipeline(top);
  r.ops = top.integer(top.need("ops"), "ops", 0, 100000000);
  r.calibrated_fraction = top.number(top.need("calibrated_fraction"), "calibrated_fraction", 0.0, 1.0);
  r.per_op_overhead_s = need_number(top, "per_op_overhead_s");
  read_seconds(top, {{"copy_s_per_byte", &r.copy_s_per_byte},
                     {"copy_s_per_copy", &r.copy_s_per_copy},
                     {"cross_copy_s", &r.cross_copy_s},
                     {"cross_copy_s_per_byte", &r.cross_copy_s_per_byte}});
  r.failed = static_cast<int>(top.integer(top.need("failed"), "failed", 0, 1000000));
}

}  // namespace

FidelityReport FidelityReport::from_json(const std::string& text) {
  rj::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) throw InputError("fidelity report: not a JSON object");
  // "fidelity report: points[0].measured_s: expected a number, got \"x\""
  Reader top(JsonNode(&doc), "", throw_field_error<InputError>("fidelity report"));
  FidelityReport r;
  read_header(top, r);
  read_numbers(top, "core_rtt_profiled_s", &r.core_rtt_profiled_s);
  read_numbers(top, "core_rtt_measured_s", &r.core_rtt_measured_s);
  read_objects(top, "cpu_steps", [&](Reader& s) {
    DeviceStep d;
    if (!s.read("device", &d.device)) s.fail(s.path("device"), "missing required field");
    if (!s.read("step_s", &d.step_s, 1e-12, 1e6)) s.fail(s.path("step_s"), "missing required field");
    s.finish();
    r.cpu_steps.push_back(std::move(d));
  });
  top.read("spell_ratio", &r.spell_ratio, 1.0, 1000.0);
  read_objects(top, "retakes", [&](Reader& t) { r.retakes.push_back(read_retake(t)); });
  if (!top.get("points").is_list()) top.fail("points", "expected a list, got " + top.need("points").describe());
  const char* other_key = calibration_text(r.other_calibration()).key;
  read_objects(top, "points", [&](Reader& pt) { r.points.push_back(read_point(pt, other_key)); });
  // The writer's figures of the points: computed again below.
  for (const char* key : {"placements", "spearman", "kendall_tau_b", "mape", "retest_spearman", "split_half_spearman"})
    top.get(key);
  top.finish();
  if (r.points.size() < 2) throw InputError("fidelity report: needs at least two points");
  r.compute_statistics();
  return r;
}

namespace {

// A figure that may be undefined (NaN): null in the JSON, never nan.
std::string number_or_null(double v) { return std::isnan(v) ? std::string("null") : format_number(v); }

void write_numbers(std::ostringstream& o, const char* key, const std::vector<double>& values, int digits) {
  if (values.empty()) return;
  o << ",\n  \"" << key << "\": [";
  for (size_t k = 0; k < values.size(); ++k) o << (k ? ", " : "") << format_number(values[k], digits);
  o << "]";
}

void write_header(std::ostringstream& o, const FidelityReport& r) {
  o << "{\n  \"graph\": " << json_quote(r.graph) << ",\n  \"ops\": " << r.ops
    << ",\n  \"devices\": " << json_quote(r.devices) << ",\n  \"command\": " << json_quote(r.command)
    << ",\n  \"host\": " << json_quote(r.host);
  if (!r.selection.empty()) o << ",\n  \"selection\": " << json_quote(r.selection);
  o << ",\n  \"calibration\": " << json_quote(r.calibration);
  if (r.pipeline)
    o << ",\n  \"objective\": \"pipeline\",\n  \"microbatches\": " << r.pipeline->microbatches
      << ",\n  \"schedule\": \"" << schedule_name(r.pipeline->schedule) << "\"";
  o << ",\n  \"calibrated_fraction\": " << format_number(r.calibrated_fraction)
    << ",\n  \"per_op_overhead_s\": " << format_number(r.per_op_overhead_s);
  for (auto [key, value] :
       {std::pair{"copy_s_per_byte", r.copy_s_per_byte}, std::pair{"copy_s_per_copy", r.copy_s_per_copy},
        std::pair{"cross_copy_s", r.cross_copy_s}, std::pair{"cross_copy_s_per_byte", r.cross_copy_s_per_byte}})
    if (value > 0) o << ",\n  \"" << key << "\": " << format_number(value, 8);
  write_numbers(o, "core_rtt_profiled_s", r.core_rtt_profiled_s, 4);
  write_numbers(o, "core_rtt_measured_s", r.core_rtt_measured_s, 4);
}

void write_steps_and_retakes(std::ostringstream& o, const FidelityReport& r) {
  if (!r.cpu_steps.empty()) {
    o << ",\n  \"cpu_steps\": [";
    for (size_t k = 0; k < r.cpu_steps.size(); ++k)
      o << (k ? ", " : "") << "{\"device\": " << json_quote(r.cpu_steps[k].device)
        << ", \"step_s\": " << format_number(r.cpu_steps[k].step_s, 8) << "}";
    o << "]";
  }
  if (r.retakes.empty()) return;
  o << ",\n  \"spell_ratio\": " << format_number(r.spell_ratio) << ",\n  \"retakes\": [";
  for (size_t k = 0; k < r.retakes.size(); ++k) {
    const FidelityRetake& t = r.retakes[k];
    o << (k ? ", " : "") << "{\"round\": " << t.round << ", \"probe_s\": " << format_number(t.probe_s, 4)
      << ", \"quiet_s\": " << format_number(t.quiet_s, 4)
      << ", \"retake_probe_s\": " << format_number(t.retake_probe_s, 4) << ", \"kept\": " << (t.kept ? "true" : "false")
      << "}";
  }
  o << "]";
}

void write_point(std::ostringstream& o, const FidelityPoint& p, const char* other_calibration_key) {
  o << "    {\"kind\": " << json_quote(p.kind) << ", \"measured_s\": " << format_number(p.measured_s, 8)
    << ", \"measured_iqr_s\": " << format_number(p.measured_iqr_s, 8)
    << ", \"ci_low_s\": " << format_number(p.ci_low_s, 8) << ", \"ci_high_s\": " << format_number(p.ci_high_s, 8)
    << ", \"ci_level\": " << format_number(p.ci_level, 8) << ", \"steps\": " << p.steps
    << ", \"simulated_s\": " << format_number(p.simulated_s, 8);
  for (auto [key, value] : {std::pair{"simulated_unfitted_s", p.simulated_unfitted_s},
                            std::pair{"simulated_per_copy_s", p.simulated_per_copy_s},
                            std::pair{"simulated_equal_cpus_s", p.simulated_equal_cpus_s},
                            std::pair{other_calibration_key, p.simulated_other_calibration_s}})
    if (value > 0) o << ", \"" << key << "\": " << format_number(value, 8);
  o << ", \"transfer_bytes\": " << p.transfer_bytes << ", \"rounds_s\": [";
  for (size_t r = 0; r < p.rounds_s.size(); ++r) o << (r ? ", " : "") << format_number(p.rounds_s[r], 8);
  o << "]}";
}

}  // namespace

std::string FidelityReport::to_json() const {
  std::ostringstream o;
  write_header(o, *this);
  write_steps_and_retakes(o, *this);
  o << ",\n  \"placements\": " << points.size() << ",\n  \"failed\": " << failed
    << ",\n  \"spearman\": " << number_or_null(spearman) << ",\n  \"kendall_tau_b\": " << number_or_null(kendall)
    << ",\n  \"mape\": " << format_number(mape) << ",\n  \"retest_spearman\": " << number_or_null(retest_spearman);
  if (!std::isnan(split_half_spearman)) o << ",\n  \"split_half_spearman\": " << format_number(split_half_spearman);
  o << ",\n  \"points\": [\n";
  for (size_t i = 0; i < points.size(); ++i) {
    write_point(o, points[i], calibration_text(other_calibration()).key);
    o << (i + 1 < points.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
  return o.str();
}

namespace {

// The copy cost fitted beyond the link fit, and the figures without it.
void markdown_copies(std::ostringstream& o, const FidelityReport& r) {
  if (!(r.copy_s_per_byte > 0 || r.cross_copy_s > 0 || r.cross_copy_s_per_byte > 0)) return;
  if (r.copy_s_per_byte > 0 || r.cross_copy_s <= 0)
    o << "Copies between " << (r.copy_s_per_byte > 0 ? "CPU devices" : "a CPU device and a GPU") << ": "
      << format_number((r.copy_s_per_byte > 0 ? r.copy_s_per_byte : r.cross_copy_s_per_byte) * 1e9, 3)
      << " ms per MB (10^6 bytes)";
  else
    o << "Copies between a CPU device and a GPU: " << format_number(r.cross_copy_s * 1e6, 3) << " us per copy";
  o << " beyond the link fit, fitted on the profile's round-robin step (that placement is left out of the table).";
  if (!std::isnan(r.mape_unfitted))
    o << " Without it, on the same measurements: Spearman " << rank_correlation_text(r.spearman_unfitted) << ", MAPE "
      << format_number(100 * r.mape_unfitted, 3) << "%.";
  if (!std::isnan(r.mape_per_copy))
    o << " Fitted per copy instead (" << format_number(r.copy_s_per_copy * 1e6, 3)
      << " us a copy, whatever its size), on the same measurements: Spearman "
      << rank_correlation_text(r.spearman_per_copy) << ", MAPE " << format_number(100 * r.mape_per_copy, 3) << "%.";
  o << "\n\n";
}

// Each CPU device's own step, and the cross-core round trips the protocol probed.
void markdown_devices(std::ostringstream& o, const FidelityReport& r) {
  if (!r.cpu_steps.empty()) {
    o << "Each CPU device alone (the profile's step of the graph on it, the devices interleaved): ";
    for (size_t k = 0; k < r.cpu_steps.size(); ++k)
      o << (k ? ", " : "") << r.cpu_steps[k].device << " " << format_number(r.cpu_steps[k].step_s * 1e3, 4) << " ms (x"
        << format_number(r.cpu_steps[k].step_s / r.cpu_steps.front().step_s, 3) << ")";
    o << "; the simulator scales each device's ops so that all of them on it simulate at its step.";
    if (!std::isnan(r.mape_equal_cpus))
      o << " Without these steps (the ops as timed, the devices taken as equally fast), on the same measurements: "
           "Spearman "
        << rank_correlation_text(r.spearman_equal_cpus) << ", MAPE " << format_number(100 * r.mape_equal_cpus, 3)
        << "%.";
    o << "\n\n";
  }
  if (r.core_rtt_profiled_s.empty() && r.core_rtt_measured_s.empty()) return;
  auto ns = [](const std::vector<double>& v) {
    std::string s;
    for (double x : v) s += (s.empty() ? "" : ", ") + format_number(x * 1e9, 3);
    return s.empty() ? std::string("-") : s + " ns";
  };
  o << "Cross-core round trip (the protocol's probe; copies between CPU devices cost more while it is high): "
    << ns(r.core_rtt_profiled_s) << " while each round's profile measured its mixed step, " << ns(r.core_rtt_measured_s)
    << " (medians) while each round's placements were measured.\n\n";
}

void markdown_retakes(std::ostringstream& o, const FidelityReport& r) {
  for (const FidelityRetake& t : r.retakes) {
    o << "Round " << t.round + 1 << " was measured again (profile and placements): its probe read "
      << format_number(t.probe_s * 1e9, 3) << " ns, more than " << format_number(r.spell_ratio, 3)
      << "x the quietest round's " << format_number(t.quiet_s * 1e9, 3)
      << " ns (a slow spell of the machine). The retake ";
    if (t.retake_probe_s <= 0)
      o << "was not probed; the round was kept.";
    else
      o << "read " << format_number(t.retake_probe_s * 1e9, 3) << " ns"
        << (t.kept ? " and replaced the round." : "; the round was kept, its reading being the lower.");
    o << "\n\n";
  }
}

// The goal, the other calibration, and the measurement against itself.
void markdown_verdicts(std::ostringstream& o, const FidelityReport& r) {
  // An undefined correlation (all values tied) meets no goal, whatever the MAPE.
  o << "Goal: Spearman >= 0.9 and MAPE <= 10%: "
    << (std::isnan(r.spearman)                ? "not met (undefined)"
        : r.spearman >= 0.9 && r.mape <= 0.10 ? "met"
                                              : "NOT met")
    << ".\n\n";
  if (!std::isnan(r.mape_other_calibration))
    o << calibration_text(r.calibration).profile << "; calibrated on "
      << calibration_text(r.other_calibration()).instead << " instead, on the same measurements: Spearman "
      << rank_correlation_text(r.spearman_other_calibration) << ", MAPE "
      << format_number(100 * r.mape_other_calibration, 3) << "%.\n\n";
  if (r.min_rounds() >= 2 && r.points.size() >= 2)
    o << "The measurement against itself (round 1 vs round 2 of the same placements): Spearman "
      << rank_correlation_text(r.retest_spearman)
      << ". A simulator cannot rank placements more reliably than the measurement does.\n\n";
  if (r.min_rounds() >= 4 && r.points.size() >= 2)
    o << "The measurement against itself by halves (each placement's mean round median over the first half of the "
         "rounds against the same over the rest; each half a measurement of its own, the pooled one of all rounds at "
         "least as reliable): Spearman "
      << rank_correlation_text(r.split_half_spearman) << ".\n\n";
}

}  // namespace

std::string FidelityReport::to_markdown() const {
  std::ostringstream o;
  o << "# Simulator fidelity: " << graph << " on " << devices << "\n\n";
  o << "Command: `" << command << "`\n\n";
  o << "Host: " << host << "\n\n";
  if (!selection.empty()) o << "Placements: " << selection << "\n\n";
  if (pipeline)
    o << "Objective: pipeline, " << pipeline_spec_text(*pipeline)
      << ": each placement is judged as one mini-batch (the unrolled graph, weight update included), measured and "
         "simulated; every time is one mini-batch's.\n\n";
  o << "| graph | ops | placements | failed | Spearman | Kendall tau-b | MAPE | ops calibrated | executor overhead |\n";
  o << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  o << "| " << graph << " | " << ops << " | " << points.size() << " | " << failed << " | "
    << rank_correlation_text(spearman) << " | " << rank_correlation_text(kendall) << " | "
    << format_number(100 * mape, 3) << "% | " << format_number(100 * calibrated_fraction, 3) << "% | "
    << format_number(per_op_overhead_s * 1e6, 3) << " us/op |\n\n";
  markdown_copies(o, *this);
  markdown_devices(o, *this);
  markdown_retakes(o, *this);
  markdown_verdicts(o, *this);
  // Each interval at the level it reaches (95%, or less with few steps: [min, max] of 1 step covers 0%).
  o << "| # | kind | measured s (median) | interval (level) | steps | simulated s | error | transfer MB "
       "|\n|---:|---|---:|---|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    o << "| " << i << " | " << p.kind << " | " << format_number(p.measured_s, 4) << " | ["
      << format_number(p.ci_low_s, 4) << ", " << format_number(p.ci_high_s, 4) << "] ("
      << interval_level_label(p.ci_level) << ") | " << p.steps << " | " << format_number(p.simulated_s, 4) << " | "
      << format_number(100 * (p.simulated_s - p.measured_s) / p.measured_s, 3) << "% | "
      << format_number(p.transfer_bytes / 1e6, 4) << " |\n";
  }
  return o.str();
}

namespace {

// The plot's frame (pixels) and its log-scale axes, the same on x (measured) and y (simulated).
struct SvgFrame {
  static constexpr double W = 560, H = 560, L = 80, R = 20, T = 66, B = 70;
  double llo = 0, lhi = 0;  // log10 of the axis range
  double x(double v) const { return L + (std::log10(v) - llo) / (lhi - llo) * (W - L - R); }
  double y(double v) const { return H - B - (std::log10(v) - llo) / (lhi - llo) * (H - T - B); }
};

// The axis range: every positive time, padded in log space.
SvgFrame svg_frame(const std::vector<FidelityPoint>& points) {
  double lo = 1e300, hi = 0;
  for (const auto& p : points)
    for (double v : {p.measured_s, p.simulated_s})
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(hi > 0)) lo = 1e-3, hi = 1.0;
  SvgFrame f;
  f.llo = std::log10(lo);
  f.lhi = std::log10(hi);
  const double pad = std::max(0.05, 0.08 * (f.lhi - f.llo));
  f.llo -= pad;
  f.lhi += pad;
  return f;
}

// Ticks at 1, 2, 5 x 10^e; finer steps when the data span less than a decade; at most 8 labels.
std::vector<double> svg_ticks(const SvgFrame& f) {
  std::vector<double> fine;
  for (int k = 10; k < 100; ++k) fine.push_back(k / 10.0);
  std::vector<double> ticks;
  for (const std::vector<double>& steps :
       {std::vector<double>{1, 2, 5}, std::vector<double>{1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8}, fine}) {
    ticks.clear();
    for (int e = static_cast<int>(std::floor(f.llo)); e <= static_cast<int>(std::ceil(f.lhi)); ++e)
      for (double m : steps) {
        const double v = m * std::pow(10.0, e);
        if (std::log10(v) >= f.llo && std::log10(v) <= f.lhi) ticks.push_back(v);
      }
    if (ticks.size() >= 3) break;
  }
  if (ticks.size() > 8) {  // thin the finest set to at most 8 labels
    const size_t every = (ticks.size() + 7) / 8;
    std::vector<double> thinned;
    for (size_t i = 0; i < ticks.size(); i += every) thinned.push_back(ticks[i]);
    ticks.swap(thinned);
  }
  return ticks;
}

// The frame, the grid lines and labels at the ticks, y = x and the +-10% band.
void svg_axes(std::ostream& o, const SvgFrame& f) {
  const double W = SvgFrame::W, H = SvgFrame::H, L = SvgFrame::L, R = SvgFrame::R, T = SvgFrame::T, B = SvgFrame::B;
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (double v : svg_ticks(f)) {
    o << "<line x1=\"" << f.x(v) << "\" y1=\"" << T << "\" x2=\"" << f.x(v) << "\" y2=\"" << H - B
      << "\" stroke=\"#ddd\"/>\n";
    o << "<line x1=\"" << L << "\" y1=\"" << f.y(v) << "\" x2=\"" << W - R << "\" y2=\"" << f.y(v)
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << f.x(v) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << format_number(v, 3)
      << "</text>\n";
    o << "<text x=\"" << L - 6 << "\" y=\"" << f.y(v) + 4 << "\" text-anchor=\"end\">" << format_number(v, 3)
      << "</text>\n";
  }
  const double a = std::pow(10.0, f.llo), b = std::pow(10.0, f.lhi);
  o << "<line x1=\"" << f.x(a) << "\" y1=\"" << f.y(a) << "\" x2=\"" << f.x(b) << "\" y2=\"" << f.y(b)
    << "\" stroke=\"gray\" stroke-dasharray=\"4,3\"/>\n";
  for (double m : {0.9, 1.1})
    o << "<line x1=\"" << f.x(a) << "\" y1=\"" << f.y(a * m) << "\" x2=\"" << f.x(b) << "\" y2=\"" << f.y(b * m)
      << "\" stroke=\"#bbb\" stroke-dasharray=\"1,3\"/>\n";
}

// One dot per point, colored by kind, then the legend.
void svg_points(std::ostream& o, const SvgFrame& f, const std::vector<FidelityPoint>& points) {
  const double L = SvgFrame::L, T = SvgFrame::T;
  const std::vector<std::pair<std::string, std::string>> colors = {{"single", "#d62728"}, {"round_robin", "#9467bd"},
                                                                   {"split", "#1f77b4"},  {"blocks", "#17becf"},
                                                                   {"random", "#ff7f0e"}, {"perturbed", "#2ca02c"}};
  for (const auto& p : points) {
    if (p.measured_s <= 0 || p.simulated_s <= 0) continue;
    std::string color = "black";
    for (const auto& [k, c] : colors)
      if (k == p.kind) color = c;
    o << "<circle cx=\"" << f.x(p.measured_s) << "\" cy=\"" << f.y(p.simulated_s) << "\" r=\"4\" fill=\"" << color
      << "\" fill-opacity=\"0.8\"><title>" << xml_escape(p.kind) << ": measured " << format_number(p.measured_s, 4)
      << " s, simulated " << format_number(p.simulated_s, 4) << " s</title></circle>\n";
  }
  double ly = T + 14;
  for (const auto& [k, c] : colors) {
    o << "<circle cx=\"" << L + 12 << "\" cy=\"" << ly - 4 << "\" r=\"4\" fill=\"" << c << "\"/><text x=\"" << L + 22
      << "\" y=\"" << ly << "\">" << k << "</text>\n";
    ly += 16;
  }
}

}  // namespace

std::string FidelityReport::to_svg() const {
  const double W = SvgFrame::W, H = SvgFrame::H, L = SvgFrame::L, R = SvgFrame::R, T = SvgFrame::T, B = SvgFrame::B;
  const SvgFrame frame = svg_frame(points);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" << xml_escape(graph) << " on "
    << xml_escape(devices) << ": simulated vs measured " << time_unit(pipeline) << " time"
    << (pipeline ? " (pipeline, " + pipeline_spec_text(*pipeline) + ")" : "") << "</text>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"38\" text-anchor=\"middle\">Spearman " << rank_correlation_text(spearman)
    << ", Kendall " << rank_correlation_text(kendall) << ", MAPE " << format_number(100 * mape, 3)
    << "%, n = " << points.size() << "</text>\n";
  if (min_rounds() >= 2 && points.size() >= 2)
    o << "<text x=\"" << W / 2
      << "\" y=\"54\" text-anchor=\"middle\" fill=\"#555\">measured vs re-measured (round 1 vs 2): Spearman "
      << rank_correlation_text(retest_spearman)
      << (min_rounds() < 4 ? std::string() : "; by halves of the rounds " + rank_correlation_text(split_half_spearman))
      << "</text>\n";
  svg_axes(o, frame);
  svg_points(o, frame, points);
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 25 << "\" text-anchor=\"middle\">measured "
    << time_unit(pipeline) << " time (s)</text>\n";
  o << "<text transform=\"translate(20," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">simulated "
    << time_unit(pipeline) << " time (s)</text>\n";
  o << "</svg>\n";
  return o.str();
}

}  // namespace placer
