// kjudge-canary, the real binary: on this host's driver (none on CI: it must say so with its
// no-driver/no-device code, not crash; on a GPU node it must pass), on a fake libcuda that plays
// a healthy, faulting, corrupting or hanging GPU, and inside a real sandbox through
// sandboxed_canary() as kjudged runs it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "canary/exit_codes.h"
#include "daemon/gpu_health.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/run/workspace.h"

namespace {

namespace fs = std::filesystem;
namespace canary = kjudge::canary;
using namespace std::chrono_literals;

struct CanaryRun {
  int code = -1;
  std::string out;
  nlohmann::json line;  // the last stdout line, parsed
  double seconds = 0;
};

// Runs the canary with `args` (shell words, already quoted) and KJ_FAKE_CUDA=`mode`.
CanaryRun canary_run(const std::string& args, const std::string& mode = "ok") {
  const std::string cmd = "KJ_FAKE_CUDA=" + mode + " '" + std::string(KJ_CANARY) + "' " + args + " 2>/dev/null";
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  CanaryRun r;
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::string last;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) last = l;
  r.line = nlohmann::json::parse(last, nullptr, false);
  return r;
}

std::string fake(const std::string& extra = "") {
  return "--driver-library '" + std::string(KJ_FAKE_CUDA) + "' " + extra;
}

bool host_has_nvidia_gpu() { return fs::exists("/dev/nvidiactl"); }

// On this host as it is. Without a GPU (CI, this repo's dev machines) the canary must take the
// no-driver or no-device path with its JSON line; on a GPU node it must find the GPU healthy.
TEST(Canary, ThisHost) {
  const CanaryRun r = canary_run("");
  ASSERT_TRUE(r.line.is_object()) << "no JSON line: [" << r.out << "] exit " << r.code;
  EXPECT_EQ(r.line["code"], r.code);
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "exactly one line: " << r.out;
  if (host_has_nvidia_gpu()) {
    EXPECT_EQ(r.code, canary::kHealthy) << r.out;
    EXPECT_EQ(r.line["ok"], true);
    EXPECT_EQ(r.line["step"], "done");
  } else {
    EXPECT_TRUE(r.code == canary::kNoDriver || r.code == canary::kNoDevice) << r.out;
    EXPECT_EQ(r.line["ok"], false);
    EXPECT_EQ(r.line["result"], canary::result_name(r.code));
    if (r.code == canary::kNoDriver) {
      EXPECT_TRUE(r.line["step"] == "load_driver" || r.line["step"] == "init") << r.out;
    }
  }
}

TEST(Canary, DriverLibraryMissing) {
  const CanaryRun r = canary_run("--driver-library /nonexistent/libcuda.so.1");
  EXPECT_EQ(r.code, canary::kNoDriver) << r.out;
  EXPECT_EQ(r.line["step"], "load_driver");
  EXPECT_NE(r.line["detail"].get<std::string>().find("cannot load the CUDA driver"), std::string::npos) << r.out;
}

TEST(Canary, LibraryThatIsNotADriver) {
  const CanaryRun r = canary_run("--driver-library libm.so.6");
  EXPECT_EQ(r.code, canary::kNoDriver) << r.out;
  EXPECT_NE(r.line["detail"].get<std::string>().find("lacks cuInit"), std::string::npos) << r.out;
}

TEST(Canary, ToolkitStubLibraryIsNoDriver) {
  const fs::path stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!fs::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  const CanaryRun r = canary_run("--driver-library " + stub.string());
  EXPECT_EQ(r.code, canary::kNoDriver) << r.out;
  EXPECT_EQ(r.line["step"], "init");
  EXPECT_EQ(r.line["error"], "CUDA_ERROR_STUB_LIBRARY") << r.out;
}

TEST(Canary, FakeHealthyGpuPasses) {
  const CanaryRun r = canary_run(fake());
  EXPECT_EQ(r.code, canary::kHealthy) << r.out;
  EXPECT_EQ(r.line["ok"], true);
  EXPECT_EQ(r.line["result"], "healthy");
  EXPECT_EQ(r.line["step"], "done");
  EXPECT_EQ(r.line["name"], "Fake GPU");
}

struct FaultCase {
  const char* mode;
  int code;
  const char* step;
  const char* error;  // "" = none expected
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.mode; }

class CanaryFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(CanaryFault, ReportsStepAndError) {
  const auto& c = GetParam();
  const CanaryRun r = canary_run(fake("--sync-timeout-ms 300"), c.mode);
  EXPECT_EQ(r.code, c.code) << r.out;
  ASSERT_TRUE(r.line.is_object()) << r.out;
  EXPECT_EQ(r.line["ok"], false);
  EXPECT_EQ(r.line["result"], canary::result_name(c.code));
  EXPECT_EQ(r.line["step"], c.step) << r.out;
  if (*c.error) {
    EXPECT_EQ(r.line["error"], c.error) << r.out;
  }
  EXPECT_LT(r.seconds, 10) << "bounded";
}

INSTANTIATE_TEST_SUITE_P(
    Fake, CanaryFault,
    ::testing::Values(FaultCase{"no_device", canary::kNoDevice, "init", "CUDA_ERROR_NO_DEVICE"},
                      FaultCase{"zero_devices", canary::kNoDevice, "device", ""},
                      FaultCase{"jit_fail", canary::kGpuError, "module", "CUDA_ERROR_INVALID_PTX"},
                      FaultCase{"launch_fail", canary::kGpuError, "launch", "CUDA_ERROR_LAUNCH_FAILED"},
                      FaultCase{"kernel_hang", canary::kTimeout, "sync_kernel", "CUDA_ERROR_NOT_READY"},
                      FaultCase{"corrupt", canary::kWrongResult, "verify_kernel", ""},
                      FaultCase{"memset_corrupt", canary::kWrongResult, "verify_memset", ""},
                      FaultCase{"teardown_fault", canary::kGpuError, "teardown", "CUDA_ERROR_ILLEGAL_ADDRESS"}),
    [](const auto& info) { return std::string(info.param.mode); });

