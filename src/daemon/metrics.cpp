#include "daemon/metrics.h"

#include <fmt/format.h>

#include "common/prometheus_text.h"

namespace kj {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double s) {
  std::size_t i = 0;
  while (i < bounds_.size() && s > bounds_[i]) ++i;
  std::lock_guard lk(mu_);
  ++counts_[i];
  sum_ += s;
  ++n_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard lk(mu_);
  const std::string sep = labels.empty() ? "" : ",";
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, bounds_[i], cum);
  }
  cum += counts_.back();
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cum);
  out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, sum_, name, labels, n_);
}

Metrics::Metrics() = default;

void Metrics::count_verdict(const std::string& tenant, const std::string& verdict) {
  std::lock_guard lk(mu_);
  ++verdicts_[{tenant, verdict}];
}

void Metrics::observe_queue_wait(const std::string& tenant, double seconds) {
  queue_wait.observe(seconds);
  std::lock_guard lk(mu_);
  tenant_queue_wait_.try_emplace(tenant, kWaitBounds).first->second.observe(seconds);
}

std::string Metrics::render(const std::map<std::string, TenantGauge>& tenants, bool ready) const {
  std::string o;
  auto counter = [&](const char* name, const char* help, std::uint64_t v) { append_metric(o, "counter", name, help, v); };
  auto gauge = [&](const char* name, const char* help, double v) { append_metric(o, "gauge", name, help, v); };
  counter("kjudge_deliveries_total", "Queue entries taken by this node (new and reclaimed).", deliveries);
  counter("kjudge_redeliveries_total", "Entries this node's reaper claimed after another consumer's lease ran out.", redeliveries);
  counter("kjudge_dead_letters_total", "Jobs this node dead-lettered with an INFRA_ERROR result.", dead_letters);
  counter("kjudge_retries_total", "INFRA_ERROR jobs parked for a retry with backoff.", retries);
  counter("kjudge_leases_lost_total", "Entries found claimed by another consumer at lease renewal.", leases_lost);
  counter("kjudge_leases_renewed_total", "Lease renewals (per entry).", leases_renewed);
  counter("kjudge_leases_handed_back_total", "Entries handed back at shutdown or drain.", handed_back);
  counter("kjudge_cancelled_running_total", "Running jobs whose result became CANCELLED.", cancelled_running);
  counter("kjudge_redis_errors_total", "Redis calls that failed (connection or server errors).", redis_errors);
  counter("kjudge_trimmed_entries_total", "Stream entries removed by MINID trimming.", trimmed);
  gauge("kjudge_slots", "Job slots on this node (GPU state placeholder: one slot per device later).", slots);
  gauge("kjudge_slots_busy", "Job slots running a job now.", busy.load());
  gauge("kjudge_ready", "1 when the node is fetching jobs.", ready ? 1 : 0);
  o += "# HELP kjudge_verdicts_total Results stored by this node, by tenant and verdict.\n# TYPE kjudge_verdicts_total counter\n";
  {
    std::lock_guard lk(mu_);
    for (const auto& [k, v] : verdicts_)
      o += fmt::format("kjudge_verdicts_total{{tenant=\"{}\",verdict=\"{}\"}} {}\n", k.first, k.second, v);
  }
  o += "# HELP kjudge_queue_lag Entries never delivered, per tenant.\n# TYPE kjudge_queue_lag gauge\n";
  for (const auto& [t, g] : tenants) o += fmt::format("kjudge_queue_lag{{tenant=\"{}\"}} {}\n", t, g.lag);
  o += "# HELP kjudge_queue_pending Entries delivered and not acknowledged, per tenant.\n# TYPE kjudge_queue_pending gauge\n";
  for (const auto& [t, g] : tenants) o += fmt::format("kjudge_queue_pending{{tenant=\"{}\"}} {}\n", t, g.pending);
  o += "# HELP kjudge_stage_seconds Latency per stage (queue_wait: submit to start; judge; complete).\n# TYPE kjudge_stage_seconds histogram\n";
  queue_wait.render(o, "kjudge_stage_seconds", "stage=\"queue_wait\"");
  judge_seconds.render(o, "kjudge_stage_seconds", "stage=\"judge\"");
  complete_seconds.render(o, "kjudge_stage_seconds", "stage=\"complete\"");
  o += "# HELP kjudge_tenant_queue_wait_seconds Submit to start per tenant (this node's jobs).\n"
       "# TYPE kjudge_tenant_queue_wait_seconds histogram\n";
  {
    std::lock_guard lk(mu_);
    for (const auto& [tenant, h] : tenant_queue_wait_)
      h.render(o, "kjudge_tenant_queue_wait_seconds", fmt::format("tenant=\"{}\"", tenant));
  }
  return o;
}

}  // namespace kj
