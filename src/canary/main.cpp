// kjudge-canary [--device N] [--timeout-ms MS] [--sync-timeout-ms MS] [--driver-library LIB]
//               [--print-ptx]
// kjudged runs this inside a GPU sandbox after a job that used the GPU ended in a device fault, a
// timeout or a kill (design §7): a tiny kernel and a memset/memcpy round trip through the CUDA
// driver API, every result checked. It prints one JSON line on stdout and exits with a code from
// canary/exit_codes.h, so a GPU that is wedged, lost or corrupting data keeps no more jobs.
//
// Every wait is bounded: the kernel and the memset are polled (cuEventQuery) against
// --sync-timeout-ms, and a watchdog thread ends the process with kTimeout if any step (cuInit, a
// blocking copy, the JIT) is still running after --timeout-ms. A wedged GPU makes the canary fail,
// not hang; a process that cannot even exit is the sandbox's wall limit and the daemon's problem.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "canary/ptx.h"
#include "canary/exit_codes.h"
#include "runner/cuda_driver.h"
#include "runner/error.h"

#if defined(__SANITIZE_ADDRESS__)
// Sanitizer builds (-DKJUDGE_SANITIZE=ON): the CUDA driver maps the low address range ASan keeps
// as its shadow gap (cuInit fails without protect_shadow_gap=0); LeakSanitizer needs ptrace, which
// the sandbox denies; and a crash in the driver should end the process with its signal.
extern "C" const char* __asan_default_options() {
  return "protect_shadow_gap=0:detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0";
}
#endif

namespace {

using Clock = std::chrono::steady_clock;
using kjudge::runner::CudaDriver;
namespace cu = kjudge::runner::cu;
namespace canary = kjudge::canary;

// CUresult values the canary tells apart (cuda.h).
constexpr cu::Result kErrNotInitialized = 3;
constexpr cu::Result kErrStubLibrary = 34;
constexpr cu::Result kErrInsufficientDriver = 35;
constexpr cu::Result kErrNoDevice = 100;
constexpr cu::Result kErrNotReady = 600;
constexpr cu::Result kErrSystemDriverMismatch = 803;
constexpr unsigned kEventDisableTiming = 0x2;

// Sizes: a few MiB, enough to touch many pages and all SMs, small enough to take milliseconds.
constexpr unsigned kElements = (1u << 19) + 13;  // odd tail: the bounds check runs too
constexpr std::size_t kScratchBytes = 4u << 20;

// The driver's name for `r`; the few codes the canary tells apart also by their cuda.h names,
// because the toolkit's stub libcuda answers cuGetErrorName with an error of its own.
std::string error_name(const CudaDriver& d, cu::Result r) {
  std::string n = d.error_name(r);
  if (n.rfind("CUresult ", 0) != 0) return n;
  switch (r) {
    case kErrNotInitialized: return "CUDA_ERROR_NOT_INITIALIZED";
    case kErrStubLibrary: return "CUDA_ERROR_STUB_LIBRARY";
    case kErrInsufficientDriver: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case kErrNoDevice: return "CUDA_ERROR_NO_DEVICE";
    case kErrNotReady: return "CUDA_ERROR_NOT_READY";
    case kErrSystemDriverMismatch: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    default: return n;
  }
}

// One JSON line, one exit code, whoever gets there first (main or the watchdog).
std::atomic<bool> g_reported{false};
std::atomic<const char*> g_step{"start"};
Clock::time_point g_start;
int g_device = 0;

[[noreturn]] void finish(int code, const std::string& error, const std::string& detail, const std::string& name = {}) {
  if (g_reported.exchange(true)) {
    for (;;) pause();  // the other reporter is about to _exit
  }
  nlohmann::json j = {
      {"ok", code == canary::kHealthy},
      {"code", code},
      {"result", canary::result_name(code)},
      {"step", g_step.load()},
      {"error", error},
      {"detail", detail},
      {"device", g_device},
      {"elapsed_ms", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - g_start).count()},
  };
  if (!name.empty()) j["name"] = name;
  // replace: a dlerror() text need not be UTF-8, and a throw here would lose the report
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  (void)!::write(STDOUT_FILENO, line.data(), line.size());
  // _exit: the driver's atexit teardown may block on a sick GPU, and everything was released
  // explicitly (under the watchdog) on the healthy path.
  ::_exit(code);
}

