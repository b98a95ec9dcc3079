// Step results and timelines: status names and Chrome trace-event output.
#include "placer/graphs/measurement.h"

#include <algorithm>
#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <map>
#include <sstream>

#include "placer/graphs/error.h"
#include "placer/graphs/files.h"
#include "placer/graphs/stats.h"

namespace placer {

const char* step_status_name(StepStatus status) {
  switch (status) {
    case StepStatus::Ok: return "ok";
    case StepStatus::Oom: return "oom";
    case StepStatus::Timeout: return "timeout";
    case StepStatus::Error: return "error";
  }
  return "error";
}

std::vector<double> StepResult::core_rtt_readings() const {
  std::vector<double> read;
  for (double v : core_rtt_s)
    if (v > 0) read.push_back(v);
  return read;
}

double StepResult::core_rtt_median_s() const { return quantile(core_rtt_readings(), 0.5); }

std::optional<PairedTest> paired_by_round(const StepResult& a, const StepResult& b) {
  if (!a.ok() || !b.ok()) return std::nullopt;
  const auto fresh = [](const StepResult& r) {
    const int64_t from = std::clamp<int64_t>(r.prior_samples, 0, static_cast<int64_t>(r.samples_s.size()));
    return std::vector<double>(r.samples_s.begin() + from, r.samples_s.end());
  };
  std::vector<double> x = fresh(a), y = fresh(b);
  const size_t n = std::min(x.size(), y.size());
  if (static_cast<int64_t>(n) < kMinPairedRounds) return std::nullopt;
  x.resize(n);
  y.resize(n);
  return paired_rounds(x, y);
}

std::vector<double> core_rtt_readings(const std::vector<StepResult>& results) {
  std::vector<double> all;
  for (const StepResult& r : results) {
    const std::vector<double> read = r.core_rtt_readings();
    all.insert(all.end(), read.begin(), read.end());
  }
  return all;
}

CoreRttRange core_rtt_range(const std::vector<double>& readings) {
  CoreRttRange r;
  if (readings.empty()) return r;
  const auto [low, high] = std::minmax_element(readings.begin(), readings.end());
  r.median_s = quantile(readings, 0.5);
  r.low_s = *low;
  r.high_s = *high;
  return r;
}

double quietest_reading(const std::vector<double>& probe_s) {
  double quiet = 0;
  for (double v : probe_s)
    if (v > 0 && (quiet == 0 || v < quiet)) quiet = v;
  return quiet;
}

std::vector<size_t> rounds_in_a_spell(const std::vector<double>& probe_s, double ratio) {
  if (!(ratio >= 1)) throw InputError("rounds_in_a_spell: ratio must be >= 1");
  const double quiet = quietest_reading(probe_s);
  std::vector<size_t> spell;
  if (std::count_if(probe_s.begin(), probe_s.end(), [](double v) { return v > 0; }) < 2) return spell;
  for (size_t i = 0; i < probe_s.size(); ++i)
    if (probe_s[i] > ratio * quiet) spell.push_back(i);
  std::stable_sort(spell.begin(), spell.end(), [&](size_t a, size_t b) { return probe_s[a] > probe_s[b]; });
  return spell;
}

void StepResult::summarize(double confidence) {
  if (samples_s.empty()) return;
  const MedianInterval m = median_interval(samples_s, confidence);
  step_s = m.median;
  iqr_s = quantile(samples_s, 0.75) - quantile(samples_s, 0.25);
  ci_low_s = m.low;
  ci_high_s = m.high;
  ci_level = m.level;
}

namespace {

using cereal::make_nvp;

// One trace event. Complete events ("X") carry ts/dur in microseconds;
// metadata events ("M") name and order the lanes.
struct TraceEvent {
  std::string name;
  std::string cat;
  std::string ph;
  double ts = 0.0;
  double dur = 0.0;
  int tid = 0;
  std::string label;    // metadata: the lane name
  int sort_index = -1;  // metadata: thread_sort_index

  template <class A>
  void save(A& ar) const {
    ar(make_nvp("name", name), make_nvp("ph", ph), make_nvp("pid", 0), make_nvp("tid", tid));
    if (ph == "X") {
      ar(make_nvp("cat", cat), make_nvp("ts", ts), make_nvp("dur", dur));
    } else if (sort_index >= 0) {
      ar(make_nvp("args", Args{"sort_index", std::to_string(sort_index), true}));
    } else {
      ar(make_nvp("args", Args{"name", label, false}));
    }
  }

  struct Args {
    std::string key, value;
    bool numeric;
    template <class A>
    void save(A& ar) const {
      if (numeric)
        ar(make_nvp(key, std::stoi(value)));
      else
        ar(make_nvp(key, value));
    }
  };
};

// The trace's otherData: the measurement the traced step belongs to.
struct TraceSummary {
  const StepResult* r = nullptr;
  template <class A>
  void save(A& ar) const {
    ar(make_nvp("step_s", r->step_s), make_nvp("ci_low_s", r->ci_low_s), make_nvp("ci_high_s", r->ci_high_s),
       make_nvp("ci_level", r->ci_level), make_nvp("steps", static_cast<int64_t>(r->samples_s.size())),
       make_nvp("stop", r->stop));
  }
};

}  // namespace

void write_chrome_trace(const std::vector<TimelineEvent>& events, const std::string& path, const StepResult* measured) {
  // Device lanes first, then transfer channels ("a->b"), each in order of first appearance.
  std::vector<std::string> lanes;
  std::map<std::string, int> tid_of;
  for (int pass = 0; pass < 2; ++pass)
    for (const TimelineEvent& e : events) {
      const bool transfer = e.lane.find("->") != std::string::npos;
      if (transfer != (pass == 1) || tid_of.count(e.lane)) continue;
      tid_of[e.lane] = static_cast<int>(lanes.size());
      lanes.push_back(e.lane);
    }
  std::vector<TraceEvent> trace;
  trace.reserve(events.size() + 2 * lanes.size());
  for (size_t k = 0; k < lanes.size(); ++k) {
    TraceEvent name;
    name.name = "thread_name";
    name.ph = "M";
    name.tid = static_cast<int>(k);
    name.label = lanes[k];
    trace.push_back(name);
    TraceEvent order = name;
    order.name = "thread_sort_index";
    order.sort_index = static_cast<int>(k);
    trace.push_back(order);
  }
  for (const TimelineEvent& e : events) {
    TraceEvent t;
    t.name = e.name;
    t.cat = e.category;
    t.ph = "X";
    t.ts = e.start_s * 1e6;
    t.dur = e.duration_s * 1e6;
    t.tid = tid_of.at(e.lane);
    trace.push_back(std::move(t));
  }
  std::ostringstream out;
  {
    cereal::JSONOutputArchive ar(out, cereal::JSONOutputArchive::Options::NoIndent());
    ar(make_nvp("displayTimeUnit", std::string("ms")), make_nvp("traceEvents", trace));
    if (measured) ar(make_nvp("otherData", TraceSummary{measured}));
  }
  out << '\n';
  write_file_atomic(path, out.str());
}

}  // namespace placer
