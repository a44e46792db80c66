// Engine pieces testable without a GPU or sandbox: CUDA launch checks and kernel-parameter packing,
// the clean failure when libcuda is missing, arch detection parsing, the CUDA toolchain profile,
// SHA-256, the oracle's generator, digests and the median's confidence interval.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <unistd.h>

#include <cstring>

#include "kjudge/v1/job.pb.h"
#include "pipeline/checks/engine_checks.h"
#include "pipeline/job/inputs.h"
#include "common/sha256.h"
#include "pipeline/job/toolchain.h"
#include "runner/backends.h"
#include "runner/cuda_driver.h"
#include "runner/cuda_launch.h"
#include "runner/engine_math.h"
#include "runner/error.h"

namespace {
namespace v1 = kjudge::v1;
namespace rn = kjudge::runner;

v1::LaunchConfig launch(std::vector<uint32_t> grid, std::vector<uint32_t> block, uint32_t smem = 0) {
  v1::LaunchConfig l;
  for (auto g : grid) l.add_grid(g);
  for (auto b : block) l.add_block(b);
  l.set_shared_mem_bytes(smem);
  return l;
}

// A runner's report of two timed calls of 1 ms each, and the daemon's clock `ms` after one moment.
v1::RunnerReport two_calls_of_1ms() {
  v1::RunnerReport rep;
  rep.add_trial_ms(1.0);
  rep.add_trial_ms(1.0);
  return rep;
}
std::chrono::steady_clock::time_point at(double ms) {
  static const auto t0 = std::chrono::steady_clock::now();
  return t0 + std::chrono::microseconds(static_cast<long>(ms * 1000));
}

// The daemon's clock on a native loop: [D] S T... E. The runner's device-ready mark before the loop
// is allowed; any other extra mark voids the span (the overhead is then not subtracted).
TEST(EngineChecks, HarnessOverheadFromTheLoopSpanAfterTheDeviceReadyMark) {
  const v1::RunnerReport rep = two_calls_of_1ms();
  std::vector<kj::ClockMark> marks = {{'S', at(0)}, {'T', at(1.5)}, {'T', at(3)}, {'E', at(3)}};
  EXPECT_NEAR(kj::harness_overhead_per_call(rep, marks), 0.5, 1e-6);
  marks.insert(marks.begin(), kj::ClockMark{'D', at(-50)});
  EXPECT_NEAR(kj::harness_overhead_per_call(rep, marks), 0.5, 1e-6);
  marks.insert(marks.begin() + 2, kj::ClockMark{'D', at(1)});  // a second 'D' inside the loop
  EXPECT_EQ(kj::harness_overhead_per_call(rep, marks), 0.0);
}

// A loop's wait for a CPU counts only when the host, not the job, took the CPU: the CPU time of
// the job's other tasks meanwhile is deducted (a kernel that keeps its own CPU busy earns nothing).
TEST(CpuWait, OnlyTheHostsShareOfTheWaitIsExcused) {
  const kj::CpuSample from{100'000'000, 5'000'000, 300'000'000};
  kj::CpuSample to{110'000'000, 65'000'000, 310'000'000};  // 60 ms waited, the job ran only this thread
  EXPECT_NEAR(kj::host_cpu_wait_ms(from, to), 60.0, 1e-9);
  to.job_cpu_ns = 350'000'000;  // meanwhile the job's other tasks took 40 ms of CPU
  EXPECT_NEAR(kj::host_cpu_wait_ms(from, to), 20.0, 1e-9);
  to.job_cpu_ns = 400'000'000;  // they took more than the wait: nothing is excused
  EXPECT_EQ(kj::host_cpu_wait_ms(from, to), 0.0);
  to.job_cpu_ns = std::nullopt;  // the job's CPU time unknown: nothing is excused
  EXPECT_EQ(kj::host_cpu_wait_ms(from, to), 0.0);
}

// A loop-start sample read late (the daemon's reader waited for a CPU too): the process may have
// waited all that time, so it counts as waited, less what the job's other tasks ran.
TEST(CpuWait, ALateStartSampleCountsAsWaited) {
  kj::CpuSample from{100'000'000, 5'000'000, 300'000'000};
  from.read_late_ns = 7'000'000;
  kj::CpuSample to{110'000'000, 65'000'000, 310'000'000};
  to.read_late_ns = 90'000'000;  // the end's lateness adds nothing: its sample already holds that wait
  EXPECT_NEAR(kj::host_cpu_wait_ms(from, to), 67.0, 1e-9);
  to.job_cpu_ns = 370'000'000;  // the job's other tasks ran 60 ms (70 in all, 10 of them this thread)
  EXPECT_NEAR(kj::host_cpu_wait_ms(from, to), 7.0, 1e-9);
}

// The reference's harness overhead keeps its loop's wait: an estimate of the wait too large (a
// late end sample) would otherwise shrink the overhead and make the candidate's bound harsh.
TEST(CpuWait, TheReferencesOverheadKeepsItsWait) {
  const v1::RunnerReport rep = two_calls_of_1ms();
  const std::vector<kj::ClockMark> marks = {{'S', at(0), kj::CpuSample{0, 0, 0}},
                                            {'T', at(1.5), std::nullopt},
                                            {'T', at(53), std::nullopt},
                                            {'E', at(53), kj::CpuSample{2'000'000, 50'000'000, 2'000'000}}};
  EXPECT_NEAR(kj::harness_overhead_per_call(rep, marks), 25.5, 1e-6);  // (53 - 2) / 2
}

// A CUDA loop whose calls' host walls are twice their events and more is work on a private stream,
// unless the loop's process waited for a CPU long enough to stretch the walls' median that far.
TEST(CpuWait, AWaitForACpuIsNotDeviceWorkOffTheTimedStream) {
  v1::RunnerReport rep;
  rep.set_timing_method("cuda_events");
  for (int i = 0; i < 20; ++i) rep.add_trial_ms(0.01);
  v1::Result r;
  EXPECT_FALSE(kj::check_side_streams(rep, 0.01, 0.06, 0.0, r));
  EXPECT_TRUE(kj::check_side_streams(rep, 0.01, 0.3, 0.0, r));  // 0.23 ms a call unexplained
  EXPECT_FALSE(kj::check_side_streams(rep, 0.01, 0.3, 3.0, r));  // 3 ms waited over 20 calls: up to 0.3 each
  EXPECT_TRUE(kj::check_side_streams(rep, 0.01, 1.0, 3.0, r));
}

TEST(CudaLaunch, AcceptsKernelAndHostModes) {
  EXPECT_FALSE(rn::check_cuda_launch(launch({1024}, {256})));
  EXPECT_FALSE(rn::check_cuda_launch(launch({64, 64, 2}, {16, 16, 4}, 64 * 1024)));
  EXPECT_FALSE(rn::check_cuda_launch(launch({}, {})));  // host-launch mode
  EXPECT_TRUE(rn::cuda_kernel_mode(launch({1}, {1})));
  EXPECT_FALSE(rn::cuda_kernel_mode(launch({}, {})));
}

TEST(CudaLaunch, RejectsWhatCannotLaunch) {
  EXPECT_TRUE(rn::check_cuda_launch(launch({1}, {})));              // no block
  EXPECT_TRUE(rn::check_cuda_launch(launch({1}, {2048})));          // > 1024 threads
  EXPECT_TRUE(rn::check_cuda_launch(launch({1}, {32, 32, 2})));     // 2048 threads
  EXPECT_TRUE(rn::check_cuda_launch(launch({0}, {32})));            // empty grid
  EXPECT_TRUE(rn::check_cuda_launch(launch({1, 70000}, {32})));     // grid.y too large
  EXPECT_TRUE(rn::check_cuda_launch(launch({1}, {32}, 300 * 1024)));  // shared memory
  EXPECT_TRUE(rn::check_cuda_launch(launch({}, {32})));             // block without grid
  EXPECT_TRUE(rn::check_cuda_launch(launch({1, 1, 1, 1}, {32})));   // 4-D
}

TEST(CudaLaunch, PacksOnePointerPerArgumentInOrder) {
  std::vector<rn::HostArg> args;
  rn::HostTensor t;
  t.index = 0;
  args.emplace_back(std::move(t));
  v1::ScalarValue sv;
  sv.set_dtype(v1::I32);
  sv.set_i(-7);
  args.emplace_back(rn::make_scalar("n", sv, 1));
  v1::ScalarValue fv;
  fv.set_dtype(v1::F32);
  fv.set_f(0.5);
  args.emplace_back(rn::make_scalar("alpha", fv, 2));
  std::vector<std::uint64_t> ptrs = {0xdead0000ull, 0, 0};
  const auto params = rn::pack_kernel_params(args, ptrs);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0], &ptrs[0]);
  EXPECT_EQ(*static_cast<std::uint64_t*>(params[0]), 0xdead0000ull);
  std::int32_t n = 0;
  std::memcpy(&n, params[1], 4);
  EXPECT_EQ(n, -7);
  float a = 0;
  std::memcpy(&a, params[2], 4);
  EXPECT_EQ(a, 0.5f);
  std::vector<std::uint64_t> wrong(2);
  EXPECT_THROW(rn::pack_kernel_params(args, wrong), rn::RunnerError);
}

