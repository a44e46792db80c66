// Request and reply bodies: protobuf JSON (application/json) or binary protobuf
// (application/x-protobuf) of the kjudge.v1 messages, the same contract as the queue.
#pragma once

#include <google/protobuf/message.h>

#include <optional>
#include <string>
#include <string_view>

namespace kj::gateway {

enum class BodyFormat { Json, Protobuf };

// From a Content-Type (or Accept) value; nullopt for anything else. Parameters (charset) ignored.
std::optional<BodyFormat> body_format(std::string_view media_type);
// Accept: binary protobuf only when asked for; JSON otherwise.
BodyFormat reply_format(std::string_view accept);

// Fills `out`; on failure returns the reason (bad JSON, unknown field, not a protobuf, ...).
std::optional<std::string> decode(std::string_view body, BodyFormat format, google::protobuf::Message& out);
std::string encode(const google::protobuf::Message& message, BodyFormat format);
std::string_view content_type(BodyFormat format);

}  // namespace kj::gateway
