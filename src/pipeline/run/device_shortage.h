// Whose is a candidate's device out-of-memory? Its harness reports what its process held plus
// what it asked for (device_bytes_needed). On a busy node other jobs' memory (whatever their
// admission estimates missed) can leave an honest candidate short: that is the node's fault,
// INFRA_ERROR, and the retry has the device's memory to itself (kernelbench take_device). Only
// a shortage on that retry, or a request larger than the whole device, is the candidate's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kj {

struct DeviceShortage {
  std::uint64_t needed = 0;        // held + asked for, as the candidate's harness reported it
  std::uint64_t admitted = 0;      // what the daemon admitted it with (0 on a retry: the device alone)
  std::uint64_t device_total = 0;  // the device's memory (0: unknown)
  bool first_try = true;           // false on a retry, which had the device's memory to itself
};

// The node's fault that explains the shortage (a message for the INFRA_ERROR), or nullopt: the
// candidate's own (its RUNTIME_ERROR stands).
std::optional<std::string> device_shortage_is_ours(const DeviceShortage& s);

}  // namespace kj
