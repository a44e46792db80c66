#include "pipeline/timing/loop_report.h"

#include <algorithm>
#include <cstdint>

#include "pipeline/timing/stats.h"

namespace kj {
namespace v1 = kjudge::v1;
using nlohmann::json;

std::vector<double> json_doubles(const json& j, const char* key) {
  std::vector<double> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& x : j[key])
      if (x.is_number()) out.push_back(x.get<double>());
  return out;
}

v1::TimingStats stats_of(const json& timing) {
  const std::vector<double> ms = json_doubles(timing, "trial_ms");
  v1::TimingStats s = timing_stats(ms, timing.value("method", ""));
  if (!ms.empty()) s.set_max_ms(*std::max_element(ms.begin(), ms.end()));
  if (timing.contains("kernelbench_stats")) {  // KernelBench's rounding (3 significant figures)
    const auto& k = timing["kernelbench_stats"];
    s.set_mean_ms(k.value("mean", 0.0));
    s.set_std_ms(k.value("std", 0.0));
    s.set_min_ms(k.value("min", 0.0));
    s.set_max_ms(k.value("max", 0.0));
  }
  // the loop's own word, as its figures are: a malformed count gives none, never an error
  if (const auto it = timing.find("trials_redone"); it != timing.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0)
    s.set_trials_redone(static_cast<std::uint32_t>(std::min<std::int64_t>(it->get<std::int64_t>(), 1 << 20)));
  if (const auto it = timing.find("host_wait_ms"); it != timing.end() && it->is_number() && it->get<double>() >= 0)
    s.set_host_wait_ms(it->get<double>());
  return s;
}

}  // namespace kj
