# cmake -DINPUT=<file.lua> -DOUTPUT=<file.cpp> -P embed_lua.cmake
# Writes the Lua library as a byte array, so the daemon needs no file at runtime and no byte
# sequence in the source can break the generated C++.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
# 16 bytes a line (CMake regexes have no {n} repetition)
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n  " body "${body}")
file(WRITE "${OUTPUT}.tmp"
"// Generated from queue/lua/kjudge.lua by queue/cmake/embed_lua.cmake. Do not edit.
#include \"lua_library.h\"

namespace kjqueue::detail {
namespace {
constexpr unsigned char kBytes[] = {
  ${body}
};
}  // namespace
const std::string_view kLuaLibrary(reinterpret_cast<const char*>(kBytes), ${bytes});
}  // namespace kjqueue::detail
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
