// Language OPENCL. BUILD compiles the source for the selected device and writes the program binary;
// RUN loads that binary and runs the entry kernel over launch.global_size with event profiling.
// Every CL call is checked and its error code named in the report.
#include <algorithm>
#include <chrono>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runner/args.h"
#include "runner/backends.h"
#include "runner/cl_device.h"
#include "runner/cl_errors.h"
#include "runner/cl_handles.h"
#include "runner/clock_marks.h"
#include "runner/error.h"
#include "runner/files.h"
#include "runner/protocol.h"

namespace kjudge::runner {

namespace v1 = kjudge::v1;

namespace {

constexpr const char* kProfilingMethod = "opencl_profiling";

ClContext make_context(const ClDevice& d) {
  const std::array<cl_context_properties, 3> props{
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(d.platform), 0};
  cl_int rc = CL_SUCCESS;
  ClContext ctx(clCreateContext(props.data(), 1, &d.device, nullptr, nullptr, &rc));
  cl_check(rc, "clCreateContext");
  return ctx;
}

// The device and its context, before anything of the job is loaded: a failure here (no device of
// the wanted type, no context) is the node's, DeviceUnavailable.
struct ClSetup {
  ClDevice device;
  ClContext context;
};

ClSetup set_up_device(v1::RunnerReport& report) {
  try {
    const ClDevice d = select_device();
    describe_device(d, report);
    return {d, make_context(d)};
  } catch (const RunnerError& e) {
    throw DeviceUnavailable(e.what());
  }
}

std::string build_log(cl_program p, cl_device_id d) {
  std::size_t size = 0;
  cl_check(clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size), "clGetProgramBuildInfo");
  std::string log(size, '\0');
  cl_check(clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr),
           "clGetProgramBuildInfo");
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Builds for the device; the log goes into the report whatever the outcome.
void build(cl_program p, const ClDevice& d, const std::string& options, v1::RunnerReport& report) {
  const cl_int rc = clBuildProgram(p, 1, &d.device, options.c_str(), nullptr, nullptr);
  try {
    report.set_build_log(build_log(p, d.device));
  } catch (const RunnerError&) {
    if (rc == CL_SUCCESS) throw;  // a failed build's own code says more than the log query's
  }
  cl_check(rc, "clBuildProgram");
}

// The entry kernel; when `declared_args` >= 0 its parameter count must match.
ClKernel make_kernel(cl_program p, const std::string& entry, int declared_args) {
  cl_int rc = CL_SUCCESS;
  ClKernel k(clCreateKernel(p, entry.c_str(), &rc));
  cl_check(rc, fmt::format("clCreateKernel({})", entry));
  cl_uint n = 0;
  cl_check(clGetKernelInfo(k.get(), CL_KERNEL_NUM_ARGS, sizeof(n), &n, nullptr), "clGetKernelInfo");
  if (declared_args >= 0 && n != static_cast<cl_uint>(declared_args)) {
    throw RunnerError(fmt::format("kernel '{}' takes {} arguments, the task declares {}", entry, n,
                                  declared_args));
  }
  return k;
}

std::vector<std::size_t> to_sizes(const google::protobuf::RepeatedField<std::uint64_t>& dims) {
  return {dims.begin(), dims.end()};
}

class ClLauncher final : public Launcher {
 public:
  ClLauncher(cl_context ctx, cl_command_queue queue, cl_kernel kernel, std::vector<HostArg>& args,
             const v1::LaunchConfig& launch)
      : queue_(queue), kernel_(kernel), global_(to_sizes(launch.global_size())),
        local_(to_sizes(launch.local_size())) {
    if (global_.empty() || global_.size() > 3) {
      throw RunnerError(fmt::format("launch.global_size has {} dimensions, needs 1 to 3", global_.size()));
    }
    if (!local_.empty() && local_.size() != global_.size()) {
      throw RunnerError(fmt::format("launch.local_size has {} dimensions, global_size {}",
                                    local_.size(), global_.size()));
    }
    for (auto& arg : args) {
      if (auto* t = std::get_if<HostTensor>(&arg)) {
        add_tensor(ctx, *t);
      } else {
        const auto& s = std::get<Scalar>(arg);
        cl_check(clSetKernelArg(kernel_, static_cast<cl_uint>(s.index), s.size, s.data()),
                 fmt::format("clSetKernelArg({}, '{}')", s.index, s.name));
      }
    }
  }

