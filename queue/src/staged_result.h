// A result held back until a replica has it (Queue::complete with replica acks): what kj_complete
// will file, in one string so that SET NX GET keeps the first one whole.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kjqueue::detail {

struct StagedResult {
  std::string verdict, dead_reason, group;
  std::uint32_t turn = 0;
  std::string result;  // serialized kjudge.v1.Result
};

std::string encode(const StagedResult& s);
// nullopt when the text is not one encode() wrote (a key written by hand): the caller files its own.
std::optional<StagedResult> decode_staged(const std::string& text);

}  // namespace kjqueue::detail
