#include "pipeline/kernelbench/legality.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "pipeline/kernelbench/legality_data.h"

namespace kj {
namespace {

struct Policy {
  std::string version;
  std::set<std::string> namespaces, plumbing, framework_kernel_namespaces;
  std::vector<std::string> library, framework, plumbing_kernels;
};

const Policy& policy() {
  static const Policy p = [] {
    const auto j = nlohmann::json::parse(kKernelBenchLegalityJson);
    Policy out;
    out.version = j.at("version").get<std::string>();
    for (const auto& s : j.at("framework_namespaces")) out.namespaces.insert(s.get<std::string>());
    for (const auto& s : j.at("plumbing_ops")) out.plumbing.insert(s.get<std::string>());
    for (const auto& s : j.at("library_kernel_patterns")) out.library.push_back(s.get<std::string>());
    for (const auto& s : j.at("framework_kernel_namespaces")) out.framework_kernel_namespaces.insert(s.get<std::string>());
    for (const auto& s : j.at("framework_kernel_patterns")) out.framework.push_back(s.get<std::string>());
    for (const auto& s : j.at("plumbing_kernel_patterns")) out.plumbing_kernels.push_back(s.get<std::string>());
    return out;
  }();
  return p;
}

// The components of a kernel's own qualified name: the demangled signature without its return
// type, template arguments and parameters, split at "::". "void at::native::reduce_kernel<512,
// ...>(...)" gives {at, native, reduce_kernel}; the types a candidate's kernel takes (c10::Half,
// at::GenericPackedTensorAccessor) and a name that merely contains a vendor word are not in it.
std::vector<std::string> name_components(std::string name) {
  static const std::string anon = "(anonymous namespace)";
  for (auto at = name.find(anon); at != std::string::npos; at = name.find(anon)) name.replace(at, anon.size(), "{anon}");
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  name = name.substr(0, name.find_first_of("<("));
  std::vector<std::string> out;
  for (std::size_t from = 0;;) {
    const auto sep = name.find("::", from);
    out.push_back(name.substr(from, sep == std::string::npos ? std::string::npos : sep - from));
    if (sep == std::string::npos) return out;
    from = sep + 2;
  }
}

// A pattern names a kernel when it begins one of the name's components. A name the recorder could
// not demangle ("_Z...") has no components to read: there any occurrence counts.
bool named_by(const std::string& kernel, const std::vector<std::string>& components, const std::vector<std::string>& patterns) {
  const bool mangled = kernel.rfind("_Z", 0) == 0;
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
    if (mangled) return kernel.find(p) != std::string::npos;
    return std::any_of(components.begin(), components.end(), [&](const std::string& c) { return c.rfind(p, 0) == 0; });
  });
}

bool framework_kernel(const Policy& p, const std::string& kernel, const std::vector<std::string>& components) {
  if (p.framework_kernel_namespaces.count(components.front())) return components.size() > 1;
  return std::any_of(p.framework.begin(), p.framework.end(), [&](const std::string& f) { return kernel.rfind(f, 0) == 0; });
}

}  // namespace

const std::string& legality_policy_version() { return policy().version; }

LegalityClass classify_legality(const LegalityTrace& trace) {
  const Policy& p = policy();
  LegalityClass c;
  std::set<std::string> seen;
  for (const auto& op : trace.ops) {
    const auto sep = op.find("::");
    const std::string ns = sep == std::string::npos ? op : op.substr(0, sep);
    if (!p.namespaces.count(ns)) {
      ++c.custom_ops;
    } else if (!p.plumbing.count(op) && seen.insert(op).second) {
      c.forbidden_ops.push_back(op);
    }
  }
  for (const auto& k : trace.kernels) {
    const auto components = name_components(k);
    if (named_by(k, components, p.plumbing_kernels)) continue;
    if (named_by(k, components, p.library)) {
      ++c.library_kernels;
      if (c.library_kernel_names.size() < 5) c.library_kernel_names.push_back(k);
    } else if (framework_kernel(p, k, components)) {
      ++c.framework_kernels;
    } else {
      ++c.custom_kernels;
    }
  }
  return c;
}

}  // namespace kj
