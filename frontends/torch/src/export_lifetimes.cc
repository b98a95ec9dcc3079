// torch.export importer: how long the values nodes make are held. Each node's outputs stay in values_ until the
// last node that reads them has run (the program's outputs and the placeholders: to the end), and the bytes of
// those held are capped (ImportOptions::max_live_bytes): eight aten.ones([2^29]) nodes, none read again, held
// 16 GiB at once before; ones read at the end are refused by the cap, before the kernel allocates.
#include <unordered_set>

#include "export_importer.h"
#include "output_size.h"

namespace placer::detail {

namespace {

// Calls `add` with every value name in `v` ("name" of a tensor argument, "as_name" of a symbolic one), at any
// depth; iterative, as a crafted program nests arrays a million deep.
template <class Add>
void value_names(const rj::Value& v, const Add& add) {
  std::vector<const rj::Value*> todo = {&v};
  while (!todo.empty()) {
    const rj::Value* at = todo.back();
    todo.pop_back();
    if (at->IsArray()) {
      for (const rj::Value& e : at->GetArray()) todo.push_back(&e);
    } else if (at->IsObject()) {
      for (auto m = at->MemberBegin(); m != at->MemberEnd(); ++m) {
        const std::string key(m->name.GetString(), m->name.GetStringLength());
        if ((key == "name" || key == "as_name") && m->value.IsString())
          add(std::string(m->value.GetString(), m->value.GetStringLength()));
        else
          todo.push_back(&m->value);
      }
    }
  }
}

template <class Each>
void each_tensor(const c10::IValue& v, const Each& each) {
  if (v.isTensor()) each(v.toTensor());
  if (v.isTensorList())
    for (const at::Tensor& t : v.toTensorVector()) each(t);
}

// The bytes of the storages the values `made` hold, each storage once, a placeholder's not at all.
double held_bytes(const std::set<std::string>& made, const std::unordered_map<std::string, Val>& values,
                  const std::unordered_map<const c10::StorageImpl*, c10::Storage>& placeholder_storage) {
  std::unordered_set<const c10::StorageImpl*> seen;
  double bytes = 0;
  for (const std::string& n : made) {
    const auto v = values.find(n);
    if (v == values.end()) continue;
    each_tensor(v->second.value, [&](const at::Tensor& t) {
      if (!t.defined() || !t.has_storage()) return;
      const c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
      if (placeholder_storage.count(s) || !seen.insert(s).second) return;
      bytes += static_cast<double>(t.storage().nbytes());
    });
  }
  return bytes;
}

}  // namespace

void ExportImporter::plan_lifetimes() {
  planned_ = true;
  for (const auto& [name, v] : values_) {
    kept_.insert(name);
    each_tensor(v.value, [&](const at::Tensor& t) {
      if (t.defined() && t.has_storage()) placeholder_storage_.emplace(t.storage().unsafeGetStorageImpl(), t.storage());
    });
  }
  const auto keep = [&](const std::string& name) { kept_.insert(name); };
  if (const rj::Value* outs = json_.member(*graph_, "outputs")) value_names(*outs, keep);
  if (const rj::Value* gm = json_.member(doc_, "graph_module"); gm && gm->IsObject())
    if (const rj::Value* sig = json_.member(*gm, "signature"); sig && sig->IsObject())
      if (const rj::Value* specs = json_.member(*sig, "output_specs")) value_names(*specs, keep);
  const rj::Value* nodes = json_.member(*graph_, "nodes");
  if (!nodes || !nodes->IsArray()) return;
  for (rj::SizeType i = 0; i < nodes->Size(); ++i) {
    const rj::Value& node = (*nodes)[i];
    const rj::Value* ins = node.IsObject() ? json_.member(node, "inputs") : nullptr;
    if (!ins || !ins->IsArray()) continue;
    for (const rj::Value& in : ins->GetArray()) {
      const rj::Value* arg = in.IsObject() ? json_.member(in, "arg") : nullptr;
      if (arg) value_names(*arg, [&](const std::string& name) { last_read_[name] = i; });
    }
  }
}

// Before the kernel runs: its outputs (sizes from a dry run on the meta device) and the values held now must fit
// the budget. An output over the cap of one tensor is the Recorder's to refuse, naming that cap.
void ExportImporter::check_live_budget(const AtenCall& aten, const std::vector<CallArg>& args,
                                       const std::string& where) const {
  std::vector<c10::IValue> values;
  for (const CallArg& a : args) values.push_back(a.value);
  const auto size = dry_run_outputs(*aten.handle, values);
  if (!size || size->largest_elements > static_cast<double>(kMaxTensorElements)) return;
  if (live_bytes_ + size->new_bytes > static_cast<double>(max_live_bytes_)) {
    fail(detail::concat(where, ": its outputs of ", static_cast<int64_t>(size->new_bytes),
                        " bytes would bring the node outputs held for later nodes to ",
                        static_cast<int64_t>(live_bytes_ + size->new_bytes), " bytes, over the limit of ",
                        max_live_bytes_, " bytes"));
  }
}

// After node `index`: its outputs are held, the values it read last (or that nothing reads) are let go, and the
// bytes of the storages still held are counted (an op the meta device cannot run was not checked before).
void ExportImporter::release_values(const rj::Value& node, size_t index, const std::string& where) {
  const auto dead = [&](const std::string& name) {
    if (kept_.count(name)) return false;
    const auto last = last_read_.find(name);
    return last == last_read_.end() || last->second <= index;
  };
  // (A placeholder written in place holds the write's result, storage of its own, from then on.)
  const auto holds_new_storage = [&](const std::string& name) {
    const auto v = values_.find(name);
    bool fresh = false;
    if (v != values_.end())
      each_tensor(v->second.value, [&](const at::Tensor& t) {
        fresh = fresh ||
                (t.defined() && t.has_storage() && !placeholder_storage_.count(t.storage().unsafeGetStorageImpl()));
      });
    return fresh;
  };
  std::vector<std::string> names;
  if (node.IsObject()) {
    if (const rj::Value* outs = json_.member(node, "outputs"))
      value_names(*outs, [&](const std::string& n) {
        names.push_back(n);
        if (values_.count(n)) made_.insert(n);
      });
    if (const rj::Value* ins = json_.member(node, "inputs"); ins && ins->IsArray())
      for (const rj::Value& in : ins->GetArray())
        if (const rj::Value* arg = in.IsObject() ? json_.member(in, "arg") : nullptr)
          value_names(*arg, [&](const std::string& n) {
            names.push_back(n);
            if (kept_.count(n) && !made_.count(n) && holds_new_storage(n)) made_.insert(n);  // a placeholder written
          });
  }
  for (const std::string& n : names) {
    if (!dead(n)) continue;
    values_.erase(n);
    made_.erase(n);
  }
  const double bytes = held_bytes(made_, values_, placeholder_storage_);
  live_bytes_ = bytes;
  if (live_bytes_ > static_cast<double>(max_live_bytes_)) {
    fail(detail::concat(where, ": the node outputs held for later nodes come to ", static_cast<int64_t>(bytes),
                        " bytes, over the limit of ", max_live_bytes_, " bytes"));
  }
}

}  // namespace placer::detail
