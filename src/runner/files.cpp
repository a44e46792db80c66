#include "runner/files.h"

#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

#include "runner/error.h"

namespace kjudge::runner {

std::string read_file(const std::filesystem::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RunnerError(fmt::format("cannot open {} {}", what, path.string()));
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw RunnerError(fmt::format("cannot read {} {}", what, path.string()));
  return bytes;
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, std::string_view what) {
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw RunnerError(fmt::format("cannot write {} {}", what, tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RunnerError(fmt::format("cannot write {} {}: {}", what, path.string(), ec.message()));
}

}  // namespace kjudge::runner
