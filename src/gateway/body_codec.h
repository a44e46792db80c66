// Request and reply bodies: protobuf JSON (application/json) or binary protobuf
// (application/x-protobuf) of the kjudge.v1 messages, the same contract as the queue.
#pragma once

#include <google/protobuf/message.h>

#include <optional>
#include <string>
#include <string_view>

#include "gateway/body_check.h"

namespace kj::gateway {

enum class BodyFormat { Json, Protobuf };

// From a Content-Type (or Accept) value; nullopt for anything else. Parameters (charset) ignored.
std::optional<BodyFormat> body_format(std::string_view media_type);
// Accept: binary protobuf only when asked for; JSON otherwise.
BodyFormat reply_format(std::string_view accept);

// Fills `out` once the body passed check_json / check_protobuf (gateway/body_check.h) under
// `limits`; on failure returns the reason and where (bad JSON, unknown field, a value of the wrong
// type, past a limit, not a protobuf, ...).
std::optional<BodyFault> decode(std::string_view body, BodyFormat format, google::protobuf::Message& out,
                                const BodyLimits& limits = {});
std::string encode(const google::protobuf::Message& message, BodyFormat format);
std::string_view content_type(BodyFormat format);

}  // namespace kj::gateway
