// A request body checked against its message's shape and the gateway's limits before protobuf
// parses it (and allocates for it): nesting depth, number of values, length of each string, and
// every value's type as the .proto says (a list where a string belongs is refused, never
// flattened). JSON is walked event by event (nlohmann's SAX parser: no tree is built); binary
// protobuf by its wire format. The first fault is returned with the path of the value, as
// "$.jobs[3].trivial.argv[0]".
#pragma once

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kj::gateway {

struct BodyLimits {
  unsigned max_depth = 32;                   // objects, lists and messages inside one another
  std::uint64_t max_elements = 250'000;      // values in all (each field, each list item)
  std::uint64_t max_string_bytes = 1 << 20;  // one string, bytes value or key
};

struct BodyFault {
  std::string path;     // "$" is the body itself
  std::string message;  // for people
  bool too_large = false;  // a string longer than max_string_bytes: no job that holds it fits (413)
};

std::optional<BodyFault> check_json(std::string_view body, const google::protobuf::Descriptor& type,
                                    const BodyLimits& limits);
std::optional<BodyFault> check_protobuf(std::string_view body, const google::protobuf::Descriptor& type,
                                        const BodyLimits& limits);

}  // namespace kj::gateway
