#include "pipeline/kernelbench/build_memo.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/random.h"
#include "common/sha256.h"

namespace kj {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kMemoVersion = "kb-build-memo-1";

std::string memo_key(const BuildMemoInputs& in) {
  Sha256 h;
  h.field(kMemoVersion).field(in.completion ? "completion" : "candidate").field(in.candidate).field(in.reference);
  h.field(in.size_overrides.dump()).field(in.policy_overrides.dump()).field(in.backend).field(in.arch);
  h.field(in.python).field(in.harness_dir).field(in.tenant);
  return h.hex();
}

// "<mtime ns>:<size>" of torch's own file (torch/__init__.py): changes when torch is reinstalled.
std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}.{}:{}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
}

}  // namespace

BuildMemo::BuildMemo(const fs::path& dir, const BuildMemoInputs& in) : key_(memo_key(in)), file_(dir / (key_ + ".json")) {}

std::optional<json> BuildMemo::read() const {
  std::ifstream f(file_);
  if (!f) return std::nullopt;
  json entry = json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!entry.is_object()) return std::nullopt;
  return entry;
}

std::optional<json> BuildMemo::lookup() const {
  const auto read_entry = read();
  if (!read_entry || !read_entry->contains("extensions")) return std::nullopt;
  const json& entry = *read_entry;
  const std::string stamp = entry.value("torch_stamp", "");
  if (stamp.empty() || stamp != file_stamp(entry.value("torch_file", ""))) return std::nullopt;
  return entry;
}

void BuildMemo::store(const json& report, const std::string& candidate_py) const {
  const json torch = report.value("torch", json::object());
  const std::string torch_file = torch.is_object() ? torch.value("file", "") : "";
  const std::string stamp = file_stamp(torch_file);
  if (stamp.empty()) return;  // torch's file is not where the daemon can see it: no replay
  json entry = {{"torch_file", torch_file}, {"torch_stamp", stamp},
                {"static_policy", report.value("static_policy", json::object())},
                {"extensions", report.value("extensions", json::array())}, {"candidate_py", candidate_py}};
  for (auto& rec : entry["extensions"]) rec["cache_hit"] = true;  // a replay only ever reads the cache
  write(entry);
}

void BuildMemo::adopt(const json& shared) const {
  json entry = {{"torch_file", shared.value("torch_file", "")},
                {"static_policy", shared.value("static_policy", json::object())},
                {"extensions", shared.value("extensions", json::array())},
                {"candidate_py", shared.value("candidate_py", "")}};
  entry["torch_stamp"] = file_stamp(entry["torch_file"].get<std::string>());
  if (entry["torch_stamp"] == "") return;  // not this node's torch: no replay
  for (auto& rec : entry["extensions"]) rec["cache_hit"] = true;
  write(entry);
}

void BuildMemo::store_failure(json failure, const std::string& conditions) const {
  if (conditions.empty()) return;
  failure["failed"] = true;
  failure["conditions"] = conditions;
  write(failure);
}

std::optional<json> BuildMemo::lookup_failure(const std::function<std::string()>& conditions) const {
  auto entry = read();
  if (!entry || !entry->value("failed", false)) return std::nullopt;
  const std::string made_in = entry->value("conditions", "");
  if (made_in.empty() || made_in != conditions()) return std::nullopt;
  return entry;
}

void BuildMemo::write(const json& entry) const {
  const fs::path tmp = file_.string() + fmt::format(".tmp{}", ::getpid()) + random_suffix();
  std::ofstream(tmp) << entry.dump();
  std::error_code ec;
  fs::rename(tmp, file_, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace kj
