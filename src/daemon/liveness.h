// The Daemon's private helpers for its liveness: the steady clock in milliseconds that the fetch
// thread stamps each turn with (read by the watchdog and /livez), and systemd's sd_notify.
#pragma once

#include <systemd/sd-daemon.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace kj {

inline std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void notify(const std::string& state) { sd_notify(0, state.c_str()); }

}  // namespace kj
