// Whole-file reads and writes for the request, the report, OpenCL sources and program binaries.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kjudge::runner {

// The file's bytes; throws RunnerError naming `what` and the path.
std::string read_file(const std::filesystem::path& path, std::string_view what);

// Writes `<path>.tmp` then renames it over `path`, so a reader never sees half a file.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, std::string_view what);

}  // namespace kjudge::runner
