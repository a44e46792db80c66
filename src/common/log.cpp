#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <fmt/chrono.h>

#include <chrono>

namespace kj::log {
namespace {

std::shared_ptr<spdlog::logger> logger() {
  static std::shared_ptr<spdlog::logger> l = [] {
    auto lg = std::make_shared<spdlog::logger>("kjudge", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    lg->set_pattern("%v");  // the message is already the complete JSON object
    lg->flush_on(spdlog::level::trace);
    return lg;
  }();
  return l;
}

}  // namespace

void init(const std::string& level) {
  logger()->set_level(spdlog::level::from_str(level));
  route_protobuf_logs();
}

void emit(spdlog::level::level_enum level, std::string_view event, nlohmann::json fields) {
  auto& lg = *logger();
  if (!lg.should_log(level)) return;
  nlohmann::json line = nlohmann::json::object();
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  line["ts"] = fmt::format("{:%FT%T}.{:06d}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(now)), us);
  const auto lv = spdlog::level::to_string_view(level);
  line["level"] = std::string(lv.data(), lv.size());
  line["event"] = event;
  if (fields.is_object()) line.update(fields);
  lg.log(level, "{}", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace kj::log
