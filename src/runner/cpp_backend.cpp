// Language CPP: the daemon compiled the candidate into a shared object; load it and call
//   extern "C" void entry(<tensor pointers and scalars by value, in call order>)
// through libffi, so any declared signature works without generated glue.
#include <dlfcn.h>
#include <ffi.h>

#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "runner/args.h"
#include "runner/backends.h"
#include "runner/error.h"
#include "runner/ffi_types.h"
#include "runner/protocol.h"
#include "runner/timing.h"

namespace kjudge::runner {

namespace v1 = kjudge::v1;

namespace {

struct DlClose {
  void operator()(void* handle) const noexcept { dlclose(handle); }
};
using Library = std::unique_ptr<void, DlClose>;

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

}  // namespace

ffi_type* ffi_type_for(const Scalar& s) {
  switch (s.dtype) {
    case v1::I8: return &ffi_type_sint8;
    case v1::I16: return &ffi_type_sint16;
    case v1::I32: return &ffi_type_sint32;
    case v1::I64: return &ffi_type_sint64;
    case v1::U8: return &ffi_type_uint8;
    case v1::U32: return &ffi_type_uint32;
    case v1::BOOL: return &ffi_type_uint8;  // C/C++ bool: one byte, passed like unsigned char
    case v1::F32: return &ffi_type_float;
    case v1::F64: return &ffi_type_double;
    default: break;
  }
  throw RunnerError(fmt::format("scalar '{}': no C type for {}", s.name, v1::DType_Name(s.dtype)));
}

namespace {

class CppLauncher final : public Launcher {
 public:
  CppLauncher(void (*fn)(), std::vector<HostArg>& args) : fn_(fn) {
    const std::size_t n = args.size();
    types_.reserve(n);
    values_.reserve(n);
    pointers_.reserve(n);  // values_ points into it: must not reallocate
    for (auto& arg : args) {
      if (auto* t = std::get_if<HostTensor>(&arg)) {
        pointers_.push_back(t->data.data());
        types_.push_back(&ffi_type_pointer);
        values_.push_back(&pointers_.back());
      } else {
        auto& s = std::get<Scalar>(arg);
        types_.push_back(ffi_type_for(s));
        values_.push_back(s.data());
      }
    }
    const ffi_status st = ffi_prep_cif(&cif_, FFI_DEFAULT_ABI, static_cast<unsigned>(n),
                                       &ffi_type_void, types_.data());
    if (st != FFI_OK) throw RunnerError(fmt::format("ffi_prep_cif failed: status {}", static_cast<int>(st)));
  }

  CallTime call() override {
    ffi_arg ignored = 0;  // the entry returns void
    const Stopwatch watch;
    ffi_call(&cif_, fn_, &ignored, values_.data());
    const double ms = watch.elapsed_ms();
    return {ms, ms};
  }

  // The kernel reads and writes the working host buffers directly: nothing to move.
  void load(const std::vector<HostArg>&) override {}
  void fetch_outputs() override {}
  void fetch_inputs() override {}

 private:
  void (*fn_)();
  ffi_cif cif_{};
  std::vector<ffi_type*> types_;
  std::vector<void*> values_;
  std::vector<void*> pointers_;
};

}  // namespace

void run_cpp(const v1::RunnerRequest& request, v1::RunnerReport& report) {
  report.set_timing_method(kSteadyClockMethod);
  if (request.artifact_path().empty()) throw RunnerError("RUN needs artifact_path (the shared object)");
  if (request.entry().empty()) throw RunnerError("RUN needs entry (the extern \"C\" function)");

  // Inputs first: a bad input is our error, whatever the artifact does when loaded.
  std::vector<HostArg> args = load_working_args(request);
  report.set_threads_before(count_threads());

  // NODELETE: dlclose at the end must not unmap code that a thread the candidate left behind (or an
  // atexit handler it registered) may still run before the process exits.
  Library lib(dlopen(request.artifact_path().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE));
  if (!lib) throw RunnerError(fmt::format("dlopen failed: {}", dl_error()));
  dlerror();  // clear
  void* sym = dlsym(lib.get(), request.entry().c_str());
  if (!sym) {
    throw RunnerError(fmt::format("dlsym({}) failed: {} (is it declared extern \"C\"?)",
                                  request.entry(), dl_error()));
  }
  void (*fn)() = nullptr;
  static_assert(sizeof(fn) == sizeof(sym));
  std::memcpy(&fn, &sym, sizeof(fn));  // object -> function pointer, as POSIX allows

  CppLauncher launcher(fn, args);
  run_protocol(request, args, launcher, report);
}

}  // namespace kjudge::runner
