// JSON-lines logging: one object per line on stderr ({"ts","level","event",...fields}).
// spdlog does the I/O and levels; nlohmann_json does the escaping.
#pragma once

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <string_view>

namespace kj::log {

// "trace".."critical"; safe to call twice. Also routes protobuf's own log lines through emit().
void init(const std::string& level);
// protobuf's log lines (e.g. invalid UTF-8 in a job's string field) as "protobuf.log" JSON lines.
void route_protobuf_logs();
void emit(spdlog::level::level_enum level, std::string_view event, nlohmann::json fields = nlohmann::json::object());

inline void info(std::string_view event, nlohmann::json fields = nlohmann::json::object()) {
  emit(spdlog::level::info, event, std::move(fields));
}
inline void warn(std::string_view event, nlohmann::json fields = nlohmann::json::object()) {
  emit(spdlog::level::warn, event, std::move(fields));
}
inline void error(std::string_view event, nlohmann::json fields = nlohmann::json::object()) {
  emit(spdlog::level::err, event, std::move(fields));
}
inline void debug(std::string_view event, nlohmann::json fields = nlohmann::json::object()) {
  emit(spdlog::level::debug, event, std::move(fields));
}

}  // namespace kj::log
