#include "buildfarm/build_scan.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "daemon/job_clock.h"
#include "pipeline/judge.h"
#include "pipeline/kernelbench/kernelbench_build.h"
#include "pipeline/job/validate.h"

namespace kj::buildfarm {
namespace v1 = kjudge::v1;
using kjqueue::Keys;

namespace {

constexpr std::size_t kSettledMax = 200'000;

double entry_ms(const std::string& entry_id) {
  try {
    return std::stod(entry_id.substr(0, entry_id.find('-')));
  } catch (const std::exception&) {
    return 0;
  }
}

double now_ms() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// The decoded job when the entry is a KernelBench-format job a judging node would build.
std::optional<v1::Job> kernelbench_job(const kjqueue::Delivery& d, const Config& cfg) {
  auto decoded = decode_for_judge(d.payload, d.tenant, cfg.limits, cfg.testing);
  auto* job = std::get_if<v1::Job>(&decoded);
  if (!job || job->task_case() != v1::Job::kKernelbench || validate_job(*job, cfg.limits)) return std::nullopt;
  if (!d.job_id.empty() && d.job_id != job->job_id()) return std::nullopt;
  return std::move(*job);
}

// No build wanted, ever: no job of ours, a result, a cancel, a passed deadline, an artifact.
bool finished(kjqueue::Queue& q, const v1::Job& job, const kjqueue::Delivery& d) {
  if (deadline_passed(job, now_timestamp())) return true;
  const auto exists = q.command({"EXISTS", Keys::result(d.partition, d.tenant, job.job_id())});
  if (!exists.empty() && exists.front() && *exists.front() != "0") return true;
  const auto c = q.cancelled({{d.tenant, job.job_id(), d.batch_id.empty() ? job.batch_id() : d.batch_id}});
  return !c.empty() && c.front();
}

}  // namespace

void Settled::add(const std::string& entry) {
  if (done_.size() >= kSettledMax) done_.clear();  // bounded: a cleared entry is only looked at again
  done_.insert(entry);
  keys_.erase(entry);
}

const std::vector<std::string>* Settled::keys_of(const std::string& entry) const {
  auto it = keys_.find(entry);
  return it == keys_.end() ? nullptr : &it->second;
}

void Settled::remember(const std::string& entry, std::vector<std::string> keys) {
  if (keys_.size() >= kSettledMax) keys_.clear();
  keys_[entry] = std::move(keys);
}

std::vector<std::string> cuda_arch_lists_to_build(const Config& cfg, const std::vector<kjqueue::NodeStatus>& nodes) {
  if (!cfg.kernelbench.cuda_arch_list.empty()) return {cfg.kernelbench.cuda_arch_list};
  static const std::regex arch_list("[0-9A-Za-z.;+ ]{1,64}");  // TORCH_CUDA_ARCH_LIST: "9.0", "8.0;9.0+PTX"
  std::set<std::string> seen;
  for (const auto& n : nodes) {
    const auto info = nlohmann::json::parse(n.info, nullptr, /*allow_exceptions=*/false);
    if (!info.is_object() || info.value("role", "") == "build") continue;
    const auto it = info.find("cuda_arch_list");
    if (it != info.end() && it->is_string() && std::regex_match(it->get<std::string>(), arch_list))
      seen.insert(it->get<std::string>());
  }
  return {seen.begin(), seen.end()};
}

Config with_cuda_arch_list(Config cfg, const std::string& cuda_arch_list) {
  if (!cuda_arch_list.empty()) cfg.kernelbench.cuda_arch_list = cuda_arch_list;
  return cfg;
}

std::vector<BuildWork> find_builds(kjqueue::Queue& q, RedisBuildStore& store, const Config& cfg,
                                   const std::vector<std::string>& cuda_arch_lists, const std::string& tenant,
                                   std::size_t want, Settled& settled) {
  std::vector<BuildWork> out;
  const double now = now_ms(), aging = static_cast<double>(cfg.queue.priority_aging.count());
  std::vector<Config> per_arch;  // the config a CUDA build of each architecture runs with
  for (const auto& arch : cuda_arch_lists) per_arch.push_back(with_cuda_arch_list(cfg, arch));
  const auto all_taken = [&store](const std::vector<std::string>& keys) {
    return std::all_of(keys.begin(), keys.end(), [&store](const std::string& k) { return store.taken(k); });
  };
  for (int lane : kjqueue::kLanes) {
    for (const auto& d : q.unfinished(tenant, lane, cfg.build.scan_max)) {
      const std::string entry = Keys::jobs(d.partition, tenant, lane) + "/" + d.entry_id;
      if (settled.has(entry)) continue;
      if (const auto* known = settled.keys_of(entry); known && all_taken(*known)) continue;
      auto job = kernelbench_job(d, cfg);
      if (!job || finished(q, *job, d)) {
        log::debug("build.settled", {{"entry", entry}, {"job", job.has_value()}});
        settled.add(entry);
        continue;
      }
      std::vector<BuildWork> wanted;
      if (!kernelbench_build_needs_cuda_arch(*job))
        wanted.push_back({*job, kernelbench_build_key(*job, cfg), entry, 0, ""});
      else
        for (const auto& c : per_arch)
          wanted.push_back({*job, kernelbench_build_key(*job, c), entry, 0, c.kernelbench.cuda_arch_list});
      if (wanted.empty()) continue;  // a CUDA job and no architecture known yet
      std::vector<std::string> keys;
      for (const auto& w : wanted) keys.push_back(w.key);
      settled.remember(entry, keys);
      for (auto& w : wanted) {
        if (store.taken(w.key)) {  // built, or being built: looked at again while it has no result
          log::debug("build.taken", {{"job_id", job->job_id()}, {"key", w.key}});
          continue;
        }
        w.score = lane * aging + (now - entry_ms(d.entry_id));
        out.push_back(std::move(w));
      }
    }
  }
  log::debug("build.scan", {{"tenant", tenant}, {"found", out.size()}, {"settled", settled.size()}});
  std::stable_sort(out.begin(), out.end(), [](const BuildWork& a, const BuildWork& b) { return a.score > b.score; });
  if (out.size() > want) out.resize(want);
  return out;
}

}  // namespace kj::buildfarm
