#include "kernel_trace/launch_log.h"

#include <cxxabi.h>

#include <climits>
#include <cstdlib>
#include <mutex>

namespace kjt {
namespace {

// A forward with more launches than this is not judged by a partial list: the rest count as
// unattributed, which sends the harness back to the profiler.
constexpr std::size_t kMaxNames = 1u << 20;

std::mutex& lock() {
  static std::mutex m;
  return m;
}

std::string demangled(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;  // triton's and extern "C" kernels are not mangled
  std::string s(out);
  std::free(out);
  return s;
}

}  // namespace

void LaunchLog::reset() {
  std::lock_guard g(lock());
  names_.clear();
  unattributed_ = 0;
  frozen_ = false;
}

void LaunchLog::add(const char* name) {
  std::lock_guard g(lock());
  if (frozen_) return;
  if (names_.size() >= kMaxNames) {
    ++unattributed_;
    return;
  }
  names_.emplace_back(name);
}

void LaunchLog::add_unattributed() {
  std::lock_guard g(lock());
  if (!frozen_) ++unattributed_;
}

void LaunchLog::demangle_all() {
  std::lock_guard g(lock());
  for (auto& n : names_) n = demangled(n);
  frozen_ = true;
}

int LaunchLog::count() const {
  std::lock_guard g(lock());
  return static_cast<int>(names_.size());
}

int LaunchLog::unattributed() const {
  std::lock_guard g(lock());
  return unattributed_ > INT_MAX ? INT_MAX : static_cast<int>(unattributed_);
}

const char* LaunchLog::name(int i) const {
  std::lock_guard g(lock());
  return i >= 0 && static_cast<std::size_t>(i) < names_.size() ? names_[i].c_str() : nullptr;
}

LaunchLog& launch_log() {
  static LaunchLog log;
  return log;
}

}  // namespace kjt
