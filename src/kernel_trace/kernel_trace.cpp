// libkjudge_kernel_trace: the legality trace's kernel recorder, loaded by the candidate harness
// through ctypes (python/kjudge_harness/kernel_recorder.py). CUPTI's callback API only, no
// activity tracing: subscribing costs milliseconds where starting torch.profiler costs seconds.
// The C functions below are its whole interface; none of them throws.
#include <cstdio>
#include <mutex>
#include <string>

#include "kernel_trace/cupti_loader.h"
#include "kernel_trace/launch_callback.h"
#include "kernel_trace/launch_log.h"

namespace {

std::mutex g_mutex;  // start and stop
kjt::Cupti g_cupti;
kjt::SubscriberHandle g_subscriber = nullptr;

int fail(char* err, std::size_t n, const std::string& why) {
  if (err && n) std::snprintf(err, n, "%s", why.c_str());
  return -1;
}

bool enable_all(std::string& why) {
  for (const auto& s : kjt::launch_callbacks()) {
    const auto r = g_cupti.enable_callback(1, g_subscriber, s.domain, s.cbid);
    if (r != kjt::kCuptiSuccess && s.required) {
      why = "cuptiEnableCallback(domain " + std::to_string(s.domain) + ", cbid " + std::to_string(s.cbid) +
            "): " + kjt::cupti_error(g_cupti, r);
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" {

// Starts recording. cupti_path: a libcupti to load when none is loaded yet and the loader
// cannot find one by name (may be null). 0 on success; -1 with a reason in err otherwise.
__attribute__((visibility("default"))) int kjt_start(const char* cupti_path, char* err, std::size_t n) {
  std::lock_guard g(g_mutex);
  if (g_subscriber) return fail(err, n, "the kernel recorder is already started");
  std::string why;
  try {
    if (!kjt::load_cupti(cupti_path, g_cupti, why)) return fail(err, n, why);
    kjt::begin_session(g_cupti);
    const auto r = g_cupti.subscribe(&g_subscriber, kjt::on_callback, nullptr);
    if (r != kjt::kCuptiSuccess) {
      g_subscriber = nullptr;
      kjt::end_session();
      return fail(err, n, "cuptiSubscribe: " + kjt::cupti_error(g_cupti, r));
    }
    if (!enable_all(why)) {
      kjt::end_session();
      g_cupti.unsubscribe(g_subscriber);
      g_subscriber = nullptr;
      return fail(err, n, why);
    }
  } catch (const std::exception& e) {
    return fail(err, n, e.what());
  }
  return 0;
}

// Stops recording and demangles the names. 0 on success, -1 if it was not started or CUPTI
// refused to unsubscribe (the names recorded so far stay readable either way).
__attribute__((visibility("default"))) int kjt_stop(void) {
  std::lock_guard g(g_mutex);
  if (!g_subscriber) return -1;
  kjt::end_session();
  const auto r = g_cupti.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  try {
    kjt::launch_log().demangle_all();
  } catch (...) {
    return -1;
  }
  return r == kjt::kCuptiSuccess ? 0 : -1;
}

// Launches named so far (readable while recording: the harness marks its boundaries with it).
__attribute__((visibility("default"))) int kjt_count(void) { return kjt::launch_log().count(); }

// The i-th launch's kernel name; null while recording or out of range.
__attribute__((visibility("default"))) const char* kjt_name(int i) {
  std::lock_guard g(g_mutex);
  return g_subscriber ? nullptr : kjt::launch_log().name(i);
}

// Launches the recorder saw but could not name (graph launches, nameless functions, overflow).
__attribute__((visibility("default"))) int kjt_unattributed(void) { return kjt::launch_log().unattributed(); }

// The libcupti in use ("" before the first successful load).
__attribute__((visibility("default"))) const char* kjt_cupti_path(void) { return g_cupti.path.c_str(); }

}  // extern "C"
