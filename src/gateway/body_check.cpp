#include "gateway/body_check.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace kj::gateway {
namespace pb = google::protobuf;

namespace {

// What may stand at one place of a JSON body.
struct Expect {
  enum Kind { Message, List, Map, Scalar, Any } kind = Any;
  const pb::Descriptor* message = nullptr;  // Message
  const pb::FieldDescriptor* field = nullptr;  // List, Map: the field; Scalar: its field (null: a string form)
};

// The well-known types protobuf JSON writes as something other than an object of their fields.
Expect message_expect(const pb::Descriptor* d) {
  const auto& name = d->full_name();
  if (name == "google.protobuf.Timestamp" || name == "google.protobuf.Duration" || name == "google.protobuf.FieldMask")
    return {Expect::Scalar, nullptr, nullptr};
  if (name == "google.protobuf.Struct" || name == "google.protobuf.Value" || name == "google.protobuf.ListValue" ||
      name == "google.protobuf.Any" || (name.rfind("google.protobuf.", 0) == 0 && name.size() > 5 &&
                                        name.compare(name.size() - 5, 5, "Value") == 0))
    return {Expect::Any, nullptr, nullptr};
  return {Expect::Message, d, nullptr};
}

Expect element_expect(const pb::FieldDescriptor* f) {
  if (f->type() == pb::FieldDescriptor::TYPE_MESSAGE || f->type() == pb::FieldDescriptor::TYPE_GROUP)
    return message_expect(f->message_type());
  return {Expect::Scalar, nullptr, f};
}

Expect field_expect(const pb::FieldDescriptor* f) {
  if (f->is_map()) return {Expect::Map, nullptr, f};
  if (f->is_repeated()) return {Expect::List, nullptr, f};
  return element_expect(f);
}

std::string wanted(const Expect& e) {
  switch (e.kind) {
    case Expect::Message: return "an object (" + e.message->name() + ")";
    case Expect::List: return "a list";
    case Expect::Map: return "an object (a map)";
    case Expect::Any: return "a value";
    case Expect::Scalar: break;
  }
  if (!e.field) return "a string";
  switch (e.field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING: return "a string";
    case pb::FieldDescriptor::CPPTYPE_BOOL: return "true or false";
    case pb::FieldDescriptor::CPPTYPE_ENUM: return "an enum name or number";
    default: return "a number";
  }
}

// Protobuf JSON takes a field's name as in the .proto or its lowerCamel json_name.
const pb::FieldDescriptor* field_named(const pb::Descriptor& d, const std::string& key) {
  if (const auto* f = d.FindFieldByName(key)) return f;
  for (int i = 0; i < d.field_count(); ++i)
    if (d.field(i)->json_name() == key) return d.field(i);
  return nullptr;
}

std::string path_key(std::string_view key) {
  return key.size() <= 64 ? std::string(key) : std::string(key.substr(0, 64)) + "...";
}

// nlohmann's SAX interface: each event checked against the expectation at its place.
class JsonWalk {
 public:
  enum class Value { Null, Bool, Number, String, Object, Array };
  JsonWalk(const pb::Descriptor& type, const BodyLimits& limits) : limits_(limits), root_(message_expect(&type)) {}
  std::optional<BodyFault> fault;

  bool null() { return scalar(Value::Null); }
  bool boolean(bool) { return scalar(Value::Bool); }
  bool number_integer(std::int64_t) { return scalar(Value::Number); }
  bool number_unsigned(std::uint64_t) { return scalar(Value::Number); }
  bool number_float(double, const std::string&) { return scalar(Value::Number); }
  bool string(std::string& s) { return long_string(s) && scalar(Value::String); }
  bool binary(nlohmann::json::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (!long_string(k)) return false;
    auto& top = frames_.back();
    path_.resize(top.path_len);
    path_ += "." + path_key(k);
    if (top.expect.kind == Expect::Map) {
      top.next = element_expect(top.expect.field->message_type()->map_value());
    } else if (top.expect.kind == Expect::Any) {
      top.next = {};
    } else {
      const auto* d = top.expect.message;
      const auto* f = field_named(*d, k);
      if (!f) return fail("not a field of " + d->full_name());
      top.next = field_expect(f);
    }
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::json::exception& e) {
    if (!fault) fault = BodyFault{"$", fmt::format("not JSON (byte {}): {}", at, e.what())};
    return false;
  }

