#include "pipeline/kernelbench/baseline_cache.h"

#include <fmt/format.h>

#include "pipeline/run/pipeline_util.h"
#include "common/sha256.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_or_empty(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return "";
  return read_file(p);
}

}  // namespace

KernelBenchBaselineCache::KernelBenchBaselineCache(fs::path dir, const v1::KernelBenchTask& task, bool compat,
                                                   const json& timing)
    : dir_(std::move(dir)), backend_(fmt::format("{}", static_cast<int>(task.backend()))) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  json overrides = json::object();  // json objects keep keys sorted: the dump is stable
  for (const auto& [k, v] : task.size_overrides()) overrides[k] = v;
  json rules = json::object();
  for (const char* k : {"warmup", "min_trials", "max_trials", "budget_ms", "target_rel_ci", "l2_flush"})
    if (timing.contains(k)) rules[k] = timing[k];
  Sha256 h;
  h.field("kjudge-kb-baseline-v1").field(task.reference_py()).field(overrides.dump()).field(backend_);
  h.field(fmt::format("precision {}", static_cast<int>(task.precision()))).field(compat ? "compat" : "strict");
  h.field(rules.dump());
  material_ = h.hex();
  identity_ = read_or_empty(dir_ / fmt::format("node-identity-{}", backend_));
  if (identity_.empty()) return;
  const std::string text = read_or_empty(dir_ / (key_for(identity_) + ".json"));
  json e = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (e.is_object() && e.contains("baseline")) entry_ = std::move(e);
  else identity_.clear();
}

std::string KernelBenchBaselineCache::key_for(const std::string& identity) const {
  return Sha256().field(material_).field(identity).hex();
}

void KernelBenchBaselineCache::store(const std::string& identity, const json& entry) const {
  if (identity.empty()) return;
  write_file_atomic(dir_ / (key_for(identity) + ".json"), entry.dump());
  write_file_atomic(dir_ / fmt::format("node-identity-{}", backend_), identity);
}

}  // namespace kj
