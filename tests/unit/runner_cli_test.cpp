// kjudge-runner end to end, outside any sandbox: the bundled examples (examples/native) compiled
// with g++ or built on the OpenCL device (PoCL on CI), run through the real binary. Checks the
// exit-status contract, outputs, poisoning, timings, and that crashes and endless loops really are.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kjudge/v1/runner.pb.h"

namespace {

namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::int64_t kN = 1 << 20;  // the vector_add examples' size

struct Outcome {
  bool timed_out = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
};

// Runs argv, killing it (SIGKILL) after `limit`.
Outcome run(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  Outcome o;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      o.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return o;
    }
    std::this_thread::sleep_for(10ms);
  }
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  return o;
}

std::vector<float> read_floats(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<float> v(static_cast<std::size_t>(fs::file_size(p)) / sizeof(float));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

class RunnerCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kjrunner-cli-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "in");
    fs::create_directories(dir_ / "out");
    ::setenv("POCL_CACHE_DIR", (dir_ / "pocl").c_str(), 1);
    std::mt19937 gen(1234);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto* v : {&a_, &b_}) {
      v->resize(kN);
      for (auto& x : *v) x = u(gen);
    }
    write(dir_ / "in/arg0.bin", a_);
    write(dir_ / "in/arg1.bin", b_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void write(const fs::path& p, const std::vector<float>& v) {
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(v.data()),
                                             static_cast<std::streamsize>(v.size() * sizeof(float)));
  }

  // RunnerRequest for vector_add(a IN, b IN, out OUT, n I64).
  v1::RunnerRequest request(v1::Language lang, v1::RunnerRequest::Mode mode, const fs::path& artifact) {
    v1::RunnerRequest r;
    r.set_mode(mode);
    r.set_language(lang);
    r.set_entry("vector_add");
    for (const char* name : {"a", "b", "out"}) {
      auto* arg = r.add_args();
      arg->set_name(name);
      arg->mutable_tensor()->set_dtype(v1::F32);
      arg->mutable_tensor()->add_shape(kN);
      arg->mutable_tensor()->set_role(std::string(name) == "out" ? v1::OUT : v1::IN);
    }
    auto* n = r.add_args();
    n->set_name("n");
    n->mutable_scalar()->set_dtype(v1::I64);
    n->mutable_scalar()->set_i(kN);
    r.mutable_launch()->add_global_size(kN);
    r.set_artifact_path(artifact.string());
    r.set_input_dir((dir_ / "in").string());
    r.set_output_dir((dir_ / "out").string());
    r.set_warmup(1);
    r.set_trials(3);
    return r;
  }

  Outcome invoke(const v1::RunnerRequest& r, std::chrono::milliseconds limit = 60s) {
    std::ofstream(dir_ / "request.bin", std::ios::binary) << r.SerializeAsString();
    return run({KJ_RUNNER, "--request", dir_ / "request.bin", "--report", dir_ / "report.bin"}, limit);
  }

  bool report(v1::RunnerReport* rep) {
    std::ifstream in(dir_ / "report.bin", std::ios::binary);
    return in && rep->ParseFromIstream(&in);
  }

  fs::path compile_cpp(const std::string& example) {
    const fs::path so = dir_ / (example + ".so");
    const std::string src = std::string(KJ_EXAMPLES_DIR) + "/cpp/vector_add/" + example + ".cpp";
    const std::string cmd = "g++ -O2 -std=c++17 -shared -fPIC -o " + so.string() + " " + src + " 2>/dev/null";
    return std::system(cmd.c_str()) == 0 ? so : fs::path{};
  }

  // BUILD on the OpenCL device; returns the outcome, the binary lands in <example>.clbin.
  Outcome build_cl(const std::string& example) {
    auto r = request(v1::OPENCL, v1::RunnerRequest::BUILD, dir_ / (example + ".clbin"));
    r.set_source_path(std::string(KJ_EXAMPLES_DIR) + "/opencl/vector_add/" + example + ".cl");
    return invoke(r);
  }

  void expect_sum(bool exact_everywhere) {
    const auto out = read_floats(dir_ / "out/arg2.bin");
    ASSERT_EQ(out.size(), static_cast<std::size_t>(kN));
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < kN; ++i) bad += out[i] != a_[i] + b_[i];
    if (exact_everywhere) EXPECT_EQ(bad, 0);
    else EXPECT_GT(bad, 0);
  }

  fs::path dir_;
  std::vector<float> a_, b_;
};

