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

// Marks, in the runtime call's correlation data, that its entry recorded the launch.
constexpr std::uint64_t kRecordedMark = 0x6b6a742d72656364ull;

template <std::size_t N>
bool in(const CallbackId (&set)[N], CallbackId cbid) {
  return std::find(std::begin(set), std::end(set), cbid) != std::end(set);
}

// Depth of runtime launches this thread is inside (that recorded their launch), this session.
int& runtime_depth() {
  thread_local std::uint64_t generation = 0;
  thread_local int depth = 0;
  const auto now = g_generation.load(std::memory_order_acquire);
  if (generation != now) generation = now, depth = 0;
  return depth;
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

void on_runtime(CallbackId cbid, const CallbackData& cb) {
  if (cb.callbackSite == kApiExit) {
    if (cb.correlationData && *cb.correlationData == kRecordedMark && runtime_depth() > 0) --runtime_depth();
    return;
  }
  if (in(kRuntimeGraphLaunch, cbid) || cbid == kRuntimeMultiDevice)
    launch_log().add_unattributed();
  else if (cb.symbolName && *cb.symbolName)
    launch_log().add(cb.symbolName);
  else
    return;  // the driver callback beneath names it
  if (cb.correlationData) *cb.correlationData = kRecordedMark;
  ++runtime_depth();
}

void on_driver(CallbackId cbid, const CallbackData& cb) {
  if (cb.callbackSite != kApiEnter || runtime_depth() > 0) return;
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
