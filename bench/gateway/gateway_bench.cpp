// Trivial submissions through kjudge-gateway beside direct Redis submission (FCALL kj_submit), in
// one run, alternating rounds: jobs/s and per-submission latency (p50, p99, max) for each path, and
// the gateway's added latency (gateway percentile minus direct percentile). Each of `threads`
// clients submits its share back to back (closed loop): an HTTP keep-alive connection to the
// gateway, or a Redis connection of its own (libkjqueue, as kjudge submit and kjudged use).
//   gateway_bench --gateway 127.0.0.1:8480 --redis unix:///tmp/r.sock --jobs 20000 --threads 4 --rounds 2
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <iostream>
#include <thread>
#include <vector>

#include "gateway/tokens.h"
#include "kjqueue/queue.h"
#include "kjudge/v1/job.pb.h"

namespace {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr const char* kTenant = "bench";

std::string trivial_job(const std::string& job_id) {
  kjudge::v1::Job job;
  job.set_job_id(job_id);
  job.set_tenant(kTenant);
  job.mutable_trivial()->add_argv("/bin/true");
  return job.SerializeAsString();
}

// One client's submissions; returns each one's latency in microseconds.
using Submitter = std::function<void(const std::string& job_id, const std::string& payload)>;

std::vector<double> timed_submissions(const Submitter& submit, const std::string& prefix, std::size_t n) {
  std::vector<double> latencies;
  latencies.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string id = fmt::format("{}-{}", prefix, i);
    const std::string payload = trivial_job(id);
    const auto t0 = Clock::now();
    submit(id, payload);
    latencies.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return latencies;
}

class GatewayConnection {
 public:
  GatewayConnection(const std::string& host, const std::string& port, std::string token)
      : stream_(ioc_), token_(std::move(token)) {
    tcp::resolver resolver(ioc_);
    stream_.connect(resolver.resolve(host, port));
    stream_.socket().set_option(tcp::no_delay(true));
  }
  void submit(const std::string&, const std::string& payload) {
    http::request<http::string_body> req{http::verb::post, "/v1/jobs", 11};
    req.set(http::field::host, "gateway");
    req.set(http::field::authorization, "Bearer " + token_);
    req.set(http::field::content_type, "application/x-protobuf");
    req.body() = payload;
    req.prepare_payload();
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buffer_, res);
    if (res.result_int() != 202) throw std::runtime_error(fmt::format("gateway: {} {}", res.result_int(), res.body()));
  }

 private:
  boost::asio::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string token_;
};

struct RoundResult {
  double seconds = 0;
  std::vector<double> latencies_us;
};

RoundResult run_round(std::size_t jobs, unsigned threads, const std::function<Submitter(unsigned)>& make_client,
                      const std::string& prefix) {
  std::vector<std::vector<double>> per_thread(threads);
  std::vector<Submitter> clients;
  for (unsigned t = 0; t < threads; ++t) clients.push_back(make_client(t));  // connected before the clock starts
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { per_thread[t] = timed_submissions(clients[t], fmt::format("{}-{}", prefix, t), jobs / threads); });
  for (auto& th : pool) th.join();
  RoundResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& v : per_thread) r.latencies_us.insert(r.latencies_us.end(), v.begin(), v.end());
  std::sort(r.latencies_us.begin(), r.latencies_us.end());
  return r;
}

double percentile(const std::vector<double>& sorted, double p) {
  return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(p * static_cast<double>(sorted.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gateway_bench: submissions through kjudge-gateway vs direct Redis"};
  std::string gateway = "127.0.0.1:8480", redis_url, token;
  std::size_t jobs = 20000;
  unsigned threads = 4, rounds = 2;
  app.add_option("--gateway", gateway, "host:port of kjudge-gateway");
  app.add_option("--redis", redis_url, "the Redis the gateway writes to")->required();
  app.add_option("--token", token, "API token of tenant 'bench' (default: create one)");
  app.add_option("--jobs", jobs, "submissions per path and round");
  app.add_option("--threads", threads, "concurrent clients per path");
  app.add_option("--rounds", rounds, "direct, then gateway, this many times");
  CLI11_PARSE(app, argc, argv);
  kjqueue::Endpoint endpoint;
  endpoint.url = redis_url;
  if (token.empty()) {
    kjqueue::Queue admin(endpoint);
    token = kj::gateway::create_token(admin, kTenant);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the gateway's token refresh
  }
  const auto colon = gateway.rfind(':');
  const std::string host = gateway.substr(0, colon), port = gateway.substr(colon + 1);
  auto direct = [&](unsigned) {
    auto q = std::make_shared<kjqueue::Queue>(endpoint);
    return Submitter([q](const std::string& id, const std::string& payload) { q->submit(kTenant, id, payload, {}); });
  };
  auto via_gateway = [&](unsigned) {
    auto c = std::make_shared<GatewayConnection>(host, port, token);
    return Submitter([c](const std::string& id, const std::string& payload) { c->submit(id, payload); });
  };
  fmt::print("{:<8} {:>5} {:>7} {:>8} {:>10} {:>9} {:>9} {:>9}\n", "path", "round", "jobs", "threads", "jobs/s",
             "p50 us", "p99 us", "max us");
  std::vector<RoundResult> d, g;
  for (unsigned round = 0; round < rounds; ++round) {
    for (auto [name, make, out] : {std::tuple{"direct", std::function<Submitter(unsigned)>(direct), &d},
                                   std::tuple{"gateway", std::function<Submitter(unsigned)>(via_gateway), &g}}) {
      auto r = run_round(jobs, threads, make, fmt::format("{}-r{}", name, round));
      fmt::print("{:<8} {:>5} {:>7} {:>8} {:>10.0f} {:>9.0f} {:>9.0f} {:>9.0f}\n", name, round, r.latencies_us.size(),
                 threads, static_cast<double>(r.latencies_us.size()) / r.seconds, percentile(r.latencies_us, 0.5),
                 percentile(r.latencies_us, 0.99), r.latencies_us.back());
      out->push_back(std::move(r));
    }
  }
  auto pooled = [](const std::vector<RoundResult>& rs) {
    std::vector<double> all;
    double seconds = 0;
    for (const auto& r : rs) {
      all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
      seconds += r.seconds;
    }
    std::sort(all.begin(), all.end());
    return std::pair{all, static_cast<double>(all.size()) / seconds};
  };
  const auto [dl, drate] = pooled(d);
  const auto [gl, grate] = pooled(g);
  fmt::print("\nall rounds: direct {:.0f} jobs/s, gateway {:.0f} jobs/s ({:.0f}% of direct)\n", drate, grate,
             100 * grate / drate);
  fmt::print("added latency (gateway - direct): p50 {:.0f} us, p99 {:.0f} us\n", percentile(gl, 0.5) - percentile(dl, 0.5),
             percentile(gl, 0.99) - percentile(dl, 0.99));
  return 0;
}
