// What the recorder saw between start and stop: one kernel name per launch (as the launch named
// it), and how many launches it could not name (graph launches, a function without a name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kjt {

class LaunchLog {
 public:
  void reset();
  void add(const char* name);
  void add_unattributed();
  void demangle_all();  // at stop: the names torch.profiler reports (demangled, as kineto does)
  int count() const;
  int unattributed() const;
  const char* name(int i) const;  // valid until the next reset

 private:
  std::vector<std::string> names_;
  std::uint64_t unattributed_ = 0;
  bool frozen_ = false;  // after demangle_all: a callback still in flight at stop adds nothing
};

LaunchLog& launch_log();  // the process's one log; every member takes the log's lock itself

}  // namespace kjt
