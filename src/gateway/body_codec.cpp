#include "gateway/body_codec.h"

#include <google/protobuf/util/json_util.h>

namespace kj::gateway {
namespace {

std::string_view media_type_only(std::string_view value) {
  value = value.substr(0, value.find(';'));
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return value;
}

}  // namespace

std::optional<BodyFormat> body_format(std::string_view media_type) {
  const auto t = media_type_only(media_type);
  if (t == "application/json") return BodyFormat::Json;
  if (t == "application/x-protobuf" || t == "application/protobuf") return BodyFormat::Protobuf;
  return std::nullopt;
}

BodyFormat reply_format(std::string_view accept) {
  return accept.find("protobuf") != std::string_view::npos ? BodyFormat::Protobuf : BodyFormat::Json;
}

std::optional<BodyFault> decode(std::string_view body, BodyFormat format, google::protobuf::Message& out,
                                const BodyLimits& limits) {
  const auto& type = *out.GetDescriptor();
  if (format == BodyFormat::Json) {
    if (auto fault = check_json(body, type, limits)) return fault;
    const auto status = google::protobuf::util::JsonStringToMessage(body, &out);  // unknown fields: an error
    if (!status.ok()) return BodyFault{"$", "not a " + out.GetTypeName() + " in protobuf JSON: " + status.ToString()};
    return std::nullopt;
  }
  if (auto fault = check_protobuf(body, type, limits)) return fault;
  if (!out.ParseFromArray(body.data(), static_cast<int>(body.size())))
    return BodyFault{"$", "not a serialized " + out.GetTypeName()};
  if (!out.GetReflection()->GetUnknownFields(out).empty())
    return BodyFault{"$", "a serialized " + out.GetTypeName() + " with fields it does not have (another message?)"};
  return std::nullopt;
}

std::string encode(const google::protobuf::Message& message, BodyFormat format) {
  if (format == BodyFormat::Protobuf) return message.SerializeAsString();
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string_view content_type(BodyFormat format) {
  return format == BodyFormat::Protobuf ? "application/x-protobuf" : "application/json";
}

}  // namespace kj::gateway
