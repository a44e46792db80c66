// protobuf's own log lines ("libprotobuf ERROR ... String field contains invalid UTF-8", from a
// job's bad string field) would go to stderr as plain text, in the middle of the daemon's JSON
// lines. protobuf 3.21 (Debian 12's libprotobuf-dev) has SetLogHandler; the handler makes each
// one a JSON line like every other.
#include <google/protobuf/stubs/logging.h>

#include "common/log.h"

namespace kj::log {
namespace {

spdlog::level::level_enum level_of(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO: return spdlog::level::info;
    case google::protobuf::LOGLEVEL_WARNING: return spdlog::level::warn;
    case google::protobuf::LOGLEVEL_ERROR: return spdlog::level::err;
    default: return spdlog::level::critical;  // LOGLEVEL_FATAL: protobuf aborts after it
  }
}

void protobuf_log_handler(google::protobuf::LogLevel level, const char* filename, int line, const std::string& message) {
  emit(level_of(level), "protobuf.log", {{"message", message}, {"source", std::string(filename ? filename : "") + ":" + std::to_string(line)}});
}

}  // namespace

void route_protobuf_logs() { google::protobuf::SetLogHandler(&protobuf_log_handler); }

}  // namespace kj::log