TEST(CudaDriver, MissingLibraryIsACleanError) {
  try {
    rn::CudaDriver::open("libcuda-kjudge-does-not-exist.so.1");
    FAIL() << "expected RunnerError";
  } catch (const rn::RunnerError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load the CUDA driver"), std::string::npos) << e.what();
  }
}

TEST(CudaDriver, RunWithoutDriverFailsCleanlyWhereNoGpu) {
  if (::access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "an NVIDIA driver is present";
  v1::RunnerRequest req;
  req.set_mode(v1::RunnerRequest::RUN);
  req.set_language(v1::CUDA);
  req.set_entry("k");
  req.set_artifact_path("/nonexistent.fatbin");
  req.set_output_dir("/tmp");
  *req.mutable_launch() = launch({1}, {1});
  v1::RunnerReport rep;
  try {
    rn::run_cuda(req, rep);
    FAIL() << "expected RunnerError";
  } catch (const rn::RunnerError& e) {
    const std::string w = e.what();
    EXPECT_TRUE(w.find("CUDA driver") != std::string::npos || w.find("cuInit") != std::string::npos) << w;
  }
}

TEST(Toolchain, CudaProfileIsData) {
  const auto* tc = kj::toolchain_for(v1::CUDA);
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(tc->gpu_profile, "nvidia-cuda");
  v1::NativeTask task;
  task.set_language(v1::CUDA);
  *task.mutable_launch() = launch({4}, {256});
  task.add_compile_flags("--use_fast_math");
  auto argv = tc->argv_for(task);
  EXPECT_EQ(tc->artifact_for(task), "kernel.fatbin");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-fatbin"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-arch=" + kj::cuda_arch()), argv.end());
  EXPECT_LT(std::find(argv.begin(), argv.end(), "--use_fast_math"), std::find(argv.begin(), argv.end(), "-o"));
  task.mutable_launch()->Clear();
  EXPECT_EQ(tc->artifact_for(task), "kernel.so");
  argv = tc->argv_for(task);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-shared"), argv.end());
  google::protobuf::RepeatedPtrField<std::string> bad;
  *bad.Add() = "-Xcompiler=-fplugin=/tmp/x.so";
  EXPECT_TRUE(tc->check_flags(bad));
  *bad.Mutable(0) = "-ccbin=/tmp/evil";
  EXPECT_TRUE(tc->check_flags(bad));
  *bad.Mutable(0) = "-O3";
  EXPECT_FALSE(tc->check_flags(bad));
}

