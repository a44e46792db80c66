// Language CUDA. The daemon compiled the candidate in the compile sandbox (nvcc; no GPU needed):
//  - kernel mode: a fatbin; `entry` is an extern "C" __global__ function launched through the driver
//    API (cuLaunchKernel) with launch.grid / block / shared_mem_bytes on the legacy default stream;
//  - host mode: a shared object; `entry` is an extern "C" host function called (libffi) with device
//    pointers and scalars; it launches what it likes.
// Every driver call is checked; after each call the whole device is synchronized (cuCtxSynchronize),
// which also returns any asynchronous launch/execution error. Time = CUDA events on the legacy
// stream around the call; the host wall from launch to device-wide completion is reported beside it
// (work hidden on a private stream shows up as wall >> events). Before each timed call: a write of
// >= 2x the L2 size, a persisting-L2 reset and the persisting-L2 limit forced back to 0.
#include <dlfcn.h>
#include <ffi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "runner/backends.h"
#include "runner/clock_marks.h"
#include "runner/cuda_driver.h"
#include "runner/cuda_launch.h"
#include "runner/error.h"
#include "runner/ffi_types.h"
#include "runner/files.h"
#include "runner/protocol.h"

namespace kjudge::runner {

namespace v1 = kjudge::v1;

bool cuda_kernel_mode(const v1::LaunchConfig& launch) { return !launch.grid().empty(); }

std::optional<std::string> check_cuda_launch(const v1::LaunchConfig& l) {
  if (l.grid().empty()) {
    if (!l.block().empty() || l.shared_mem_bytes() != 0)
      return "CUDA launch: block/shared_mem_bytes without grid (host-launch mode takes no launch configuration)";
    return std::nullopt;
  }
  if (l.grid_size() > 3 || l.block().empty() || l.block_size() > 3)
    return "CUDA launch: grid and block need 1 to 3 dimensions each";
  std::uint64_t threads = 1;
  for (auto b : l.block()) {
    if (b == 0) return "CUDA launch: block dimensions must be positive";
    threads *= b;
  }
  if (threads > 1024) return fmt::format("CUDA launch: {} threads per block, at most 1024", threads);
  for (int i = 0; i < l.grid_size(); ++i) {
    if (l.grid(i) == 0) return "CUDA launch: grid dimensions must be positive";
    if (i > 0 && l.grid(i) > 65535) return "CUDA launch: grid y/z dimensions must be at most 65535";
  }
  if (l.block_size() == 3 && l.block(2) > 64) return "CUDA launch: block z must be at most 64";
  if (l.shared_mem_bytes() > 227 * 1024) return "CUDA launch: shared_mem_bytes above 227 KiB";
  return std::nullopt;
}

std::vector<void*> pack_kernel_params(std::vector<HostArg>& args, std::vector<std::uint64_t>& device_ptrs) {
  if (device_ptrs.size() != args.size()) throw RunnerError("pack_kernel_params: one device pointer slot per argument");
  std::vector<void*> params;
  params.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (std::holds_alternative<HostTensor>(args[i])) {
      params.push_back(&device_ptrs[i]);
    } else {
      params.push_back(std::get<Scalar>(args[i]).data());
    }
  }
  return params;
}

namespace {

constexpr const char* kEventsMethod = "cuda_events";

unsigned dim(const google::protobuf::RepeatedField<std::uint32_t>& d, int i) { return i < d.size() ? d[i] : 1; }

class CudaLauncher final : public Launcher {
 public:
  CudaLauncher(const CudaDriver& drv, cu::Device dev, std::vector<HostArg>& args, const v1::LaunchConfig& launch,
               bool flush)
      : drv_(drv), args_(args), launch_(launch) {
    ptrs_.assign(args.size(), 0);
    for (std::size_t i = 0; i < args.size(); ++i) {
      auto* t = std::get_if<HostTensor>(&args[i]);
      if (!t) continue;
      drv_.check(drv_.MemAlloc(&ptrs_[i], std::max<std::size_t>(t->bytes(), 1)),
                 fmt::format("cuMemAlloc(arg {}, {} bytes)", t->index, t->bytes()));
    }
    load(args);
    drv_.check(drv_.EventCreate(&start_, 0), "cuEventCreate");
    drv_.check(drv_.EventCreate(&stop_, 0), "cuEventCreate");
    if (flush) {
      int l2 = 0;
      drv_.check(drv_.DeviceGetAttribute(&l2, cu::kAttrL2CacheSize, dev), "cuDeviceGetAttribute(L2_CACHE_SIZE)");
      flush_bytes_ = std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 8u << 20);
      drv_.check(drv_.MemAlloc(&flush_, flush_bytes_), fmt::format("cuMemAlloc(L2 flush, {} bytes)", flush_bytes_));
      // Our own "no persisting L2" setting, as the driver reports it back (it may round 0 up to its
      // granularity: an H200 reported a non-zero limit on every honest job before this).
      drv_.check(drv_.CtxSetLimit(cu::kLimitPersistingL2CacheSize, 0), "cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE, 0)");
      drv_.check(drv_.CtxGetLimit(&baseline_persisting_l2_, cu::kLimitPersistingL2CacheSize),
                 "cuCtxGetLimit(PERSISTING_L2_CACHE_SIZE)");
    }
  }

