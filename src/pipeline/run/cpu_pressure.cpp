#include "pipeline/run/cpu_pressure.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace kj {

std::optional<std::uint64_t> parse_pressure_some_us(std::string_view text) {
  // "some avg10=0.06 avg60=17.73 avg300=50.97 total=4179018610\nfull ..."
  if (text.substr(0, 5) != "some ") return std::nullopt;
  const auto line = text.substr(0, text.find('\n'));
  const auto at = line.find(" total=");
  if (at == std::string_view::npos) return std::nullopt;
  const auto digits = line.substr(at + 7);
  std::uint64_t total = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), total);
  if (ec != std::errc() || end == digits.data()) return std::nullopt;
  return total;
}

std::optional<std::uint64_t> cpu_pressure_some_us() {
  std::ifstream in("/proc/pressure/cpu");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_pressure_some_us(text.str());
}

std::function<std::chrono::milliseconds()> cpu_pressure_extension(std::chrono::milliseconds cap) {
  const auto start = cpu_pressure_some_us();
  return [start, cap] {
    const auto now = start ? cpu_pressure_some_us() : std::nullopt;
    if (!now || *now < *start) return std::chrono::milliseconds(0);
    return std::min(cap, std::chrono::milliseconds((*now - *start) / 1000));
  };
}

}  // namespace kj
