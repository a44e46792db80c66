#include "buildfarm/artifact.h"

#include <charconv>

#include "common/sha256.h"

namespace kj::buildfarm {
using nlohmann::json;

namespace {

constexpr std::string_view kMagic = "kjart1\n";
constexpr std::size_t kHexLen = 64;

std::string body_of(const SharedBuild& b) {
  json files = json::array();
  for (const auto& f : b.files) files.push_back({{"path", f.path}, {"size", f.bytes.size()}});
  const json header = {{"key", b.key},         {"builder", b.builder}, {"memo", b.memo},
                       {"failed", b.failed},   {"verdict", b.verdict}, {"message", b.message},
                       {"detail", b.detail},   {"files", files},       {"partial_size", b.partial_result.size()}};
  const std::string h = header.dump();
  std::string body = std::to_string(h.size()) + "\n" + h + b.partial_result;
  for (const auto& f : b.files) body += f.bytes;
  return body;
}

// Takes `n` bytes at `pos` of `body`, or nullopt when they are not there.
std::optional<std::string> take(std::string_view body, std::size_t& pos, std::uint64_t n) {
  if (n > body.size() - pos) return std::nullopt;
  std::string out(body.substr(pos, n));
  pos += n;
  return out;
}

std::optional<SharedBuild> parse_body(std::string_view body, std::string& why) {
  const auto nl = body.find('\n');
  std::size_t hlen = 0;
  if (nl == std::string_view::npos || std::from_chars(body.data(), body.data() + nl, hlen).ec != std::errc{} ||
      hlen > body.size() - nl - 1)
    return why = "bad header length", std::nullopt;
  const json h = json::parse(body.substr(nl + 1, hlen), nullptr, /*allow_exceptions=*/false);
  if (!h.is_object() || !h.value("files", json()).is_array() || !h.value("memo", json()).is_object())
    return why = "bad header", std::nullopt;
  SharedBuild b;
  b.key = h.value("key", "");
  b.builder = h.value("builder", "");
  b.memo = h["memo"];
  b.failed = h.value("failed", false);
  b.verdict = h.value("verdict", 0);
  b.message = h.value("message", "");
  b.detail = h.value("detail", "");
  std::size_t pos = nl + 1 + hlen;
  auto partial = take(body, pos, h.value("partial_size", std::uint64_t{0}));
  if (!partial) return why = "truncated", std::nullopt;
  b.partial_result = std::move(*partial);
  for (const auto& f : h["files"]) {
    auto bytes = take(body, pos, f.value("size", std::uint64_t{0}));
    if (!bytes || !f.value("path", json()).is_string()) return why = "truncated", std::nullopt;
    b.files.push_back({f["path"].get<std::string>(), std::move(*bytes)});
  }
  if (pos != body.size()) return why = "trailing bytes", std::nullopt;
  return b;
}

}  // namespace

std::string pack_artifact(const SharedBuild& b) {
  const std::string body = body_of(b);
  return std::string(kMagic) + sha256_hex(body) + "\n" + body;
}

std::optional<SharedBuild> unpack_artifact(const std::string& value, const std::string& key, std::uint64_t max_bytes,
                                           std::string& why) {
  if (value.size() > max_bytes) return why = "larger than artifact_max_bytes", std::nullopt;
  const std::size_t head = kMagic.size() + kHexLen + 1;
  if (value.size() < head || value.compare(0, kMagic.size(), kMagic) != 0 || value[head - 1] != '\n')
    return why = "not an artifact", std::nullopt;
  const std::string_view body = std::string_view(value).substr(head);
  if (sha256_hex(body) != value.substr(kMagic.size(), kHexLen)) return why = "sha256 mismatch", std::nullopt;
  try {
    auto b = parse_body(body, why);
    if (b && b->key != key) return why = "artifact of another key", std::nullopt;
    return b;
  } catch (const json::exception& e) {
    return why = std::string("bad header: ") + e.what(), std::nullopt;
  }
}

}  // namespace kj::buildfarm
