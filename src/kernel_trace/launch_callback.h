// The CUPTI callback: names every kernel launch on API entry into launch_log(). A runtime launch
// that names its kernel is recorded there and the driver call beneath it is skipped; one that
// does not (or a launch made on the driver directly) is named by the driver callback, and counts
// as unattributed if no driver callback came. Graph launches are always unattributed.
#pragma once

#include <vector>

#include "kernel_trace/cupti_loader.h"

namespace kjt {

struct EnableSpec {
  Domain domain;
  CallbackId cbid;
  bool required;  // optional ones may not exist in an older CUPTI
};

// Every callback the recorder enables.
std::vector<EnableSpec> launch_callbacks();

// Starts a new recording session (a new generation for the per-thread state).
void begin_session(const Cupti& cupti);
void end_session();

void on_callback(void* userdata, Domain domain, CallbackId cbid, const void* cbdata);

}  // namespace kjt
