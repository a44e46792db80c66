// Weighted round-robin across tenants (smooth WRR, as nginx's upstream balancer): each pick adds
// every candidate's weight to its credit, takes the highest credit and charges it the total.
// Ties go to the tenant served least recently, so a tenant that was idle is served at the next
// free slot even while another floods. Pure logic, unit-tested in tests/fault/fair_test.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kj {

class FairPicker {
 public:
  // `weights`: candidate tenants (those with room under their caps) and their weights (>= 1).
  // Returns "" when there is no candidate.
  std::string pick(const std::map<std::string, unsigned>& weights);
  // The picked tenant had nothing queued: give back what the pick charged it.
  void refund(const std::string& tenant, const std::map<std::string, unsigned>& weights);

 private:
  std::map<std::string, long long> credit_;
  std::map<std::string, std::uint64_t> last_;  // pick sequence number of the last service
  std::uint64_t seq_ = 0;
};

}  // namespace kj