 private:
  struct Frame {
    bool list;
    Expect expect;
    std::size_t path_len;
    std::uint64_t index = 0;
    Expect next;  // an object's: what its current key's value must be
  };

  bool fail(std::string message) {
    fault = BodyFault{path_, std::move(message)};
    return false;
  }
  bool long_string(const std::string& s) {
    if (s.size() <= limits_.max_string_bytes) return true;
    fault = BodyFault{path_, fmt::format("a string of {} bytes (at most {})", s.size(), limits_.max_string_bytes), true};
    return false;
  }
  // The expectation of the value that starts now; sets path_ to its place.
  Expect place(bool& in_list) {
    in_list = false;
    if (frames_.empty()) {
      path_ = "$";
      return root_;
    }
    auto& top = frames_.back();
    if (!top.list) return top.next;
    in_list = true;
    path_.resize(top.path_len);
    path_ += fmt::format("[{}]", top.index++);
    if (top.expect.kind == Expect::List) return element_expect(top.expect.field);
    return {};
  }
  bool count() {
    return ++elements_ <= limits_.max_elements ||
           fail(fmt::format("more than {} values in the body", limits_.max_elements));
  }
  bool open(bool list) {
    bool in_list = false;
    const Expect e = place(in_list);
    if (!count()) return false;
    const bool fits = e.kind == Expect::Any || (list ? e.kind == Expect::List : e.kind == Expect::Message || e.kind == Expect::Map);
    if (!fits) return fail(std::string(list ? "a list" : "an object") + " where " + wanted(e) + " belongs");
    if (frames_.size() + 1 > limits_.max_depth)
      return fail(fmt::format("nested more than {} deep", limits_.max_depth));
    frames_.push_back({list, e, path_.size(), 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  bool scalar(Value v) {
    bool in_list = false;
    const Expect e = place(in_list);
    if (!count()) return false;
    if (e.kind == Expect::Any) return true;
    if (v == Value::Null) return !in_list || fail("null in a list");
    if (e.kind != Expect::Scalar) return fail(std::string(kValueName[static_cast<int>(v)]) + " where " + wanted(e) + " belongs");
    return scalar_fits(e, v) || fail(std::string(kValueName[static_cast<int>(v)]) + " where " + wanted(e) + " belongs");
  }
  static bool scalar_fits(const Expect& e, Value v) {
    if (!e.field) return v == Value::String;
    switch (e.field->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_STRING: return v == Value::String;
      case pb::FieldDescriptor::CPPTYPE_BOOL: return v == Value::Bool;
      default: return v == Value::Number || v == Value::String;  // proto3 JSON: "12" is a number too
    }
  }
  static constexpr const char* kValueName[] = {"null", "true or false", "a number", "a string", "an object", "a list"};

  const BodyLimits& limits_;
  const Expect root_;
  std::vector<Frame> frames_;
  std::string path_ = "$";
  std::uint64_t elements_ = 0;
};

// Binary protobuf: each field of the wire format against the descriptor, without parsing it.
class WireWalk {
 public:
  WireWalk(std::string_view body, const BodyLimits& limits)
      : in_(reinterpret_cast<const std::uint8_t*>(body.data()), static_cast<int>(body.size())), limits_(limits) {
    in_.PushLimit(static_cast<int>(body.size()));
  }

  std::optional<BodyFault> message(const pb::Descriptor& type, unsigned depth, const std::string& path) {
    std::map<int, std::uint64_t> seen;  // repeated fields: the index of the next one
    for (;;) {
      const std::uint32_t tag = in_.ReadTag();
      if (tag == 0) {
        if (in_.ConsumedEntireMessage()) return std::nullopt;  // the end of the body, or of this message's length
        return BodyFault{path, "not a serialized " + type.full_name()};
      }
      const int number = static_cast<int>(tag >> 3);
      const auto* f = type.FindFieldByNumber(number);
      if (!f) return BodyFault{path, fmt::format("field number {} is not a field of {}", number, type.full_name())};
      const std::string at = f->is_repeated() ? fmt::format("{}.{}[{}]", path, f->name(), seen[number]++)
                                              : path + "." + f->name();
      if (++elements_ > limits_.max_elements)
        return BodyFault{at, fmt::format("more than {} values in the body", limits_.max_elements)};
      if (auto fault = field(*f, tag & 7, depth, at)) return fault;
    }
  }

 private:
  using Lite = pb::internal::WireFormatLite;

  std::optional<BodyFault> field(const pb::FieldDescriptor& f, std::uint32_t wire, unsigned depth,
                                 const std::string& at) {
    const auto natural = Lite::WireTypeForFieldType(static_cast<Lite::FieldType>(f.type()));
    const bool packed = f.is_packable() && wire == Lite::WIRETYPE_LENGTH_DELIMITED;
    if (wire != static_cast<std::uint32_t>(natural) && !packed)
      return BodyFault{at, fmt::format("wire type {} where {} ({}) belongs", wire, static_cast<int>(natural), f.type_name())};
    if (f.type() == pb::FieldDescriptor::TYPE_GROUP) return BodyFault{at, "groups are not part of the contract"};
    if (wire != Lite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint64_t skip = 0;
      const bool ok = wire == Lite::WIRETYPE_VARINT ? in_.ReadVarint64(&skip) : in_.Skip(wire == Lite::WIRETYPE_FIXED32 ? 4 : 8);
      return ok ? std::nullopt : std::optional<BodyFault>(BodyFault{at, "truncated"});
    }
    std::uint32_t length = 0;
    if (!in_.ReadVarint32(&length) || static_cast<std::int64_t>(length) > in_.BytesUntilLimit())
      return BodyFault{at, "a length past the end of the body"};
    if (packed) {  // each element is at least one byte (varint), four or eight (fixed)
      const auto width = natural == Lite::WIRETYPE_FIXED32 ? 4 : natural == Lite::WIRETYPE_FIXED64 ? 8 : 1;
      elements_ += length / width;
      if (elements_ > limits_.max_elements)
        return BodyFault{at, fmt::format("more than {} values in the body", limits_.max_elements)};
      in_.Skip(static_cast<int>(length));
      return std::nullopt;
    }
    if (f.type() != pb::FieldDescriptor::TYPE_MESSAGE) {
      if (length > limits_.max_string_bytes)
        return BodyFault{at, fmt::format("a string of {} bytes (at most {})", length, limits_.max_string_bytes), true};
      in_.Skip(static_cast<int>(length));
      return std::nullopt;
    }
    if (depth + 2 > limits_.max_depth)  // the body's message is 1 deep, as JSON's outer object
      return BodyFault{at, fmt::format("nested more than {} deep", limits_.max_depth)};
    const auto limit = in_.PushLimit(static_cast<int>(length));
    auto fault = message(*f.message_type(), depth + 1, at);
    in_.PopLimit(limit);
    return fault;
  }

  pb::io::CodedInputStream in_;
  const BodyLimits& limits_;
  std::uint64_t elements_ = 0;
};

}  // namespace

std::optional<BodyFault> check_json(std::string_view body, const pb::Descriptor& type, const BodyLimits& limits) {
  JsonWalk walk(type, limits);
  const bool ok = nlohmann::json::sax_parse(body.begin(), body.end(), &walk, nlohmann::json::input_format_t::json, true);
  if (walk.fault) return walk.fault;
  if (!ok) return BodyFault{"$", "not JSON"};
  return std::nullopt;
}

std::optional<BodyFault> check_protobuf(std::string_view body, const pb::Descriptor& type, const BodyLimits& limits) {
  WireWalk walk(body, limits);
  return walk.message(type, 0, "$");  // (the constructor limits the stream to the body: lengths are checked against it)
}

}  // namespace kj::gateway