class Canary {
 public:
  Canary(const CudaDriver& d, cu::Result (*event_query)(cu::Event), int sync_timeout_ms)
      : d_(d), event_query_(event_query), sync_timeout_(sync_timeout_ms) {}

  [[noreturn]] void run(int device) {
    step("init");
    if (cu::Result r = d_.Init(0); r != 0) {
      const int code = r == kErrNoDevice ? canary::kNoDevice
                       : (r == kErrStubLibrary || r == kErrInsufficientDriver || r == kErrNotInitialized ||
                          r == kErrSystemDriverMismatch)
                           ? canary::kNoDriver
                           : canary::kGpuError;
      finish(code, error_name(d_, r), "cuInit failed");
    }
    step("device");
    int count = 0;
    check(d_.DeviceGetCount(&count));
    if (count <= device)
      finish(canary::kNoDevice, "", fmt::format("device {} asked for, the driver shows {}", device, count));
    cu::Device dev = 0;
    check(d_.DeviceGet(&dev, device));
    char name_buf[256] = {};
    check(d_.DeviceGetName(name_buf, static_cast<int>(sizeof name_buf) - 1, dev));
    name_ = name_buf;

    step("context");
    cu::Context ctx = nullptr;
    check(d_.DevicePrimaryCtxRetain(&ctx, dev));
    check(d_.CtxSetCurrent(ctx));
    cu::Event ev = nullptr;
    check(d_.EventCreate(&ev, kEventDisableTiming));

    step("module");  // the driver's PTX JIT: a broken ptxjitcompiler shows here
    cu::Module mod = nullptr;
    check(d_.ModuleLoadData(&mod, canary::kPtx));
    cu::Function fn = nullptr;
    check(d_.ModuleGetFunction(&fn, mod, canary::kKernelName));

    step("alloc");
    cu::DevicePtr x = 0, y = 0, scratch = 0;
    check(d_.MemAlloc(&x, kElements * sizeof(float)));
    check(d_.MemAlloc(&y, kElements * sizeof(float)));
    check(d_.MemAlloc(&scratch, kScratchBytes));

    // memset, then read every byte back.
    step("memset");
    check(d_.MemsetD8(scratch, 0xA5, kScratchBytes));
    wait(ev);
    step("memcpy_dtoh");
    std::vector<std::uint8_t> bytes(kScratchBytes);
    check(d_.MemcpyDtoH(bytes.data(), scratch, bytes.size()));
    step("verify_memset");
    for (std::size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] != 0xA5) wrong(fmt::format("memset byte {} reads 0x{:02x}, expected 0xa5", i, bytes[i]));

    // A pattern up and back down: the copy engines and the memory in between.
    step("memcpy_htod");
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>((i * 131u) ^ (i >> 12));
    check(d_.MemcpyHtoD(scratch, bytes.data(), bytes.size()));
    step("memcpy_dtoh");
    std::vector<std::uint8_t> back(kScratchBytes);
    check(d_.MemcpyDtoH(back.data(), scratch, back.size()));
    step("verify_roundtrip");
    for (std::size_t i = 0; i < back.size(); ++i)
      if (back[i] != bytes[i])
        wrong(fmt::format("round-trip byte {} reads 0x{:02x}, expected 0x{:02x}", i, back[i], bytes[i]));

    // y = a*x + y on small integers: exact in fp32, so every element is compared for equality.
    step("upload");
    std::vector<float> hx(kElements), hy(kElements), expect(kElements);
    const float a = 3.0f;
    for (unsigned i = 0; i < kElements; ++i) {
      hx[i] = static_cast<float>(i % 1021);
      hy[i] = static_cast<float>((i * 7u) % 1009);
      expect[i] = a * hx[i] + hy[i];
    }
    check(d_.MemcpyHtoD(x, hx.data(), kElements * sizeof(float)));
    check(d_.MemcpyHtoD(y, hy.data(), kElements * sizeof(float)));
    step("launch");
    unsigned n = kElements;
    float alpha = a;
    void* args[] = {&n, &alpha, &x, &y};
    const unsigned block = 256, grid = 1024;  // grid-stride: each thread does about two elements
    check(d_.LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
    step("sync_kernel");
    wait(ev);
    step("download");
    check(d_.MemcpyDtoH(hy.data(), y, kElements * sizeof(float)));
    step("verify_kernel");
    unsigned bad = 0, first = 0;
    for (unsigned i = 0; i < kElements; ++i)
      if (hy[i] != expect[i] && bad++ == 0) first = i;
    if (bad)
      wrong(fmt::format("{} of {} elements wrong; y[{}] = {}, expected {}", bad, kElements, first, hy[first],
                        expect[first]));

    // Teardown is part of the check: a sticky error surfaces here too.
    step("teardown");
    check(d_.MemFree(scratch));
    check(d_.MemFree(y));
    check(d_.MemFree(x));
    check(d_.ModuleUnload(mod));
    check(d_.EventDestroy(ev));
    check(d_.CtxSynchronize());
    check(d_.DevicePrimaryCtxRelease(dev));
    step("done");
    finish(canary::kHealthy, "", "kernel, memset and memcpy round trip verified", name_);
  }

