// Finds libcupti at run time (the copy torch already loaded first) and the few functions the
// recorder calls; also the driver's cuFuncGetName, for launches whose callback has no symbol name.
#pragma once

#include <string>

#include "kernel_trace/cupti_abi.h"

namespace kjt {

struct Cupti {
  CUptiResult (*subscribe)(SubscriberHandle*, CallbackFunc, void*) = nullptr;
  CUptiResult (*enable_callback)(std::uint32_t, SubscriberHandle, Domain, CallbackId) = nullptr;
  CUptiResult (*unsubscribe)(SubscriberHandle) = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char**) = nullptr;
  int (*func_get_name)(const char**, CUfunction) = nullptr;  // cuFuncGetName; may stay null
  std::string path;  // the libcupti that was used
};

// Loads once and keeps the result; false with a reason in err when CUPTI is not usable here.
bool load_cupti(const char* hint, Cupti& out, std::string& err);

// CUPTI's own words for a result code.
std::string cupti_error(const Cupti& c, CUptiResult r);

}  // namespace kjt