  CallTime call() override {
    const auto w0 = std::chrono::steady_clock::now();
    cl_event raw = nullptr;
    cl_check(clEnqueueNDRangeKernel(queue_, kernel_, static_cast<cl_uint>(global_.size()), nullptr,
                                    global_.data(), local_.empty() ? nullptr : local_.data(), 0,
                                    nullptr, &raw),
             "clEnqueueNDRangeKernel");
    const ClEvent event(raw);
    const cl_int waited = clWaitForEvents(1, &raw);
    cl_int status = CL_COMPLETE;
    cl_check(clGetEventInfo(raw, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr),
             "clGetEventInfo");
    if (status < 0) throw RunnerError(fmt::format("kernel execution failed: {}", cl_error_name(status)));
    cl_check(waited, "clWaitForEvents");
    cl_check(clFinish(queue_), "clFinish");
    cl_ulong start = 0;
    cl_ulong end = 0;
    cl_check(clGetEventProfilingInfo(raw, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr),
             "clGetEventProfilingInfo");
    cl_check(clGetEventProfilingInfo(raw, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr),
             "clGetEventProfilingInfo");
    return {static_cast<double>(end - start) * 1e-6,
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count()};
  }

  void fetch_outputs() override {
    for (auto& [t, mem] : buffers_) {
      if (!t->is_output()) continue;
      cl_check(clEnqueueReadBuffer(queue_, mem.get(), CL_TRUE, 0, t->bytes(), t->data.data(), 0,
                                   nullptr, nullptr),
               fmt::format("clEnqueueReadBuffer(arg {})", t->index));
    }
  }

  void fetch_inputs() override {
    for (auto& [t, mem] : buffers_) {
      if (t->role != v1::IN || t->bytes() == 0) continue;
      cl_check(clEnqueueReadBuffer(queue_, mem.get(), CL_TRUE, 0, t->bytes(), t->data.data(), 0,
                                   nullptr, nullptr),
               fmt::format("clEnqueueReadBuffer(arg {})", t->index));
    }
  }

  // `set` is the working host args (the protocol copied the set's values into them).
  void load(const std::vector<HostArg>&) override {
    for (auto& [t, mem] : buffers_) write(*t, mem.get(), t->data.data());
  }

 private:
  // Device copy of the host buffer: inputs as loaded, OUT tensors poisoned like on the host.
  void add_tensor(cl_context ctx, HostTensor& t) {
    cl_int rc = CL_SUCCESS;
    // CL refuses zero-sized buffers; a zero-element tensor gets one unused byte
    ClMem mem(clCreateBuffer(ctx, CL_MEM_READ_WRITE, std::max<std::size_t>(t.bytes(), 1), nullptr, &rc));
    cl_check(rc, fmt::format("clCreateBuffer(arg {}, {} bytes)", t.index, t.bytes()));
    write(t, mem.get(), t.data.data());
    cl_mem handle = mem.get();
    cl_check(clSetKernelArg(kernel_, static_cast<cl_uint>(t.index), sizeof(handle), &handle),
             fmt::format("clSetKernelArg({}, '{}')", t.index, t.name));
    buffers_.emplace_back(&t, std::move(mem));
  }

  void write(const HostTensor& t, cl_mem mem, const std::byte* src) {
    if (t.bytes() == 0) return;
    cl_check(clEnqueueWriteBuffer(queue_, mem, CL_TRUE, 0, t.bytes(), src, 0, nullptr, nullptr),
             fmt::format("clEnqueueWriteBuffer(arg {})", t.index));
  }

