#include "staged_result.h"

#include <charconv>
#include <string_view>

namespace kjqueue::detail {
namespace {

constexpr std::string_view kMagic = "kjstage1:";

// <decimal length>:<bytes>
void put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

std::optional<std::string> take(std::string_view& in) {
  const auto colon = in.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(in.data(), in.data() + colon, n);
  if (ec != std::errc{} || p != in.data() + colon || n > in.size() - colon - 1) return std::nullopt;
  std::string field(in.substr(colon + 1, n));
  in.remove_prefix(colon + 1 + n);
  return field;
}

}  // namespace

std::string encode(const StagedResult& s) {
  std::string out(kMagic);
  for (std::string_view f : {std::string_view(s.verdict), std::string_view(s.dead_reason), std::string_view(s.group)})
    put(out, f);
  put(out, std::to_string(s.turn));
  put(out, s.result);
  return out;
}

std::optional<StagedResult> decode_staged(const std::string& text) {
  std::string_view in(text);
  if (in.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  in.remove_prefix(kMagic.size());
  StagedResult s;
  auto verdict = take(in), dead = take(in), group = take(in), turn = take(in), result = take(in);
  if (!verdict || !dead || !group || !turn || !result || !in.empty()) return std::nullopt;
  std::uint32_t t = 0;
  auto [p, ec] = std::from_chars(turn->data(), turn->data() + turn->size(), t);
  if (ec != std::errc{} || p != turn->data() + turn->size()) return std::nullopt;
  s.verdict = std::move(*verdict);
  s.dead_reason = std::move(*dead);
  s.group = std::move(*group);
  s.turn = t;
  s.result = std::move(*result);
  return s;
}

}  // namespace kjqueue::detail
