// The builder registry: builds a model's graph by name.
#include "placer/frontends/builders.h"

#include "builder_util.h"
#include "placer/graphs/error.h"
#include "placer/graphs/training.h"
#include "placer/graphs/validate.h"

namespace placer {

namespace {

struct Entry {
  const char* name;
  detail::OptionTable (*options)();
  Graph (*forward)(const detail::Options&);
  detail::OpCount (*count)(const detail::Options&);
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries{
      {"rnnlm", detail::rnnlm_options, detail::build_rnnlm, detail::rnnlm_op_count},
      {"nmt", detail::nmt_options, detail::build_nmt, detail::nmt_op_count},
      {"inception_v3", detail::inception_v3_options, detail::build_inception_v3, detail::inception_v3_op_count},
      {"transformer", detail::transformer_options, detail::build_transformer, detail::transformer_op_count},
      {"resnet", detail::resnet_options, detail::build_resnet, detail::resnet_op_count},
      {"mlp", detail::mlp_options, detail::build_mlp, detail::mlp_op_count},
  };
  return entries;
}

const Entry& find_entry(const std::string& name) {
  for (const auto& e : registry()) {
    if (name == e.name) return e;
  }
  std::string known;
  for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw InputError(detail::concat("unknown builder '", name, "' (builders: ", known, ")"));
}

}  // namespace

int64_t BuilderOptions::get(const std::string& key, int64_t fallback) const {
  auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

std::vector<std::string> builder_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.emplace_back(e.name);
  return names;
}

std::map<std::string, int64_t> builder_defaults(const std::string& name) {
  std::map<std::string, int64_t> out;
  for (const auto& [key, s] : find_entry(name).options()) out[key] = s.fallback;
  return out;
}

namespace detail {

OpCount count_forward_ops(const std::string& name, const std::map<std::string, int64_t>& values) {
  const Entry& entry = find_entry(name);
  return entry.count(Options(name, entry.options(), values));
}

}  // namespace detail

Graph build_graph(const std::string& name, const BuilderOptions& options) {
  const Entry& entry = find_entry(name);
  detail::Options resolved(name, entry.options(), options.values);
  const detail::OpCount count = entry.count(resolved);
  if (count.forward_ops > detail::kMaxBuilderForwardOps) {
    throw InputError(detail::concat("builder ", name, ": ", count.sized_by, " make ", count.forward_ops,
                                    " forward ops (about twice that with the training step), over the limit of ",
                                    detail::kMaxBuilderForwardOps, "; lower ", count.lower));
  }
  Graph forward = entry.forward(resolved);
  PLACER_CHECK(forward.size() == count.forward_ops, "builder ", name, " built ", forward.size(),
               " forward ops, counted ", count.forward_ops);
  for (const Op& op : forward.ops()) {
    for (const TensorSpec& spec : op.outputs) {
      if (spec.bytes() > kMaxTensorBytes) {
        throw InputError(detail::concat("builder ", name, ": op ", op.name, " would produce a tensor of ", spec.bytes(),
                                        " bytes (limit ", kMaxTensorBytes, "); use smaller options"));
      }
    }
  }
  forward.name = name;
  forward.attrs["builder"] = name;
  for (const auto& [key, value] : resolved.values()) forward.attrs[key] = std::to_string(value);
  if (options.forward_only) return forward;
  return make_training_graph(forward);
}

}  // namespace placer