TEST_F(RunnerCli, CppCorrectCandidateWritesSumAndTimes) {
  const auto so = compile_cpp("ok");
  ASSERT_FALSE(so.empty());
  const auto o = invoke(request(v1::CPP, v1::RunnerRequest::RUN, so));
  ASSERT_EQ(o.exit_code, 0);
  v1::RunnerReport rep;
  ASSERT_TRUE(report(&rep));
  EXPECT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep.timing_method(), "steady_clock");
  ASSERT_EQ(rep.trial_ms_size(), 3);
  for (double ms : rep.trial_ms()) EXPECT_GT(ms, 0);
  expect_sum(true);
}

TEST_F(RunnerCli, CppUnwrittenOutputStaysPoisoned) {
  const auto so = compile_cpp("wrong");  // never writes the last element
  ASSERT_FALSE(so.empty());
  ASSERT_EQ(invoke(request(v1::CPP, v1::RunnerRequest::RUN, so)).exit_code, 0);
  const auto out = read_floats(dir_ / "out/arg2.bin");
  EXPECT_TRUE(std::isnan(out.back()));
  EXPECT_EQ(out[0], a_[0] + b_[0]);
}

TEST_F(RunnerCli, CppCrashKillsTheRunnerAndLeavesNoReport) {
  std::ofstream(dir_ / "report.bin") << "stale";
  const auto so = compile_cpp("crash");
  ASSERT_FALSE(so.empty());
  const auto o = invoke(request(v1::CPP, v1::RunnerRequest::RUN, so));
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_FALSE(fs::exists(dir_ / "report.bin"));
}

TEST_F(RunnerCli, CppEndlessLoopNeverReturns) {
  const auto so = compile_cpp("infinite_loop");
  ASSERT_FALSE(so.empty());
  EXPECT_TRUE(invoke(request(v1::CPP, v1::RunnerRequest::RUN, so), 3s).timed_out);
}

TEST_F(RunnerCli, CppThreadLeftRunningDoesNotCrashTheRunnerAtExit) {
  // a kernel that leaves a thread running in its own code: unloading the object would crash it
  std::ofstream(dir_ / "thread.cpp") << R"(
    #include <chrono>
    #include <cstdint>
    #include <thread>
    extern "C" void vector_add(const float* a, const float* b, float* out, int64_t n) {
      static const bool started = [] {
        std::thread([] { for (;;) std::this_thread::sleep_for(std::chrono::microseconds(50)); }).detach();
        return true;
      }();
      (void)started;
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
    })";
  const std::string so = (dir_ / "thread.so").string();
  ASSERT_EQ(std::system(("g++ -O2 -shared -fPIC -pthread -o " + so + " " + (dir_ / "thread.cpp").string()).c_str()), 0);
  const auto o = invoke(request(v1::CPP, v1::RunnerRequest::RUN, so));
  EXPECT_EQ(o.exit_code, 0) << "signal " << o.signal;
}

TEST_F(RunnerCli, CppCompileErrorExampleDoesNotCompile) { EXPECT_TRUE(compile_cpp("compile_error").empty()); }

TEST_F(RunnerCli, CppFailuresAreReportedWithExitOne) {
  const auto so = compile_cpp("ok");
  ASSERT_FALSE(so.empty());
  auto r = request(v1::CPP, v1::RunnerRequest::RUN, so);
  r.set_entry("no_such_function");
  ASSERT_EQ(invoke(r).exit_code, 1);
  v1::RunnerReport rep;
  ASSERT_TRUE(report(&rep));
  EXPECT_FALSE(rep.ok());
  EXPECT_NE(rep.error().find("dlsym(no_such_function)"), std::string::npos) << rep.error();

  fs::resize_file(dir_ / "in/arg1.bin", 16);
  ASSERT_EQ(invoke(request(v1::CPP, v1::RunnerRequest::RUN, so)).exit_code, 1);
  ASSERT_TRUE(report(&rep));
  EXPECT_NE(rep.error().find("has 16 bytes"), std::string::npos) << rep.error();

  ASSERT_EQ(invoke(request(v1::CPP, v1::RunnerRequest::BUILD, so)).exit_code, 1);
  ASSERT_TRUE(report(&rep));
  EXPECT_EQ(rep.error(), "BUILD mode is OpenCL-only");
}

