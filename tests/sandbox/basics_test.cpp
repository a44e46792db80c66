// Outcomes: exit codes, signals, captured output, stdin, setup failures, concurrency.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "helpers.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;

class SandboxBasics : public SandboxTest {};

TEST_F(SandboxBasics, ProbeSaysAvailable) {
  std::string why;
  EXPECT_TRUE(kjsandbox::namespaces_available(&why)) << why;
  EXPECT_TRUE(why.empty());
}

TEST_F(SandboxBasics, ExitZeroIsOk) {
  auto r = kjsandbox::run(policy_for({"/bin/true"}));
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.error.empty());
}

TEST_F(SandboxBasics, ExitCodePropagates) {
  auto r = kjsandbox::run(shell("exit 42"));
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 42);
  EXPECT_FALSE(r.ok());
}

class SandboxSignals : public SandboxTest, public ::testing::WithParamInterface<int> {};

TEST_P(SandboxSignals, ReportedAsSignaled) {
  const int sig = GetParam();
  kjsandbox::Policy p;
  switch (sig) {
    case SIGSEGV:  // a real fault, not a kill(2)
      p = policy_for({"/usr/bin/python3", "-c", "import ctypes; ctypes.string_at(0)"});
      break;
    case SIGABRT:
      p = policy_for({"/usr/bin/python3", "-c", "import os; os.abort()"});
      break;
    default:
      p = shell("kill -" + std::to_string(sig) + " $$");
  }
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::Signaled) << r.error << r.stderr_data;
  EXPECT_EQ(r.signal, sig);
  EXPECT_FALSE(r.ok());
}

INSTANTIATE_TEST_SUITE_P(Fatal, SandboxSignals, ::testing::Values(SIGSEGV, SIGABRT, SIGKILL),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });

TEST_F(SandboxBasics, StdoutAndStderrCapturedExactly) {
  std::string expected_out = "line1\nline2\n";
  for (int i = 1; i <= 100000; ++i) expected_out += std::to_string(i) + "\n";  // > pipe buffer
  auto r = kjsandbox::run(shell("printf 'line1\\nline2\\n'; printf 'err1\\n' >&2; seq 1 100000; "
                                "printf 'no newline' >&2"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, expected_out);
  EXPECT_EQ(r.stderr_data, "err1\nno newline");
  EXPECT_FALSE(r.stdout_truncated);
  EXPECT_FALSE(r.stderr_truncated);
}

TEST_F(SandboxBasics, StdinFromHostFile) {
  TempDir dir;
  write_file(dir.file("in.txt"), "fed through stdin\n");
  auto p = policy_for({"/bin/cat"});
  p.stdin_path = dir.file("in.txt");
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "fed through stdin\n");

  // Default stdin is /dev/null.
  r = kjsandbox::run(policy_for({"/bin/cat"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "");
}

TEST_F(SandboxBasics, MissingCommandIsSetupFailed) {
  auto r = kjsandbox::run(policy_for({"/usr/bin/no-such-command"}));
  EXPECT_EQ(r.outcome, Outcome::SetupFailed);
  EXPECT_NE(r.error.find("execve /usr/bin/no-such-command"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("No such file"), std::string::npos) << r.error;
}

// A child that dies while it builds its root (here: a bind source behind a directory only root may
// enter) has closed its sync pipe before the launcher's second release byte: that write must not
// raise SIGPIPE, which would end the calling process (kjudged and every job it runs).
TEST_F(SandboxBasics, AChildThatDiesDuringSetupDoesNotKillTheCaller) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: sandboxes then run as an unprivileged host uid";
  TempDir dir;
  const std::string closed = dir.file("root-only"), inner = closed + "/inner";
  ASSERT_EQ(::mkdir(closed.c_str(), 0700), 0);
  ASSERT_EQ(::chown(closed.c_str(), 0, 0), 0);
  ASSERT_EQ(::mkdir(inner.c_str(), 0755), 0);
  auto p = policy_for({"/bin/true"});
  p.binds.push_back({inner, "/x", false});
  for (int i = 0; i < 20; ++i) {  // the race with the child's exit goes both ways: try it often
    auto r = kjsandbox::run(p);
    EXPECT_EQ(r.outcome, Outcome::SetupFailed) << r.error;
  }
}

TEST_F(SandboxBasics, BadPolicyIsSetupFailed) {
  auto p = policy_for({"/bin/true"});
  p.binds.push_back({"/no/such/dir", "/x", false});
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::SetupFailed);
  EXPECT_NE(r.error.find("/no/such/dir"), std::string::npos) << r.error;

  r = kjsandbox::run(policy_for({"true"}));
  EXPECT_EQ(r.outcome, Outcome::SetupFailed);
  EXPECT_NE(r.error.find("absolute"), std::string::npos) << r.error;

  p = policy_for({"/bin/true"});
  p.cwd = "/no/such/dir";
  r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::SetupFailed);
  EXPECT_NE(r.error.find("chdir /no/such/dir"), std::string::npos) << r.error;

  p = policy_for({"/bin/true"});
  p.binds.push_back({"/usr/../etc", "/x", false});
  r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::SetupFailed);
}

TEST_F(SandboxBasics, ConcurrentRunsFromFourThreads) {
  constexpr int kThreads = 4, kRuns = 5;
  std::vector<std::string> failures[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < kRuns; ++i) {
        const std::string tag = "thread" + std::to_string(t) + "-run" + std::to_string(i);
        auto r = kjsandbox::run(shell("echo " + tag + "; echo " + tag + " >&2; exit " +
                                      std::to_string(t * 10 + i)));
        if (r.outcome != Outcome::Exited || r.exit_code != t * 10 + i || r.stdout_data != tag + "\n" ||
            r.stderr_data != tag + "\n")
          failures[t].push_back(tag + ": " + kjsandbox::to_string(r.outcome) + " " +
                                std::to_string(r.exit_code) + " '" + r.stdout_data + "' " + r.error);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(failures[t].empty()) << failures[t].front();
}

}  // namespace
}  // namespace kjtest