 private:
  static void step(const char* s) { g_step.store(s); }

  void check(cu::Result r) {
    if (r != 0) finish(canary::kGpuError, error_name(d_, r), fmt::format("CUDA call failed in step {}", g_step.load()), name_);
  }

  [[noreturn]] void wrong(const std::string& what) { finish(canary::kWrongResult, "", what, name_); }

  // Records `ev` on the legacy default stream and polls it against the sync deadline, so a kernel
  // that never finishes ends the canary with kTimeout instead of a hang in cuCtxSynchronize.
  void wait(cu::Event ev) {
    check(d_.EventRecord(ev, nullptr));
    const auto deadline = Clock::now() + std::chrono::milliseconds(sync_timeout_);
    for (;;) {
      const cu::Result r = event_query_(ev);
      if (r == 0) return;
      if (r != kErrNotReady) check(r);
      if (Clock::now() >= deadline)
        finish(canary::kTimeout, error_name(d_, r),
               fmt::format("the GPU did not finish step {} within {} ms: it may be wedged", g_step.load(),
                           sync_timeout_),
               name_);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  const CudaDriver& d_;
  cu::Result (*event_query_)(cu::Event);
  int sync_timeout_;
  std::string name_;
};

}  // namespace

int main(int argc, char** argv) {
  g_start = Clock::now();
  CLI::App app{"kjudge-canary: check a GPU with a small kernel and a memory round trip; one JSON line on stdout"};
  int device = 0;
  int timeout_ms = 15'000;
  int sync_timeout_ms = 5'000;
  std::string library = "libcuda.so.1";
  bool print_ptx = false;
  app.add_option("--device", device, "CUDA device ordinal (inside a sandbox the assigned GPU is 0)")->check(CLI::NonNegativeNumber);
  app.add_option("--timeout-ms", timeout_ms, "watchdog over the whole check")->check(CLI::Range(100, 600'000));
  app.add_option("--sync-timeout-ms", sync_timeout_ms, "bound on each wait for the GPU")->check(CLI::Range(10, 600'000));
  app.add_option("--driver-library", library, "the CUDA driver library to dlopen (tests)");
  app.add_flag("--print-ptx", print_ptx, "print the embedded PTX and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : canary::kUsage;
  }
  if (print_ptx) {
    std::fputs(canary::kPtx, stdout);
    return 0;
  }
  g_device = device;

  // The watchdog: whatever step is running at the deadline is reported as hung.
  std::thread([timeout_ms] {
    std::this_thread::sleep_until(g_start + std::chrono::milliseconds(timeout_ms));
    finish(canary::kTimeout, "", fmt::format("no answer from the driver within {} ms (step {}): the GPU may be wedged",
                                             timeout_ms, g_step.load()));
  }).detach();

  g_step.store("load_driver");
  const CudaDriver* driver = nullptr;
  try {
    driver = &CudaDriver::load(library);
  } catch (const kjudge::runner::RunnerError& e) {
    finish(canary::kNoDriver, "", e.what());
  }
  // cuEventQuery is not in the runner's driver table; the library is loaded already, so this
  // only looks the symbol up in it.
  cu::Result (*event_query)(cu::Event) = nullptr;
  if (void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    if (void* sym = dlsym(h, "cuEventQuery")) std::memcpy(&event_query, &sym, sizeof event_query);
  }
  if (!event_query) finish(canary::kNoDriver, "", "the CUDA driver library lacks cuEventQuery");
  Canary(*driver, event_query, sync_timeout_ms).run(device);
}
