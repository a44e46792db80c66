// Entry point of libkjsandbox: a Policy in, a Report out.
#pragma once

#include "kjsandbox/policy.h"
#include "kjsandbox/report.h"

namespace kjsandbox {

// Runs policy.argv in a fresh user+mount+pid+net+ipc+uts namespace set and blocks until the
// whole process tree is gone. Thread-safe: may be called from several threads of one process
// at once (the child never allocates between clone and exec). Never throws for child failures;
// throws std::system_error only if the host cannot create the pipes/process at all.
Report run(const Policy& policy);

// True when this host lets us create the namespaces run() needs (a cheap probe for tests/doctor).
bool namespaces_available(std::string* why = nullptr);

}  // namespace kjsandbox
