// The node's CPU pressure (Linux PSI, /proc/pressure/cpu "some"): the time during which at least
// one runnable task waited for a CPU. A sandboxed step's wall limit is extended by the pressure
// seen while it ran, up to a cap: builds run at a low CPU weight behind the timed loops, and an
// honest build or run slowed by a loaded node must not become the candidate's COMPILE_ERROR or
// TIMEOUT. A step that only sleeps gains nothing on a quiet node (a sleeping task is not
// runnable), and never more than the cap, so a hang is still the candidate's, only later.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace kj {

// The "some" line's total (microseconds) of a PSI file's text; nullopt when it has none.
std::optional<std::uint64_t> parse_pressure_some_us(std::string_view text);

// /proc/pressure/cpu's "some" total now; nullopt on a kernel without PSI.
std::optional<std::uint64_t> cpu_pressure_some_us();

// For kjsandbox::Policy::wall_extension: the CPU pressure since this call, at most `cap`
// (always 0 without PSI).
std::function<std::chrono::milliseconds()> cpu_pressure_extension(std::chrono::milliseconds cap);

}  // namespace kj
