// Small pieces shared by kjudge-runner and the daemon (header-only, no dependencies): the digest
// both sides compute over tensor bytes, and the 95% confidence interval of a median that drives the
// adaptive trial count in the runner and is reported by the daemon.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace kjudge {

// Word-wise FNV-1a-64 with a final avalanche: fast enough for GiB tensors, identical on both sides.
// Not cryptographic: it detects changed bytes, it does not resist a forger (see
// docs/verdicts-and-rewards.md, "What a candidate in the runner's process can forge").
inline std::uint64_t digest64(std::span<const std::byte> bytes, std::uint64_t h = 0xcbf29ce484222325ull) {
  constexpr std::uint64_t kPrime = 0x100000001b3ull;
  const std::size_t words = bytes.size() / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i * 8, 8);
    h = (h ^ w) * kPrime;
    h ^= h >> 29;
  }
  for (std::size_t i = words * 8; i < bytes.size(); ++i) h = (h ^ static_cast<std::uint8_t>(bytes[i])) * kPrime;
  h ^= bytes.size();
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

// Half-width of the distribution-free 95% CI of the median (order statistics n/2 ± 0.98·sqrt(n)),
// relative to the median. Returns +inf below 5 samples or for a non-positive median.
inline double median_rel_ci(std::vector<double> v) {
  const std::size_t n = v.size();
  if (n < 5) return INFINITY;
  std::sort(v.begin(), v.end());
  const double half = 0.98 * std::sqrt(static_cast<double>(n));
  const double mid = static_cast<double>(n) / 2.0;
  const auto lo = static_cast<std::size_t>(std::max(0.0, std::floor(mid - half)));
  const auto hi = static_cast<std::size_t>(std::min(static_cast<double>(n - 1), std::ceil(mid + half) - 1));
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  if (!(median > 0)) return INFINITY;
  return (v[hi] - v[lo]) / (2.0 * median);
}

}  // namespace kjudge
