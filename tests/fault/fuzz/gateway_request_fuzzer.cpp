// libFuzzer: any bytes a stranger or a tenant sends kjudge-gateway, through what the gateway does
// with them before Redis: Beast's request parser under the gateway's limits, the bearer token,
// the media type, and the body checked (gateway/body_check.h) and decoded as a Job and as a
// SubmitBatch, in JSON and in binary protobuf. The first byte picks raw HTTP or a bare body.
// Crashes, ASan/UBSan reports, timeouts, more memory than -rss_limit_mb, and broken invariants
// (a decoded message far larger than its body) all fail it.
// Run by scripts/fuzz (scripts/test) for a bounded time over a corpus from make_gateway_corpus.py.
#include <boost/beast/http.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/body_codec.h"
#include "gateway/tokens.h"
#include "kjudge/v1/gateway.pb.h"
#include "kjudge/v1/job.pb.h"

namespace {
namespace http = boost::beast::http;
namespace v1 = kjudge::v1;

constexpr kj::gateway::BodyLimits kLimits{32, 250'000, 1 << 20};

void fail_if(bool broken) {
  if (broken) __builtin_trap();
}

void decode_body(std::string_view body, kj::gateway::BodyFormat format) {
  v1::Job job;
  if (!kj::gateway::decode(body, format, job, kLimits)) {
    fail_if(job.ByteSizeLong() > body.size() * 8 + 64);  // nothing grew from nothing
    (void)kj::gateway::encode(job, format);
  }
  v1::SubmitBatch batch;
  if (!kj::gateway::decode(body, format, batch, kLimits)) fail_if(batch.jobs_size() > kLimits.max_elements);
}

void parse_request(std::string_view bytes) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(8 * 1024);
  parser.body_limit(1 << 20);
  boost::beast::error_code ec;
  std::size_t used = 0;
  while (!ec && used < bytes.size() && !parser.is_done())
    used += parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
  if (ec == http::error::need_more) ec = {};
  // The peer closed here. Like http::read: an end of stream before any byte is no message at all
  // (put_eof asserts got_some()), after some bytes the parser decides whether the message ends.
  if (!ec && !parser.is_done()) {
    if (!parser.got_some()) return;
    parser.put_eof(ec);
  }
  if (ec || !parser.is_done()) return;
  const auto& req = parser.get();
  const auto auth = req[http::field::authorization];
  const auto token = kj::gateway::bearer_token(std::string_view(auth.data(), auth.size()));
  fail_if(token.size() > auth.size());
  const auto media = req[http::field::content_type];
  if (const auto format = kj::gateway::body_format(std::string_view(media.data(), media.size())))
    decode_body(req.body(), *format);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: parse_request(rest); break;
    case 1: decode_body(rest, kj::gateway::BodyFormat::Json); break;
    default: decode_body(rest, kj::gateway::BodyFormat::Protobuf); break;
  }
  return 0;
}
