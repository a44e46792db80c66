// Throughput of the daemon's output comparator (compare_tensor) on large tensors: the size of a
// KernelBench output at GPU sizes (256 MB of f32) is compared once per input set and audit.
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "pipeline/checks/compare.h"
#include "pipeline/job/dtype.h"

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoull(argv[1]) : (64u << 20);
  namespace v1 = kjudge::v1;
  std::printf("%-6s %12s %10s %10s\n", "dtype", "elements", "seconds", "GB/s(in)");
  for (v1::DType t : {v1::F32, v1::F16, v1::BF16, v1::I64}) {
    const std::size_t es = kj::dtype_size(t);
    std::vector<std::byte> e(n * es), a(n * es);
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = t == v1::I64 ? double(rng() % 1000) : u(rng);
      kj::dtype_store(t, e.data(), i, v);
      kj::dtype_store(t, a.data(), i, t == v1::I64 ? v : v * (1 + 1e-7));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = kj::compare_tensor(t, e, a, kj::default_tolerance(t));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-6s %12zu %10.3f %10.2f %s\n", v1::DType_Name(t).c_str(), n, s, 2.0 * n * es / s / 1e9,
                c.passed() ? "passed" : "FAILED");
  }
}
