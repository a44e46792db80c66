// The kernel's arguments in call order, as host values: tensors (buffers) and scalars.
#pragma once

#include <variant>
#include <vector>

#include "kjudge/v1/runner.pb.h"
#include "runner/scalars.h"
#include "runner/tensors.h"

namespace kjudge::runner {

using HostArg = std::variant<HostTensor, Scalar>;

// Loads IN/INOUT tensors from request.input_dir, poisons OUT tensors, converts scalars.
std::vector<HostArg> load_args(const kjudge::v1::RunnerRequest& request);

}  // namespace kjudge::runner
