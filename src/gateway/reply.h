// One HTTP reply of the gateway before it becomes a Beast response; errors are JSON objects
// {"error": {"code": "<machine name>", "message": "<for people>"}}.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace kj::gateway {

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::string refusal;  // non-empty: counted in kjudge_gateway_refusals_total under this reason
};

inline Reply json_reply(int status, const nlohmann::json& body) { return {status, body.dump(), "application/json", {}}; }

// A 4xx/5xx; refusals (counted per reason and tenant) are the 4xx ones a client caused.
inline Reply error_reply(int status, std::string_view code, std::string_view message) {
  Reply r = json_reply(status, {{"error", {{"code", code}, {"message", message}}}});
  if (status >= 400 && status < 500) r.refusal = code;
  return r;
}

}  // namespace kj::gateway
