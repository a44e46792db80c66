#include "buildfarm/build_work.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>
#include <variant>

#include "common/job_clock.h"
#include "common/log.h"
#include "pipeline/judge.h"
#include "pipeline/kernelbench/build.h"
#include "pipeline/job/validate.h"

namespace kj::buildfarm {
namespace v1 = kjudge::v1;
using kjqueue::Keys;

namespace {

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

}  // namespace

bool build_unwanted(kjqueue::Queue& q, const v1::Job& job, const kjqueue::Delivery& d) {
  if (deadline_passed(job, now_timestamp())) return true;
  const auto exists = q.command({"EXISTS", Keys::result(d.partition, d.tenant, job.job_id())});
  if (!exists.empty() && exists.front() && *exists.front() != "0") return true;
  const auto c = q.cancelled({{d.tenant, job.job_id(), d.batch_id.empty() ? job.batch_id() : d.batch_id}});
  return !c.empty() && c.front();
}

std::string request_name(const kjqueue::BuildRequest& r) {
  return Keys::build_requests(0, r.tenant, r.lane) + "/" + r.id;
}

std::vector<std::string> cuda_arch_lists_to_build(const Config& cfg, const std::map<std::string, std::string>& archs,
                                                  std::int64_t now) {
  if (!cfg.kernelbench.cuda_arch_list.empty()) return {cfg.kernelbench.cuda_arch_list};
  static const std::regex form("([0-9]{1,19}) ([0-9A-Za-z.;+ ]{1,64})");  // TORCH_CUDA_ARCH_LIST: "9.0", "8.0;9.0+PTX"
  std::set<std::string> seen;
  for (const auto& [node, value] : archs) {
    std::smatch m;
    if (!std::regex_match(value, m, form)) continue;
    try {
      if (std::stoll(m[1].str()) < now) continue;  // its node stopped publishing
    } catch (const std::exception&) {
      continue;
    }
    seen.insert(m[2].str());
  }
  return {seen.begin(), seen.end()};
}

Config with_cuda_arch_list(Config cfg, const std::string& cuda_arch_list) {
  if (!cuda_arch_list.empty()) cfg.kernelbench.cuda_arch_list = cuda_arch_list;
  return cfg;
}

std::vector<BuildWork> builds_for(kjqueue::Queue& q, RedisBuildStore& store, const Config& cfg,
                                  const std::vector<std::string>& cuda_arch_lists,
                                  const std::vector<kjqueue::BuildRequest>& requests,
                                  std::vector<kjqueue::BuildRequest>& settled) {
  std::vector<BuildWork> out;
  const double now = now_ms(), aging = static_cast<double>(cfg.queue.priority_aging.count());
  std::vector<Config> per_arch;  // the config a CUDA build of each architecture runs with
  for (const auto& arch : cuda_arch_lists) per_arch.push_back(with_cuda_arch_list(cfg, arch));
  const auto entries = q.job_entries(requests);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& d = entries[i];
    auto job = d ? kernelbench_job(*d, cfg) : std::nullopt;
    if (!job || build_unwanted(q, *job, *d)) {
      log::debug("build.settled", {{"request", request_name(requests[i])}, {"job", job.has_value()}});
      settled.push_back(requests[i]);
      continue;
    }
    std::vector<BuildWork> wanted;
    const double score = requests[i].lane * aging + (now - entry_ms(d->entry_id));
    if (!kernelbench_build_needs_cuda_arch(*job))
      wanted.push_back({*job, *d, kernelbench_build_key(*job, cfg), score, "", requests[i]});
    else
      for (const auto& c : per_arch)
        wanted.push_back({*job, *d, kernelbench_build_key(*job, c), score, c.kernelbench.cuda_arch_list, requests[i]});
    // built, or being built: that node (or the judging node) has it. No architecture known yet: the
    // judging nodes build it.
    std::erase_if(wanted, [&store](const BuildWork& w) { return store.taken(w.key); });
    if (wanted.empty()) settled.push_back(requests[i]);
    for (auto& w : wanted) out.push_back(std::move(w));
  }
  return out;
}

}  // namespace kj::buildfarm
