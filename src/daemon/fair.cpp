#include "daemon/fair.h"

#include <algorithm>

namespace kj {

std::string FairPicker::pick(const std::map<std::string, unsigned>& weights) {
  if (weights.empty()) return {};
  long long total = 0;
  std::string best;
  for (const auto& [t, w] : weights) {
    total += w;
    credit_[t] += w;
    if (best.empty() || credit_[t] > credit_[best] || (credit_[t] == credit_[best] && last_[t] < last_[best])) best = t;
  }
  credit_[best] -= total;
  last_[best] = ++seq_;
  return best;
}

void FairPicker::refund(const std::string& tenant, const std::map<std::string, unsigned>& weights) {
  // Not served. Its credit must not pile up while it is idle (it would then burst past everyone
  // when work arrives), but it should win the next tie: level it with the best other candidate
  // and make it the least recently served.
  long long best = 0;
  bool any = false;
  for (const auto& [t, w] : weights) {
    if (t == tenant) continue;
    best = any ? std::max(best, credit_[t]) : credit_[t];
    any = true;
  }
  credit_[tenant] = any ? best : 0;
  last_[tenant] = 0;
}

}  // namespace kj
