// libffi types of scalar arguments (shared by the C++ and the CUDA host-launch backends).
#pragma once

#include <ffi.h>

#include "runner/scalars.h"

namespace kjudge::runner {

ffi_type* ffi_type_for(const Scalar& s);

}  // namespace kjudge::runner
