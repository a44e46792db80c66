#include "pipeline/run/device_shortage.h"

#include <fmt/format.h>

namespace kj {

std::optional<std::string> device_shortage_is_ours(const DeviceShortage& s) {
  constexpr double kGiB = double(1ull << 30);
  if (s.admitted > 0 && s.needed <= s.admitted)
    return fmt::format("the device had no room for the {:.1f} GiB the candidate was admitted with "
                       "(other jobs' memory on a busy node): judged again with the device to itself",
                       s.admitted / kGiB);
  if (s.first_try && s.device_total > 0 && s.needed <= s.device_total)
    return fmt::format("the candidate ran out of device memory asking for {:.1f} GiB of the device's {:.1f} "
                       "on a node where other jobs held memory: judged again with the device to itself",
                       s.needed / kGiB, s.device_total / kGiB);
  return std::nullopt;
}

}  // namespace kj
