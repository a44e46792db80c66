// libFuzzer: any bytes on a tenant's stream, through what kjudged does with them before judging
// (decode_for_judge, then expiry, the queue-wait metric, the log line). Crashes, aborts (a
// protobuf CHECK), uncaught exceptions, ASan/UBSan reports and broken invariants all fail it.
// Run by scripts/test for a bounded time over a corpus from make_corpus.py.
#include <google/protobuf/stubs/logging.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "common/job_clock.h"
#include "daemon/metrics.h"
#include "pipeline/job/validate.h"

namespace {
namespace v1 = kjudge::v1;

google::protobuf::Timestamp now() {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  google::protobuf::Timestamp t;
  t.set_seconds(ns / 1'000'000'000);
  t.set_nanos(static_cast<int>(ns % 1'000'000'000));
  return t;
}

void fail_if(bool broken) {
  if (broken) __builtin_trap();
}

// The daemon's job.done line: client strings through nlohmann::json as kj::log::emit writes them.
void log_line(const std::string& job_id, const std::string& tenant, const std::string& message) {
  nlohmann::json line = {{"event", "job.done"}, {"job_id", job_id}, {"tenant", tenant}, {"message", message}};
  fail_if(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).empty());
}

// What Daemon::process() (src/daemon/job_slot.cpp) does with a job that decoded.
void use_decoded(const v1::Job& job, kj::Metrics& metrics) {
  const auto t = now();
  (void)kj::deadline_passed(job, t);
  if (auto wait = kj::queue_wait_seconds(job, t)) {
    fail_if(!(*wait >= 0));
    metrics.queue_wait.observe(*wait);
  }
  log_line(job.job_id(), job.tenant(), "");
  // what decoded is what judge() accepts: it re-validates and must agree
  if (job.task_case() != v1::Job::kTrivial) fail_if(kj::validate_job(job, kj::LimitsConfig{}).has_value());
}

}  // namespace

// protobuf logs every string field with invalid UTF-8 (an ERROR, not fatal): silenced, or the fuzzer
// spends its time writing them. A FATAL log (a CHECK) still aborts.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static kj::Metrics metrics;
  const std::string payload(reinterpret_cast<const char*>(data), size);
  for (const bool allow_switches : {false, true}) {
    kj::TestingConfig testing;
    testing.allow_trivial_switches = allow_switches;
    for (const char* tenant : {"", "t"}) {
      auto decoded = kj::decode_for_judge(payload, tenant, kj::LimitsConfig{}, testing);
      if (auto* bad = std::get_if<kj::InvalidJob>(&decoded)) {
        fail_if(bad->message.empty());
        log_line("entry", tenant, bad->message);
      } else {
        use_decoded(std::get<v1::Job>(decoded), metrics);
      }
    }
  }
  return 0;
}
