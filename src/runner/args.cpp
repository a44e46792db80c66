#include "runner/args.h"

#include <fmt/format.h>

#include "runner/error.h"

namespace kjudge::runner {

std::vector<HostArg> load_args(const kjudge::v1::RunnerRequest& request) {
  std::vector<HostArg> args;
  args.reserve(static_cast<std::size_t>(request.args_size()));
  for (int i = 0; i < request.args_size(); ++i) {
    const auto& a = request.args(i);
    if (a.has_tensor()) {
      args.emplace_back(load_tensor(a.name(), a.tensor(), i, request.input_dir()));
    } else if (a.has_scalar()) {
      args.emplace_back(make_scalar(a.name(), a.scalar(), i));
    } else {
      throw RunnerError(fmt::format("argument {} '{}' is neither a tensor nor a scalar", i, a.name()));
    }
  }
  return args;
}

}  // namespace kjudge::runner
