#include "pipeline/kernelbench_legality.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "pipeline/kernelbench_legality_data.h"

namespace kj {
namespace {

struct Policy {
  std::string version;
  std::set<std::string> namespaces, plumbing;
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
    for (const auto& s : j.at("framework_kernel_patterns")) out.framework.push_back(s.get<std::string>());
    for (const auto& s : j.at("plumbing_kernel_patterns")) out.plumbing_kernels.push_back(s.get<std::string>());
    return out;
  }();
  return p;
}

bool contains_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return name.find(p) != std::string::npos; });
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
    if (contains_any(k, p.plumbing_kernels)) continue;
    if (contains_any(k, p.library)) {
      ++c.library_kernels;
      if (c.library_kernel_names.size() < 5) c.library_kernel_names.push_back(k);
    } else if (contains_any(k, p.framework)) {
      ++c.framework_kernels;
    } else {
      ++c.custom_kernels;
    }
  }
  return c;
}

}  // namespace kj
