// The kjudge-sandbox CLI: pass-through, report, exit status.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "helpers.h"

namespace kjtest {
namespace {

class SandboxCli : public SandboxTest {
 protected:
  struct Result {
    int status = -1;
    std::string out, err;
  };
  Result cli(const std::string& args) {
    const std::string cmd = std::string(KJSANDBOX_CLI_PATH) + " " + args + " >" + dir_.file("out") +
                            " 2>" + dir_.file("err");
    int st = std::system(cmd.c_str());
    Result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = read_file(dir_.file("out"));
    r.err = read_file(dir_.file("err"));
    return r;
  }
  TempDir dir_;
};

TEST_F(SandboxCli, PassesOutputThroughAndMirrorsExitCode) {
  auto r = cli("--json --env GREETING=hi -- /bin/sh -c 'echo $GREETING; echo oops >&2; exit 3'");
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out, "hi\n");
  ASSERT_EQ(r.err.rfind("oops\n", 0), 0u) << r.err;
  auto report = nlohmann::json::parse(r.err.substr(5));
  EXPECT_EQ(report["outcome"], "exited");
  EXPECT_EQ(report["exit_code"], 3);
  EXPECT_EQ(report["stdout_bytes"], 3);
}

TEST_F(SandboxCli, TimeoutAndSignalExitStatus) {
  auto r = cli("--wall-ms 300 -- /bin/sleep 30");
  EXPECT_EQ(r.status, 124);
  EXPECT_NE(r.err.find("wall_timeout"), std::string::npos) << r.err;

  r = cli("-- /bin/sh -c 'kill -TERM $$'");
  EXPECT_EQ(r.status, 128 + SIGTERM);
  EXPECT_NE(r.err.find("signal=15"), std::string::npos) << r.err;

  r = cli("--output-limit 1k -- /usr/bin/yes");
  EXPECT_EQ(r.status, 123);
  EXPECT_EQ(r.out.size(), 1024u);
}

TEST_F(SandboxCli, BindsTmpfsAndCwd) {
  TempDir job;
  write_file(job.file("in.txt"), "input\n");
  auto r = cli("--bind " + job.path() + ":/in --bind-rw " + job.path() + ":/out --tmpfs /scratch:1m " +
               "--cwd /in -- /bin/sh -c 'cat in.txt; echo made > /out/made.txt; df -k /scratch | tail -1'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("input\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" 1024 "), std::string::npos) << r.out;
  EXPECT_EQ(read_file(job.file("made.txt")), "made\n");
}

TEST_F(SandboxCli, SetupFailureExitStatus) {
  auto r = cli("-- /no/such/program");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("execve /no/such/program"), std::string::npos) << r.err;
}

// The sandbox dies with its launcher: a kjudged that exits mid-job (a drain timeout) left its
// GPU worker and candidates running, holding 26 GB of an H100 (bench/results, run 16), because
// taking the inside identity (setresuid) cleared the parent-death signal set before it.
TEST_F(SandboxCli, DiesWithItsLauncher) {
  TempDir job;
  const std::string cmd = std::string(KJSANDBOX_CLI_PATH) + " --bind-rw " + job.path() +
                          ":/out -- /bin/sh -c 'echo started > /out/started; sleep 2; echo alive > /out/late'";
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 100 && read_file(job.file("started")).empty(); ++i) ::usleep(50'000);
  ASSERT_EQ(read_file(job.file("started")), "started\n");
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  ::sleep(3);
  EXPECT_EQ(read_file(job.file("late")), "") << "the sandboxed command outlived its launcher";
}

}  // namespace
}  // namespace kjtest
