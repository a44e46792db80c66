#include "pipeline/kernelbench/build_share.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "pipeline/build/claim.h"
#include "common/random.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool valid_ext_key(const std::string& key) {
  return key.size() == 32 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// "<32 hex>/<name>": one level, a plain file name (no '/', not "." or "..", no NUL).
bool valid_file_path(const std::string& path) {
  const auto slash = path.find('/');
  if (slash == std::string::npos || !valid_ext_key(path.substr(0, slash))) return false;
  const std::string name = path.substr(slash + 1);
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

std::optional<std::string> read_file_if_any(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The extension's folder made complete under a temporary name, then renamed into place: a reader
// sees all of it or nothing. An existing folder (built here, or installed before) is kept.
bool install_ext(const fs::path& dst, const std::vector<const BuildFile*>& files) {
  if (fs::exists(dst)) return true;
  const fs::path tmp = dst.string() + fmt::format(".tmp{}", ::getpid()) + random_suffix();
  std::error_code ec;
  fs::create_directories(tmp, ec);
  ::chmod(tmp.c_str(), 0755);
  for (const auto* f : files) {
    const fs::path p = tmp / fs::path(f->path).filename();
    std::ofstream(p, std::ios::binary) << f->bytes;
    ::chmod(p.c_str(), 0755);
  }
  if (!ec) fs::rename(tmp, dst, ec);
  if (ec) fs::remove_all(tmp, ec);
  return fs::exists(dst);
}

}  // namespace

std::optional<SharedBuild> shared_success(const std::string& key, const json& memo_entry, const fs::path& ext_cache) {
  SharedBuild b;
  b.key = key;
  b.memo = {{"torch_file", memo_entry.value("torch_file", "")},
            {"static_policy", memo_entry.value("static_policy", json::object())},
            {"extensions", memo_entry.value("extensions", json::array())},
            {"candidate_py", memo_entry.value("candidate_py", "")}};
  for (const auto& rec : b.memo["extensions"]) {
    const std::string ext = rec.value("key", ""), so = fs::path(rec.value("so", "")).filename().string();
    if (!valid_ext_key(ext) || so.empty()) return std::nullopt;
    auto bytes = read_file_if_any(ext_cache / ext / so);
    if (!bytes) return std::nullopt;
    b.files.push_back({ext + "/" + so, std::move(*bytes)});
  }
  return b;
}

std::optional<SharedBuild> shared_failure(const std::string& key, const Decision& d, const std::string& detail,
                                          const v1::Result& r) {
  if (!shareable_build_failure(d)) return std::nullopt;
  SharedBuild b;
  b.key = key;
  b.failed = true;
  b.verdict = d.verdict;
  b.message = d.message;
  b.detail = detail;
  v1::Result partial;
  *partial.mutable_compile() = r.compile();
  *partial.mutable_legality() = r.legality();
  partial.set_stage_reached(r.stage_reached());
  partial.set_cheat_class(r.cheat_class());  // a static-policy CHEAT's class
  // no phase times: they are the builder's, and a job that replays the failure built nothing
  b.partial_result = partial.SerializeAsString();
  return b;
}

bool install_shared(const SharedBuild& b, const fs::path& ext_cache, const BuildMemo& memo) {
  std::map<std::string, std::vector<const BuildFile*>> by_ext;
  for (const auto& f : b.files) {
    if (!valid_file_path(f.path)) return false;
    by_ext[f.path.substr(0, 32)].push_back(&f);
  }
  for (const auto& [ext, files] : by_ext)
    if (!install_ext(ext_cache / ext, files)) return false;
  memo.adopt(b.memo);
  return true;
}

Decision replay_failure(const SharedBuild& b, v1::Result& r, std::string& detail) {
  v1::Result partial;
  if (partial.ParseFromString(b.partial_result)) {
    *r.mutable_compile() = partial.compile();
    for (const auto& flag : partial.legality().flags()) r.mutable_legality()->add_flags(flag);
    r.set_stage_reached(partial.stage_reached());  // not its phase times (an older builder's artifact has them)
    if (partial.cheat_class() != v1::CHEAT_CLASS_UNSPECIFIED) r.set_cheat_class(partial.cheat_class());
  }
  detail = b.detail;
  return replayed_build_failure(b.verdict, b.message);
}

namespace {

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string from_hex(const std::string& hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  if (hex.size() % 2 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return out;
  for (std::size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1]));
  return out;
}

}  // namespace

json failure_entry(const SharedBuild& b) {
  return {{"failed", true}, {"verdict", b.verdict}, {"message", b.message}, {"detail", b.detail},
          {"partial_result", to_hex(b.partial_result)}};
}

SharedBuild failure_from_entry(const json& entry) {
  SharedBuild b;
  b.failed = true;
  b.verdict = entry.value("verdict", 0);
  b.message = entry.value("message", "");
  b.detail = entry.value("detail", "");
  b.partial_result = from_hex(entry.value("partial_result", ""));
  return b;
}

}  // namespace kj
