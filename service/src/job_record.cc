#include "job_record.h"

#include <rapidjson/document.h>

#include <cmath>

#include "placer/graphs/files.h"
#include "placer/graphs/json_reader.h"

namespace placer::service {
namespace {

std::optional<JobState> parse_state(const std::string& s) {
  for (JobState st : {JobState::Queued, JobState::Running, JobState::Done, JobState::Failed, JobState::Cancelled})
    if (s == job_state_name(st)) return st;
  return std::nullopt;
}

// A job record as persist() wrote it: a missing or mistyped field reads as "", 0 or false.
class RecordFields {
 public:
  explicit RecordFields(const rapidjson::Value& v) : v_(v) {}
  const rapidjson::Value* member(const char* k) const {
    auto it = v_.FindMember(k);
    return it != v_.MemberEnd() ? &it->value : nullptr;
  }
  std::string s(const char* k) const {
    auto* v = member(k);
    return v && v->IsString() ? v->GetString() : "";
  }
  double n(const char* k) const {
    auto* v = member(k);
    return v && v->IsNumber() ? v->GetDouble() : 0.0;
  }
  int64_t i(const char* k) const {  // a count beyond int64's range reads as 0, as a mistyped one does
    const double x = n(k);
    return std::abs(x) < 9e18 ? static_cast<int64_t>(x) : 0;
  }
  bool b(const char* k) const {
    auto* v = member(k);
    return v && v->IsBool() && v->GetBool();
  }