// A driver call that never returns (here cuInit) is cut off by the watchdog, which names the step.
TEST(Canary, WatchdogEndsAHungDriverCall) {
  const CanaryRun r = canary_run(fake("--timeout-ms 400"), "hang_init");
  EXPECT_EQ(r.code, canary::kTimeout) << r.out;
  EXPECT_EQ(r.line["step"], "init") << r.out;
  EXPECT_NE(r.line["detail"].get<std::string>().find("may be wedged"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 5);
}

TEST(Canary, WrongResultNamesTheElement) {
  const CanaryRun r = canary_run(fake(), "corrupt");
  EXPECT_NE(r.line["detail"].get<std::string>().find("1 of 524301 elements wrong; y[262150]"), std::string::npos)
      << r.out;
}

TEST(Canary, BadCommandLine) {
  EXPECT_EQ(canary_run("--device -1").code, canary::kUsage);
  EXPECT_EQ(canary_run("--no-such-flag").code, canary::kUsage);
  EXPECT_EQ(canary_run("--help").code, 0);
}

// The embedded PTX must assemble for the GPUs we run on (the driver's JIT does the same work).
TEST(Canary, PtxAssemblesForHopperAndBlackwell) {
  fs::path ptxas = "/usr/local/cuda/bin/ptxas";
  if (!fs::exists(ptxas)) GTEST_SKIP() << "no ptxas (CUDA toolkit) on this host";
  const fs::path dir = fs::temp_directory_path() / ("kjcanary-ptx-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const CanaryRun r = canary_run("--print-ptx");
  ASSERT_EQ(r.code, 0);
  std::ofstream(dir / "canary.ptx") << r.out;
  for (const char* arch : {"sm_90", "sm_100"}) {
    const std::string cmd = ptxas.string() + " -arch=" + arch + " -o " + (dir / "c.cubin").string() + " " +
                            (dir / "canary.ptx").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  fs::remove_all(dir);
}

// --- inside the sandbox, as kjudged runs it --------------------------------------------------------

struct SandboxFixture : ::testing::Test {
  kj::Config cfg;
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(kjsandbox::namespaces_available(&why)) << why;
    cfg.state_dir = fs::temp_directory_path() / ("kjcanary-" + std::to_string(::getpid()));
    kj::prepare_state_dir(cfg.state_dir);
  }
  void TearDown() override { fs::remove_all(cfg.state_dir); }
  kj::CanaryOptions opts() {
    kj::CanaryOptions o;
    o.binary = KJ_CANARY;
    o.wall = 15s;
    o.stuck_grace = 5s;
    return o;
  }
  std::size_t jobs_left() {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(cfg.state_dir / "jobs")) n += e.is_directory();
    return n;
  }
};

TEST_F(SandboxFixture, PolicyRunsTheCanaryNotTheRunner) {
  const auto p = kj::canary_policy(cfg, opts(), 0, cfg.state_dir / "x");
  ASSERT_FALSE(p.argv.empty());
  EXPECT_EQ(p.argv[0], kj::kCanaryInSandbox);
  bool canary = false, runner = false;
  for (const auto& b : p.binds) {
    canary |= b.source == KJ_CANARY && b.target == kj::kCanaryInSandbox;
    runner |= b.target.find("kjudge-runner") != std::string::npos;
  }
  EXPECT_TRUE(canary);
  EXPECT_FALSE(runner);
  EXPECT_EQ(p.wall_limit, 15s);
  EXPECT_EQ(p.env.count("CUDA_VISIBLE_DEVICES"), 1u);  // the nvidia-cuda profile was applied
}

// The real binary in the real sandbox on this host: fails with "no driver" here, passes on a GPU.
TEST_F(SandboxFixture, RealCanaryOnThisHost) {
  const auto res = kj::sandboxed_canary(cfg, opts())(0);
  if (host_has_nvidia_gpu()) {
    EXPECT_TRUE(res.ok) << res.detail;
  } else {
    EXPECT_FALSE(res.ok);
    EXPECT_TRUE(res.detail.find("no_driver") != std::string::npos || res.detail.find("no_device") != std::string::npos)
        << res.detail;
  }
  EXPECT_EQ(jobs_left(), 0u) << "the canary's workspace is removed";
}

// The whole path passes when the "GPU" is healthy: the fake driver, bound into the sandbox.
TEST_F(SandboxFixture, FakeHealthyGpuPassesThroughTheSandbox) {
  const fs::path lib = fs::canonical(KJ_FAKE_CUDA);
  cfg.sandbox.extra_ro_binds.push_back(lib.parent_path().string());
  auto o = opts();
  o.extra_args = {"--driver-library", lib.string()};
  const auto res = kj::sandboxed_canary(cfg, o)(0);
  EXPECT_TRUE(res.ok) << res.detail;
  EXPECT_NE(res.detail.find("Fake GPU"), std::string::npos) << res.detail;
}

// A canary that does not answer within the wall limit fails as a wedged GPU.
TEST_F(SandboxFixture, HungCanaryIsATimeout) {
  const fs::path script = cfg.state_dir / "hang.sh";
  std::ofstream(script) << "#!/bin/sh\nexec sleep 60\n";
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  auto o = opts();
  o.binary = script;
  o.wall = 700ms;
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = kj::sandboxed_canary(cfg, o)(0);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.detail.find("canary timed out"), std::string::npos) << res.detail;
  EXPECT_NE(res.detail.find("wedged"), std::string::npos) << res.detail;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// A sandbox run that never comes back (a tree stuck in the driver) is given up on at wall + grace.
TEST_F(SandboxFixture, StuckCanaryIsGivenUpOn) {
  auto never = std::make_shared<std::promise<void>>();
  auto o = opts();
  o.wall = 100ms;
  o.stuck_grace = 200ms;
  o.run_sandbox = [f = never->get_future().share()](const kjsandbox::Policy&) {
    f.wait();
    return kjsandbox::Report{};
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = kj::sandboxed_canary(cfg, o)(0);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.detail.find("stuck in the driver"), std::string::npos) << res.detail;
  EXPECT_GE(took, 2300ms);
  EXPECT_LT(took, 5s);
  never->set_value();  // let the abandoned thread finish before the fixture removes its dir
  EXPECT_TRUE([&] {
    for (int i = 0; i < 500 && jobs_left() > 0; ++i) std::this_thread::sleep_for(10ms);
    return jobs_left() == 0;
  }());
}

TEST_F(SandboxFixture, MissingBinaryFails) {
  auto o = opts();
  o.binary = cfg.state_dir / "no-such-canary";
  const auto res = kj::sandboxed_canary(cfg, o)(0);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.detail.find("no canary binary"), std::string::npos) << res.detail;
}

// GpuHealth with the real sandboxed canary: a CUDA fault on this host's GPU 0. Without a GPU the
// canary fails (no driver), so the GPU is quarantined; on a GPU node it passes and stays healthy.
TEST_F(SandboxFixture, GpuHealthWithTheRealCanary) {
  kj::GpuHealth h(kj::sandboxed_canary(cfg, opts()));
  const bool usable = h.after_job(0, kj::GpuJobOutcome::CudaFault, "test");
  EXPECT_EQ(usable, host_has_nvidia_gpu()) << h.to_json().dump();
}

}  // namespace