  ~CudaLauncher() override {
    for (auto p : ptrs_)
      if (p) drv_.MemFree(p);
    if (flush_) drv_.MemFree(flush_);
    if (start_) drv_.EventDestroy(start_);
    if (stop_) drv_.EventDestroy(stop_);
  }
  CudaLauncher(const CudaLauncher&) = delete;
  CudaLauncher& operator=(const CudaLauncher&) = delete;

  void set_kernel(cu::Function f) {
    kernel_ = f;
    params_ = pack_kernel_params(args_, ptrs_);
  }

  void set_host_entry(void (*fn)()) {
    host_ = fn;
    for (std::size_t i = 0; i < args_.size(); ++i) {
      if (std::holds_alternative<HostTensor>(args_[i])) {
        types_.push_back(&ffi_type_pointer);
        values_.push_back(&ptrs_[i]);  // a CUdeviceptr is the pointer value the entry receives
      } else {
        auto& s = std::get<Scalar>(args_[i]);
        types_.push_back(ffi_type_for(s));
        values_.push_back(s.data());
      }
    }
    if (ffi_prep_cif(&cif_, FFI_DEFAULT_ABI, static_cast<unsigned>(types_.size()), &ffi_type_void, types_.data()) != FFI_OK)
      throw RunnerError("ffi_prep_cif failed");
  }

  CallTime call() override {
    const auto w0 = std::chrono::steady_clock::now();
    drv_.check(drv_.EventRecord(start_, nullptr), "cuEventRecord(start)");
    if (kernel_) {
      drv_.check(drv_.LaunchKernel(kernel_, dim(launch_.grid(), 0), dim(launch_.grid(), 1), dim(launch_.grid(), 2),
                                   dim(launch_.block(), 0), dim(launch_.block(), 1), dim(launch_.block(), 2),
                                   launch_.shared_mem_bytes(), nullptr, params_.data(), nullptr),
                 "cuLaunchKernel");
    } else {
      ffi_arg ignored = 0;
      ffi_call(&cif_, host_, &ignored, values_.data());
    }
    drv_.check(drv_.EventRecord(stop_, nullptr), "cuEventRecord(stop)");
    // device-wide: every stream, and the error of any launch the candidate did not check
    drv_.check(drv_.CtxSynchronize(), "the kernel (cuCtxSynchronize after the call)");
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    float ms = 0;
    drv_.check(drv_.EventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
    return {static_cast<double>(ms), wall};
  }

  void load(const std::vector<HostArg>&) override {
    for (std::size_t i = 0; i < args_.size(); ++i) {
      const auto* t = std::get_if<HostTensor>(&args_[i]);
      if (!t || t->bytes() == 0) continue;
      drv_.check(drv_.MemcpyHtoD(ptrs_[i], t->data.data(), t->bytes()), fmt::format("cuMemcpyHtoD(arg {})", t->index));
    }
  }

  void fetch_outputs() override { fetch(true); }
  void fetch_inputs() override { fetch(false); }

  void before_timed_call() override {
    if (!flush_) return;
    std::size_t limit = 0;
    if (drv_.CtxGetLimit(&limit, cu::kLimitPersistingL2CacheSize) == 0 && limit > baseline_persisting_l2_) {
      add_flag("persisting_l2_limit_set");
      drv_.check(drv_.CtxSetLimit(cu::kLimitPersistingL2CacheSize, 0), "cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE, 0)");
    }
    const cu::Result reset = drv_.CtxResetPersistingL2Cache();
    if (reset != 0 && reset != cu::kErrorNotSupported) drv_.check(reset, "cuCtxResetPersistingL2Cache");
    drv_.check(drv_.EventRecord(start_, nullptr), "cuEventRecord(flush)");
    drv_.check(drv_.MemsetD8(flush_, static_cast<unsigned char>(++flush_value_), flush_bytes_), "cuMemsetD8(L2 flush)");
    drv_.check(drv_.EventRecord(stop_, nullptr), "cuEventRecord(flush)");
    drv_.check(drv_.CtxSynchronize(), "cuCtxSynchronize after the L2 flush");
    float ms = 0;
    if (drv_.EventElapsedTime(&ms, start_, stop_) == 0 && ms > 0)
      flush_gbps_ = std::max(flush_gbps_, static_cast<double>(flush_bytes_) / (ms * 1e6));
  }

  double flush_bandwidth_gbps() const override { return flush_gbps_; }
  std::vector<std::string> flags() const override { return flags_; }

 private:
  void fetch(bool outputs) {
    for (std::size_t i = 0; i < args_.size(); ++i) {
      auto* t = std::get_if<HostTensor>(&args_[i]);
      if (!t || t->bytes() == 0 || t->is_output() != outputs) continue;
      drv_.check(drv_.MemcpyDtoH(t->data.data(), ptrs_[i], t->bytes()), fmt::format("cuMemcpyDtoH(arg {})", t->index));
    }
  }
  void add_flag(const std::string& f) {
    if (std::find(flags_.begin(), flags_.end(), f) == flags_.end()) flags_.push_back(f);
  }

  const CudaDriver& drv_;
  std::vector<HostArg>& args_;
  v1::LaunchConfig launch_;
  std::vector<cu::DevicePtr> ptrs_;
  cu::Event start_ = nullptr, stop_ = nullptr;
  cu::DevicePtr flush_ = 0;
  std::size_t flush_bytes_ = 0;
  std::size_t baseline_persisting_l2_ = 0;  // the limit after our own reset to 0
  unsigned flush_value_ = 0;
  double flush_gbps_ = 0;
  std::vector<std::string> flags_;
  cu::Function kernel_ = nullptr;
  std::vector<void*> params_;
  void (*host_)() = nullptr;
  ffi_cif cif_{};
  std::vector<ffi_type*> types_;
  std::vector<void*> values_;
};

// libcuda, loaded: a node without a usable driver library is DeviceUnavailable too.
const CudaDriver& device_driver() {
  try {
    return CudaDriver::load();
  } catch (const std::exception& e) {
    throw DeviceUnavailable(e.what());
  }
}

// Driver, device 0 (the sandbox shows one) and its primary context, made current. Nothing of the
// job is loaded yet, so any failure here is the node's (DeviceUnavailable); the 'D' mark on the
// daemon's clock then says the device is ready.
cu::Device set_up_device(const CudaDriver& drv, const v1::RunnerRequest& request, v1::RunnerReport& report) {
  try {
    drv.check(drv.Init(0), "cuInit");
    int count = 0;
    drv.check(drv.DeviceGetCount(&count), "cuDeviceGetCount");
    if (count < 1) throw RunnerError("no CUDA device visible");
    cu::Device dev = 0;
    drv.check(drv.DeviceGet(&dev, 0), "cuDeviceGet");
    char name[256] = {};
    drv.check(drv.DeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
    int version = 0, major = 0, minor = 0;
    drv.check(drv.DriverGetVersion(&version), "cuDriverGetVersion");
    drv.check(drv.DeviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, dev), "cuDeviceGetAttribute(CC major)");
    drv.check(drv.DeviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, dev), "cuDeviceGetAttribute(CC minor)");
    report.set_device_name(name);
    report.set_driver_version(fmt::format("{}.{}", version / 1000, (version % 1000) / 10));
    report.set_platform_version(fmt::format("CUDA driver API, sm_{}{}", major, minor));
    cu::Context ctx = nullptr;
    drv.check(drv.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    drv.check(drv.CtxSetCurrent(ctx), "cuCtxSetCurrent");
    ClockMarks(request.clock_path()).mark(kDeviceReadyMark);
    return dev;
  } catch (const std::exception& e) {
    throw DeviceUnavailable(e.what());
  }
}

}  // namespace

