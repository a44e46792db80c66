// Prometheus text exposition of one sample without labels: its HELP and TYPE lines and the value
// (integers as integers, seconds as fmt's shortest form). Every /metrics page writes through it.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace kj {

template <typename Value>
void append_metric(std::string& out, std::string_view type, std::string_view name, std::string_view help, Value v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
}

}  // namespace kj
