#include "kernel_trace/launch_callback.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "kernel_trace/launch_log.h"

namespace kjt {
namespace {

std::atomic<bool> g_active{false};
std::atomic<std::uint64_t> g_generation{0};
const Cupti* g_cupti = nullptr;

// Marks, in a runtime call's correlation data, what its entry did: recorded the launch itself,
// or left it to the driver callback beneath.
constexpr std::uint64_t kRecordedMark = 0x6b6a742d72656364ull;
constexpr std::uint64_t kPendingMark = 0x6b6a742d70656e64ull;

template <std::size_t N>
bool in(const CallbackId (&set)[N], CallbackId cbid) {
  return std::find(std::begin(set), std::end(set), cbid) != std::end(set);
}

// This thread, this session: how many runtime launches it is inside that recorded their launch
// (the driver call beneath is skipped), and whether a driver launch callback has fired.
struct ThreadState {
  std::uint64_t generation = 0;
  int depth = 0;
  bool driver_seen = false;
};

ThreadState& thread_state() {
  thread_local ThreadState t;
  const auto now = g_generation.load(std::memory_order_acquire);
  if (t.generation != now) t = ThreadState{now, 0, false};
  return t;
}

void record(const char* symbol, CUfunction f) {
  const char* name = symbol;
  if ((!name || !*name) && f && g_cupti->func_get_name && g_cupti->func_get_name(&name, f) != 0) name = nullptr;
  if (name && *name)
    launch_log().add(name);
  else
    launch_log().add_unattributed();
}

void record_multi_device(const void* params) {
  const auto* p = static_cast<const MultiDeviceParams*>(params);
  if (!p || !p->launchParamsList || !p->numDevices) return launch_log().add_unattributed();
  for (unsigned i = 0; i < p->numDevices; ++i) record(nullptr, p->launchParamsList[i].function);
}

void on_runtime_exit(const CallbackData& cb) {
  ThreadState& t = thread_state();
  const std::uint64_t mark = cb.correlationData ? *cb.correlationData : 0;
  if (mark == kRecordedMark && t.depth > 0) --t.depth;
  // left to the driver, and no driver launch callback came: a launch nobody named
  if (mark == kPendingMark && !t.driver_seen) launch_log().add_unattributed();
}

void on_runtime(CallbackId cbid, const CallbackData& cb) {
  if (cb.callbackSite == kApiExit) return on_runtime_exit(cb);
  ThreadState& t = thread_state();
  std::uint64_t mark = kRecordedMark;
  if (in(kRuntimeGraphLaunch, cbid) || cbid == kRuntimeMultiDevice)
    launch_log().add_unattributed();
  else if (cb.symbolName && *cb.symbolName)
    launch_log().add(cb.symbolName);
  else
    mark = kPendingMark;
  if (cb.correlationData) *cb.correlationData = mark;
  if (mark == kRecordedMark)
    ++t.depth;
  else
    t.driver_seen = false;
}

void on_driver(CallbackId cbid, const CallbackData& cb) {
  if (cb.callbackSite != kApiEnter) return;
  ThreadState& t = thread_state();
  t.driver_seen = true;
  if (t.depth > 0) return;
  const void* params = cb.functionParams;
  if (in(kDriverGraphLaunch, cbid)) return launch_log().add_unattributed();
  if (cbid == kDriverMultiDevice) return record_multi_device(params);
  if (in(kDriverFirstArgFunction, cbid))
    return record(cb.symbolName, params ? *static_cast<const CUfunction*>(params) : nullptr);
  if (in(kDriverLaunchEx, cbid))
    return record(cb.symbolName, params ? static_cast<const CUfunction*>(params)[1] : nullptr);
}

template <std::size_t N>
void add_all(std::vector<EnableSpec>& out, Domain d, const CallbackId (&set)[N], bool required) {
  for (CallbackId c : set) out.push_back({d, c, required});
}

}  // namespace

std::vector<EnableSpec> launch_callbacks() {
  std::vector<EnableSpec> out;
  add_all(out, kDomainDriver, kDriverFirstArgFunction, true);
  add_all(out, kDomainDriver, kDriverLaunchEx, true);
  add_all(out, kDomainDriver, kDriverGraphLaunch, true);
  out.push_back({kDomainDriver, kDriverMultiDevice, true});
  add_all(out, kDomainRuntime, kRuntimeGraphLaunch, true);
  // the runtime's own launch entry points: the first four exist in every CUDA 12 and 13 runtime
  for (std::size_t i = 0; i < std::size(kRuntimeKernelLaunch); ++i)
    out.push_back({kDomainRuntime, kRuntimeKernelLaunch[i], i >= 2 && i < 4});
  out.push_back({kDomainRuntime, kRuntimeMultiDevice, false});
  return out;
}

void begin_session(const Cupti& cupti) {
  g_cupti = &cupti;
  launch_log().reset();
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_active.store(true, std::memory_order_release);
}

void end_session() { g_active.store(false, std::memory_order_release); }

void on_callback(void*, Domain domain, CallbackId cbid, const void* cbdata) {
  if (!g_active.load(std::memory_order_acquire) || !cbdata) return;
  try {
    const auto& cb = *static_cast<const CallbackData*>(cbdata);
    if (domain == kDomainRuntime) on_runtime(cbid, cb);
    if (domain == kDomainDriver) on_driver(cbid, cb);
  } catch (...) {
    // out of memory inside the driver's call: the launch cannot be named
    launch_log().add_unattributed();
  }
}

}  // namespace kjt