void run_cuda(const v1::RunnerRequest& request, v1::RunnerReport& report) {
  report.set_timing_method(kEventsMethod);
  if (request.artifact_path().empty()) throw RunnerError("RUN needs artifact_path (fatbin or shared object)");
  if (request.entry().empty()) throw RunnerError("RUN needs entry");
  if (auto bad = check_cuda_launch(request.launch())) throw RunnerError(*bad);
  std::vector<HostArg> args = load_working_args(request);

  const CudaDriver& drv = device_driver();
  const cu::Device dev = set_up_device(drv, request, report);

  CudaLauncher launcher(drv, dev, args, request.launch(), request.l2_flush() && request.trials() > 0);
  report.set_threads_before(count_threads());  // the driver's own threads exist by now
  cu::Module module = nullptr;
  if (cuda_kernel_mode(request.launch())) {
    const std::string image = read_file(request.artifact_path(), "CUDA fatbin");
    drv.check(drv.ModuleLoadData(&module, image.data()), "cuModuleLoadData");
    cu::Function f = nullptr;
    drv.check(drv.ModuleGetFunction(&f, module, request.entry().c_str()),
              fmt::format("cuModuleGetFunction({}) (is it extern \"C\" __global__?)", request.entry()));
    if (request.launch().shared_mem_bytes() > 48 * 1024)
      drv.check(drv.FuncSetAttribute(f, cu::kFuncAttrMaxDynamicSharedSizeBytes,
                                     static_cast<int>(request.launch().shared_mem_bytes())),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    launcher.set_kernel(f);
  } else {
    // NODELETE: a thread the candidate left behind may still run its code until the process exits
    void* lib = dlopen(request.artifact_path().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
      const char* e = dlerror();
      throw RunnerError(fmt::format("dlopen failed: {}", e ? e : "unknown error"));
    }
    void* sym = dlsym(lib, request.entry().c_str());
    if (!sym) throw RunnerError(fmt::format("dlsym({}) failed (is it declared extern \"C\"?)", request.entry()));
    void (*fn)() = nullptr;
    std::memcpy(&fn, &sym, sizeof(fn));
    launcher.set_host_entry(fn);
  }
  run_protocol(request, args, launcher, report);
  drv.check(drv.CtxSynchronize(), "cuCtxSynchronize at the end");
}

}  // namespace kjudge::runner
