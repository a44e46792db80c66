// The server-side function library (queue/lua/kjudge.lua), embedded at build time.
#pragma once

#include <string_view>

namespace kjqueue::detail {
extern const std::string_view kLuaLibrary;
}  // namespace kjqueue::detail
