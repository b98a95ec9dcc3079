// The registry of algorithmic placers, chosen by name.
#include <functional>
#include <set>
#include <utility>

#include "placer/env/environment.h"
#include "placer/graphs/error.h"
#include "placer/graphs/fields.h"
#include "placers_common.h"

namespace placer {

PlaceContext PlaceContext::on(Environment& env, uint64_t seed) {
  PlaceContext ctx;
  ctx.graph = &env.graph();
  ctx.cluster = &env.cluster();
  ctx.env = &env;
  ctx.seed = seed;
  return ctx;
}
namespace {

using Factory = std::unique_ptr<Placer> (*)();

const std::vector<std::pair<std::string, Factory>>& factories() {
  static const std::vector<std::pair<std::string, Factory>> list = {
      {"single", make_single},
      {"round_robin", make_round_robin},
      {"random", make_random},
      {"expert", make_expert},
      {"mincut", make_mincut},
      {"m_topo", make_m_topo},
      {"m_etf", make_m_etf},
      {"m_sct", make_m_sct},
      {"heft", make_heft},
      {"offload_updates", make_offload_updates},
      {"dp", make_dp},
      {"ilp", make_ilp},
      {"local_search", make_local_search},
  };
  return list;
}

}  // namespace

std::vector<std::string> placer_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

std::unique_ptr<Placer> make_placer(const std::string& name) {
  for (const auto& [n, factory] : factories())
    if (n == name) return factory();
  if (name == "guided_search") return make_guided_search();  // by name only (issue 25's experiment)
  std::vector<std::string> known;
  for (const auto& [n, factory] : factories()) known.push_back(n);
  throw InputError(unknown_name("placement method", name, known));
}

void check_method_options(const std::vector<std::string>& methods, const std::map<std::string, std::string>& options) {
  std::set<std::string> read;
  std::string takes;
  for (const std::string& method : methods) {
    const std::vector<std::string> keys = make_placer(method)->option_keys();
    read.insert(keys.begin(), keys.end());
    std::string list;
    for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + k;
    takes += (takes.empty() ? "" : "; ") + method + (keys.empty() ? " takes none" : " takes " + list);
  }
  for (const auto& [key, value] : options)
    if (!read.count(key))
      throw InputError("--option " + key + ": " +
                       (methods.size() == 1 ? "not an option of " + methods[0] : "an option of none of the methods") +
                       " (" + takes + ")");
}

}  // namespace placer
