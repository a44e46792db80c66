#include "kernel_trace/cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

namespace kjt {
namespace {

constexpr const char* kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

// torch preloads its wheel's libcupti; a second copy from elsewhere would be a second CUPTI.
void* open_cupti(const char* hint, std::string& tried) {
  for (const char* s : kSonames)
    if (void* h = dlopen(s, RTLD_NOW | RTLD_NOLOAD)) return h;
  if (hint && *hint) {
    if (void* h = dlopen(hint, RTLD_NOW | RTLD_LOCAL)) return h;
    tried += std::string(hint) + ", ";
  }
  for (const char* s : kSonames) {
    if (void* h = dlopen(s, RTLD_NOW | RTLD_LOCAL)) return h;
    tried += std::string(s) + ", ";
  }
  return nullptr;
}

std::string path_of(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return "";
  return map->l_name;
}

template <typename F>
bool bind(void* h, const char* name, F& out, std::string& err) {
  out = reinterpret_cast<F>(dlsym(h, name));
  if (!out) err = std::string("libcupti has no ") + name;
  return out != nullptr;
}

// cuFuncGetName (CUDA 12.3+) from the driver the process already uses; absent is not an error.
void bind_driver(Cupti& c) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda) c.func_get_name = reinterpret_cast<int (*)(const char**, CUfunction)>(dlsym(cuda, "cuFuncGetName"));
}

}  // namespace

bool load_cupti(const char* hint, Cupti& out, std::string& err) {
  if (out.subscribe) {
    if (!out.func_get_name) bind_driver(out);  // CUDA may have been initialised since
    return true;
  }
  std::string tried;
  void* h = open_cupti(hint, tried);
  if (!h) {
    err = "libcupti not found (tried " + tried.substr(0, tried.size() >= 2 ? tried.size() - 2 : 0) + ")";
    return false;
  }
  Cupti c;
  if (!bind(h, "cuptiSubscribe", c.subscribe, err) || !bind(h, "cuptiEnableCallback", c.enable_callback, err) ||
      !bind(h, "cuptiUnsubscribe", c.unsubscribe, err) || !bind(h, "cuptiGetResultString", c.result_string, err))
    return false;
  c.path = path_of(h);
  bind_driver(c);
  out = c;
  return true;
}

std::string cupti_error(const Cupti& c, CUptiResult r) {
  const char* text = nullptr;
  if (c.result_string && c.result_string(r, &text) == kCuptiSuccess && text) return text;
  return "CUPTI error " + std::to_string(r);
}

}  // namespace kjt