  cl_command_queue queue_;
  cl_kernel kernel_;
  std::vector<std::size_t> global_;
  std::vector<std::size_t> local_;
  std::vector<std::pair<HostTensor*, ClMem>> buffers_;  // args outlive the launcher
};

}  // namespace

void build_opencl(const v1::RunnerRequest& request, v1::RunnerReport& report) {
  if (request.source_path().empty()) throw RunnerError("BUILD needs source_path");
  if (request.artifact_path().empty()) throw RunnerError("BUILD needs artifact_path");
  if (request.entry().empty()) throw RunnerError("BUILD needs entry (the kernel name)");
  const std::string source = read_file(request.source_path(), "source");

  const ClSetup setup = set_up_device(report);
  const ClDevice& d = setup.device;
  const ClContext& ctx = setup.context;
  cl_int rc = CL_SUCCESS;
  const char* text = source.data();
  const std::size_t length = source.size();
  const ClProgram program(clCreateProgramWithSource(ctx.get(), 1, &text, &length, &rc));
  cl_check(rc, "clCreateProgramWithSource");
  build(program.get(), d, request.build_options(), report);
  // the daemon may leave args out of a BUILD request; then only the kernel's existence is checked
  make_kernel(program.get(), request.entry(), request.args_size() > 0 ? request.args_size() : -1);

  std::size_t size = 0;  // one device, so one binary
  cl_check(clGetProgramInfo(program.get(), CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
  if (size == 0) throw RunnerError("the OpenCL driver returned an empty program binary");
  std::string binary(size, '\0');
  std::array<unsigned char*, 1> pointers{reinterpret_cast<unsigned char*>(binary.data())};
  cl_check(clGetProgramInfo(program.get(), CL_PROGRAM_BINARIES, sizeof(pointers), pointers.data(), nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  write_file_atomic(request.artifact_path(), binary, "program binary");
}

void run_opencl(const v1::RunnerRequest& request, v1::RunnerReport& report) {
  report.set_timing_method(kProfilingMethod);
  if (request.artifact_path().empty()) throw RunnerError("RUN needs artifact_path (the program binary)");
  if (request.entry().empty()) throw RunnerError("RUN needs entry (the kernel name)");
  const std::string binary = read_file(request.artifact_path(), "program binary");
  if (binary.empty()) throw RunnerError(fmt::format("program binary {} is empty", request.artifact_path()));
  std::vector<HostArg> args = load_working_args(request);

  const ClSetup setup = set_up_device(report);
  const ClDevice& d = setup.device;
  const ClContext& ctx = setup.context;
  ClockMarks(request.clock_path()).mark(kDeviceReadyMark);  // before the job's program is loaded
  cl_int rc = CL_SUCCESS;
  cl_int binary_status = CL_SUCCESS;
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  const std::size_t length = binary.size();
  const ClProgram program(
      clCreateProgramWithBinary(ctx.get(), 1, &d.device, &length, &bytes, &binary_status, &rc));
  cl_check(rc, "clCreateProgramWithBinary");
  cl_check(binary_status, "clCreateProgramWithBinary (binary status)");
  build(program.get(), d, request.build_options(), report);
  const ClKernel kernel = make_kernel(program.get(), request.entry(), request.args_size());
  const ClQueue queue(clCreateCommandQueue(ctx.get(), d.device, CL_QUEUE_PROFILING_ENABLE, &rc));
  cl_check(rc, "clCreateCommandQueue");

  ClLauncher launcher(ctx.get(), queue.get(), kernel.get(), args, request.launch());
  // After the runtime set up its own worker threads (PoCL starts its pool with the queue): only
  // threads the kernel's calls leave behind count.
  report.set_threads_before(count_threads());
  run_protocol(request, args, launcher, report);
}

}  // namespace kjudge::runner