TEST_F(RunnerCli, UsageAndUnreadableRequestExitTwo) {
  EXPECT_EQ(run({KJ_RUNNER}, 10s).exit_code, 2);
  std::ofstream(dir_ / "garbage.bin") << "\xff\xff\xff";
  EXPECT_EQ(run({KJ_RUNNER, "--request", dir_ / "garbage.bin", "--report", dir_ / "r.bin"}, 10s).exit_code, 2);
  EXPECT_EQ(run({KJ_RUNNER, "--request", dir_ / "missing.bin", "--report", dir_ / "r.bin"}, 10s).exit_code, 2);
}

TEST_F(RunnerCli, OpenClBuildThenRun) {
  ASSERT_EQ(build_cl("ok").exit_code, 0);
  v1::RunnerReport rep;
  ASSERT_TRUE(report(&rep));
  EXPECT_TRUE(rep.ok()) << rep.error();
  EXPECT_FALSE(rep.device_name().empty());
  EXPECT_FALSE(rep.platform_version().empty());
  ASSERT_GT(fs::file_size(dir_ / "ok.clbin"), 0u);

  ASSERT_EQ(invoke(request(v1::OPENCL, v1::RunnerRequest::RUN, dir_ / "ok.clbin")).exit_code, 0);
  ASSERT_TRUE(report(&rep));
  EXPECT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep.timing_method(), "opencl_profiling");
  EXPECT_EQ(rep.trial_ms_size(), 3);
  expect_sum(true);
}

TEST_F(RunnerCli, OpenClWrongCandidateRunsButDiffers) {
  ASSERT_EQ(build_cl("wrong").exit_code, 0);
  ASSERT_EQ(invoke(request(v1::OPENCL, v1::RunnerRequest::RUN, dir_ / "wrong.clbin")).exit_code, 0);
  expect_sum(false);
}

TEST_F(RunnerCli, OpenClCompileErrorReportsTheLog) {
  ASSERT_EQ(build_cl("compile_error").exit_code, 1);
  v1::RunnerReport rep;
  ASSERT_TRUE(report(&rep));
  EXPECT_EQ(rep.error(), "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE");
  EXPECT_NE(rep.build_log().find("bias"), std::string::npos) << rep.build_log();
  EXPECT_FALSE(fs::exists(dir_ / "compile_error.clbin"));
}

TEST_F(RunnerCli, OpenClCrashIsARuntimeFailure) {
  ASSERT_EQ(build_cl("crash").exit_code, 0);
  const auto o = invoke(request(v1::OPENCL, v1::RunnerRequest::RUN, dir_ / "crash.clbin"));
  // PoCL: the process dies; a GPU driver reports it as an error from the queue instead
  EXPECT_TRUE(o.signal == SIGSEGV || o.exit_code == 1) << o.exit_code << " " << o.signal;
}

TEST_F(RunnerCli, OpenClEndlessLoopNeverFinishes) {
  ASSERT_EQ(build_cl("infinite_loop").exit_code, 0);
  EXPECT_TRUE(invoke(request(v1::OPENCL, v1::RunnerRequest::RUN, dir_ / "infinite_loop.clbin"), 5s).timed_out);
}

TEST_F(RunnerCli, OpenClApiErrorsAreNamed) {
  ASSERT_EQ(build_cl("ok").exit_code, 0);
  auto r = request(v1::OPENCL, v1::RunnerRequest::RUN, dir_ / "ok.clbin");
  r.mutable_launch()->add_local_size(1000);  // does not divide 2^20
  ASSERT_EQ(invoke(r).exit_code, 1);
  v1::RunnerReport rep;
  ASSERT_TRUE(report(&rep));
  EXPECT_EQ(rep.error(), "clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE");

  r = request(v1::OPENCL, v1::RunnerRequest::RUN, dir_ / "ok.clbin");
  r.mutable_args()->RemoveLast();
  ASSERT_EQ(invoke(r).exit_code, 1);
  ASSERT_TRUE(report(&rep));
  EXPECT_EQ(rep.error(), "kernel 'vector_add' takes 4 arguments, the task declares 3");
}

}  // namespace