 private:
  const rapidjson::Value& v_;
};

// Why a record cannot be read ("" when it can): not a JSON object, or not of this server's format.
std::string read_record(const std::filesystem::path& path, rapidjson::Document& d) {
  try {
    std::string text = read_file(path.string());
    d.Parse(text.c_str(), text.size());
  } catch (const std::exception& e) {
    return e.what();
  }
  if (d.HasParseError() || !d.IsObject()) return "not a JSON object (cut short?)";
  const auto member = [&](const char* key) {
    const auto it = d.FindMember(key);
    return JsonNode(it == d.MemberEnd() ? nullptr : &it->value);
  };
  if (member("format").integer() != 1)
    return "format: expected 1 (this server's records), got " + member("format").describe();
  if (!parse_state(member("state").string().value_or("")))
    return "state: expected queued, running, done, failed or cancelled, got " + member("state").describe();
  return "";
}

// The objective (a record of a server before it: a step).
void read_objective(const RecordFields& r, Request& request) {
  if (const auto objective = parse_objective(r.s("objective"))) request.objective = *objective;
  if (r.i("microbatches") > 0) request.pipeline.microbatches = static_cast<int>(r.i("microbatches"));
  if (const auto schedule = parse_schedule(r.s("schedule"))) request.pipeline.schedule = *schedule;
}

void read_search_fields(const RecordFields& r, Job& job) {
  job.state = *parse_state(r.s("state"));  // read_record checked it
  job.graph_name = r.s("graph");
  job.cluster_name = r.s("cluster");
  read_objective(r, job.request);
  job.created_unix = r.n("created_unix");
  job.started_unix = r.n("started_unix");
  job.finished_unix = r.n("finished_unix");
  job.samples = r.i("samples");
  job.request.budget.samples = r.i("budget_samples");
  job.request.budget.seconds = r.n("budget_seconds");
  job.elapsed_s = r.n("elapsed_s");
  job.rounds = r.i("rounds");
  job.best_method = r.s("best_method");
  job.best_step_s = r.n("best_step_s");
  job.lower_bound_s = r.n("lower_bound_s");
  job.start_method = r.s("start_method");
  job.start_step_s = r.n("start_step_s");
  job.error = r.s("error");
  const rapidjson::Value* bl = r.member("baselines");
  if (bl && bl->IsArray())
    for (const auto& b : bl->GetArray())
      if (b.IsObject() && b.HasMember("method") && b["method"].IsString() && b.HasMember("step_s") &&
          b["step_s"].IsNumber())
        job.baselines.emplace_back(b["method"].GetString(), b["step_s"].GetDouble());
}

// A final-table row's paired test against the policy, when the record's figures are consistent.
std::optional<PairedTest> read_paired(const RecordFields& f) {
  const rapidjson::Value* pv = f.member("paired_vs_policy");
  if (!pv || !pv->IsObject()) return std::nullopt;
  const RecordFields q(*pv);
  PairedTest t;
  t.pairs = q.i("rounds");
  t.ratio = q.n("ratio");
  t.ratio_low = q.n("ratio_low");
  t.ratio_high = q.n("ratio_high");
  t.p_value = q.n("p_value");
  if (t.pairs >= 0 && 0 < t.ratio_low && t.ratio_low <= t.ratio && t.ratio <= t.ratio_high && 0 <= t.p_value &&
      t.p_value <= 1)
    return t;
  return std::nullopt;  // the record's pairing is dropped, not trusted
}

// The final table: its rows (those with a figure) and the cross-core probe beside them.
void read_final_table(const RecordFields& table, Job& job) {
  job.table = table.s("rows_made");
  if (const rapidjson::Value* p = table.member("core_rtt_s");
      p && p->IsArray() && p->Size() == 3 && (*p)[0].IsNumber() && (*p)[1].IsNumber() && (*p)[2].IsNumber()) {
    const double med = (*p)[0].GetDouble(), low = (*p)[1].GetDouble(), high = (*p)[2].GetDouble();
    if (0 < low && low <= med && med <= high && high < 1) {  // else the record's probe is dropped, not trusted
      job.table_core_rtt = {med, low, high};
    }
  }
  const rapidjson::Value* rows = table.member("rows");
  if (!rows || !rows->IsArray()) return;
  for (const auto& v : rows->GetArray()) {
    if (!v.IsObject()) continue;
    const RecordFields f(v);
    if (f.s("method").empty() || !(f.n("step_s") > 0)) continue;  // a row without its figure means nothing
    const double p = f.member("p_vs_policy") && f.member("p_vs_policy")->IsNumber() ? f.n("p_vs_policy") : -1;
    TableRow row{f.s("method"), f.s("role"), f.n("step_s"), f.n("ci_low_s"), f.n("ci_high_s"), p, f.s("verdict")};
    row.paired = read_paired(f);
    job.table_rows.push_back(std::move(row));
  }
}

// A record's {"device": {op: device}} (its op and device names are checked when the placement is used).
NamedPlacement read_placement(const rapidjson::Value* v, const std::string& graph) {
  NamedPlacement named;
  named.graph = graph;
  if (!v || !v->IsObject()) return named;
  auto dev = v->FindMember("device");
  if (dev != v->MemberEnd() && dev->value.IsObject())
    for (auto it = dev->value.MemberBegin(); it != dev->value.MemberEnd(); ++it)
      if (it->value.IsString()) named.device[it->name.GetString()] = it->value.GetString();
  return named;
}

// The last best with a placement (Job::last_placed); none where the record's has no time or no placement.
std::optional<Job::Placed> read_last_placed(const RecordFields& r, const std::string& graph) {
  const rapidjson::Value* v = r.member("last_placed");
  if (!v || !v->IsObject()) return std::nullopt;
  const RecordFields f(*v);
  Job::Placed p{f.n("step_s"), f.s("method"), f.s("found_by"), read_placement(f.member("placement"), graph),
                f.b("measured")};
  if (!(p.step_s > 0) || !std::isfinite(p.step_s) || p.placement.device.empty()) return std::nullopt;
  return p;
}

void read_learned_fields(const RecordFields& r, Job& job) {
  job.train_json = r.s("train_config");
  job.policy_type = r.s("policy_type");
  job.reward_mode = r.s("reward_mode");
  job.save_as = r.s("save_as");
  job.saved_as = r.s("saved_as");
  job.updates = r.i("updates");
  job.budget_updates = r.i("budget_updates");
  job.restarts = r.i("restarts");
  job.best_measured = r.b("best_measured");
  job.best_simulated_s = r.n("best_simulated_s");
  job.best_found_by = r.s("best_found_by");
  job.policy_best_step_s = r.n("policy_best_step_s");
  job.last_placed = read_last_placed(r, job.graph_name);
  const rapidjson::Value* t = r.member("final_table");
  if (t && t->IsObject()) read_final_table(RecordFields(*t), job);
}

void read_best_placement(const RecordFields& r, Job& job) {
  job.best_placement = read_placement(r.member("best_placement"), job.graph_name);
}

}  // namespace

std::shared_ptr<Job> read_job_record(const std::filesystem::path& path, const std::string& id,
                                     const std::string& jobs_dir, std::string* state_text, std::string* why) {
  rapidjson::Document d;
  *why = read_record(path, d);
  if (!why->empty()) return nullptr;
  RecordFields r(d);
  auto job = std::make_shared<Job>();
  job->id = id;
  read_search_fields(r, *job);
  job->learned = r.b("learned");
  if (job->learned) {
    read_learned_fields(r, *job);
    job->dir = (std::filesystem::path(jobs_dir) / id).string();
  }
  read_best_placement(r, *job);
  job->cancelled_by_user = r.b("cancel_requested");
  *state_text = r.s("state");
  return job;
}

}  // namespace placer::service