TEST(Toolchain, ComputeCapParsing) {
  EXPECT_EQ(kj::parse_compute_cap("9.0\n"), "sm_90");
  EXPECT_EQ(kj::parse_compute_cap("10.0\n10.0\n"), "sm_100");
  EXPECT_EQ(kj::parse_compute_cap(""), "");
  EXPECT_EQ(kj::parse_compute_cap("No devices were found"), "");
  EXPECT_TRUE(kj::cuda_arch().starts_with("sm_"));
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(kj::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(kj::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(kj::sha256_hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  EXPECT_NE(kj::Sha256().field("ab").field("c").hex(), kj::Sha256().field("a").field("bc").hex());
}

TEST(Oracle, SeedsAreFreshAndGeneratorIsUnbiased) {
  EXPECT_NE(kj::secret_seed(), kj::secret_seed());
  kj::ChaChaRng a({1, 2, 3, 4}), b({1, 2, 3, 4});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  kj::ChaChaRng r(kj::secret_seed());
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) ++counts[r.below(3)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.uniform01();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Oracle, FourDefaultSetsIncludingSpike) {
  const auto& names = kj::input_set_names();
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "declared");
  EXPECT_NE(std::find(names.begin(), names.end(), "spike"), names.end());
}

TEST(EngineMath, DigestSeesEveryByte) {
  std::vector<std::byte> v(1001, std::byte{7});
  const auto h = kjudge::digest64(v);
  for (std::size_t i : {0u, 500u, 999u, 1000u}) {
    auto w = v;
    w[i] = std::byte{8};
    EXPECT_NE(kjudge::digest64(w), h) << i;
  }
}

TEST(EngineMath, MedianCiShrinksWithSamples) {
  EXPECT_TRUE(std::isinf(kjudge::median_rel_ci({1, 2, 3})));
  std::vector<double> steady(50, 1.0);
  EXPECT_EQ(kjudge::median_rel_ci(steady), 0.0);
  std::vector<double> noisy;
  for (int i = 0; i < 100; ++i) noisy.push_back(1.0 + 0.1 * ((i * 37) % 11) / 10.0);
  const double ci100 = kjudge::median_rel_ci(noisy);
  noisy.resize(10);
  EXPECT_LT(ci100, kjudge::median_rel_ci(noisy));
}

TEST(EngineChecks, AuditCallsAreDistinctAndInRange) {
  for (int k = 0; k < 20; ++k) {
    const auto a = kj::pick_audit_calls(10, 4);
    ASSERT_EQ(a.size(), 4u);
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_LT(a[i], 10u);
      if (i) {
        EXPECT_LT(a[i - 1], a[i]);
      }
    }
  }
  EXPECT_EQ(kj::pick_audit_calls(2, 4).size(), 2u);
}

TEST(EngineChecks, BytesMoved) {
  v1::NativeTask t;
  auto* a = t.add_args()->mutable_tensor();
  a->set_dtype(v1::F32);
  a->add_shape(10);
  a->set_role(v1::IN);
  auto* b = t.add_args()->mutable_tensor();
  b->set_dtype(v1::F64);
  b->add_shape(10);
  b->set_role(v1::INOUT);
  EXPECT_EQ(kj::bytes_moved(t), 40u + 160u);
  t.set_min_bytes_moved(7);
  EXPECT_EQ(kj::bytes_moved(t), 7u);
}

}  // namespace
