#include "pipeline/build/toolchain_identity.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/sha256.h"

namespace kj {
namespace fs = std::filesystem;

namespace {

std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 512> buf{};
    while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
    ::pclose(p);
  }
  return out;
}

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// torch/__init__.py as python finds it, without importing torch (milliseconds, not seconds).
fs::path torch_init(const fs::path& python) {
  std::string out = command_output("'" + python.string() +
                                   "' -c 'import importlib.util as u; s = u.find_spec(\"torch\"); "
                                   "print(s.origin if s else \"\")' 2>/dev/null");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The build role's code: the harness and the shared package it imports (module loading).
void hash_harness(Sha256& h, const fs::path& harness_dir) {
  std::vector<fs::path> files;
  for (const char* package : {"kjudge_harness", "kjudge_protocol"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(harness_dir / package, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->path().extension() == ".py") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) h.field(f.lexically_relative(harness_dir).string()).field(file_text(f));
}

std::string compute(const Config& cfg) {
  Sha256 h;
  h.field("kj-toolchain-1").field(cfg.kernelbench.python.string());
  const fs::path init = torch_init(cfg.kernelbench.python);
  h.field(init.string());
  if (!init.empty()) h.field(file_text(init.parent_path() / "version.py"));
  std::error_code ec;
  h.field(std::to_string(init.empty() ? 0 : fs::file_size(init, ec)));
  hash_harness(h, cfg.kernelbench.harness_dir);
  h.field(command_output("g++ --version 2>/dev/null")).field(command_output("nvcc --version 2>/dev/null"));
  return h.hex();
}

}  // namespace

std::string toolchain_identity(const Config& cfg) {
  static std::once_flag once;
  static std::string id;
  std::call_once(once, [&] { id = compute(cfg); });
  return id;
}

}  // namespace kj
