// What the sandbox sees: read-only root, no host paths, own pid/net/uts namespaces, exactly the
// policy's environment and identity; and the host is left as it was.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "helpers.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;

class SandboxIsolation : public SandboxTest {};

std::set<std::string> interfaces(const std::string& proc_net_dev) {
  std::set<std::string> names;
  for (const auto& line : lines(proc_net_dev)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    names.insert(name);
  }
  return names;
}

std::string host_hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST_F(SandboxIsolation, RootIsReadOnlyAndJobDirWritable) {
  TempDir job;
  auto p = shell(
      "for f in /usr/kjtest /kjtest /etc/kjtest /dev/kjtest /usr/bin/kjtest; do "
      "  touch $f 2>/dev/null && echo writable:$f; done; "
      "echo data > /job/out.txt && echo job-ok; echo x > /tmp/t && echo tmp-ok; "
      "echo x > /dev/shm/t && echo shm-ok; echo x > /dev/null && echo null-ok");
  p.binds.push_back({job.path(), "/job", true});
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "job-ok\ntmp-ok\nshm-ok\nnull-ok\n");
  EXPECT_EQ(read_file(job.file("out.txt")), "data\n");
  struct stat st{};
  ASSERT_EQ(::stat(job.file("out.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, sandbox_host_uid());
  EXPECT_FALSE(exists("/usr/kjtest"));
  EXPECT_FALSE(exists("/usr/bin/kjtest"));
}

TEST_F(SandboxIsolation, ReadOnlyBindStaysReadOnly) {
  TempDir job;
  write_file(job.file("given.txt"), "given\n");
  auto p = shell("cat /in/given.txt; echo changed > /in/given.txt 2>/dev/null || echo refused; "
                 "touch /in/new 2>/dev/null || echo refused");
  p.binds.push_back({job.path(), "/in", false});
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "given\nrefused\nrefused\n");
  EXPECT_EQ(read_file(job.file("given.txt")), "given\n");
  EXPECT_FALSE(exists(job.file("new")));
}

TEST_F(SandboxIsolation, HostPathsOutsideBindsAreInvisible) {
  TempDir unrelated;  // a host dir under /tmp that is not bound
  write_file(unrelated.file("secret"), "x");
  auto p = shell("for f in /root /home /work /var /run /mnt /opt /srv /boot /etc/passwd /etc/shadow "
                 "/etc/hostname /sys/fs /sys/class /oldroot /newroot " + unrelated.file("secret") +
                 "; do [ -e $f ] && echo visible:$f; done; ls /; ls /tmp");
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data.find("visible:"), std::string::npos) << r.stdout_data;
  // The top level is exactly what the policy made.
  const auto top = lines(r.stdout_data);
  std::set<std::string> names(top.begin(), top.end());
  for (const char* want : {"usr", "etc", "dev", "proc", "tmp", "sys"})
    EXPECT_TRUE(names.count(want)) << want;
  for (const char* not_want : {"root", "home", "work", "var"}) EXPECT_FALSE(names.count(not_want)) << not_want;
}

TEST_F(SandboxIsolation, MergedUsrSymlinksRecreated) {
  auto r = kjsandbox::run(shell("readlink /bin; readlink /lib; [ -x /bin/sh ] && echo ok"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  char buf[64] = {};
  if (::readlink("/bin", buf, sizeof buf - 1) > 0) {
    EXPECT_EQ(lines(r.stdout_data).at(0), buf);
  }
  EXPECT_EQ(lines(r.stdout_data).back(), "ok");
}

TEST_F(SandboxIsolation, FreshPidNamespace) {
  auto r = kjsandbox::run(shell("echo $$ $PPID; ls /proc | grep -c '^[0-9]*$'; /usr/bin/ps -e -o pid= | wc -l"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  const auto out = lines(r.stdout_data);
  ASSERT_EQ(out.size(), 3u) << r.stdout_data;
  EXPECT_EQ(out[0], "2 1");  // the shell is pid 2, its parent (init) pid 1
  EXPECT_LE(std::stoi(out[1]), 5);  // init, sh, ls, grep (and maybe a subshell)
  EXPECT_LE(std::stoi(out[2]), 5);
}

TEST_F(SandboxIsolation, NetworkNamespaceHasOnlyLoopback) {
  auto r = kjsandbox::run(policy_for({"/bin/cat", "/proc/net/dev"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(interfaces(r.stdout_data), std::set<std::string>{"lo"});

  auto p = policy_for({"/bin/cat", "/proc/net/dev"});
  p.share_network = true;
  r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(interfaces(r.stdout_data), interfaces(read_file("/proc/net/dev")));
}

TEST_F(SandboxIsolation, HostnameIsPolicyHostname) {
  const std::string before = host_hostname();
  auto p = policy_for({"/bin/cat", "/proc/sys/kernel/hostname"});
  p.hostname = "kjtest-box";
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "kjtest-box\n");
  EXPECT_EQ(host_hostname(), before);
}

TEST_F(SandboxIsolation, EnvironmentIsExactlyPolicyEnv) {
  ::setenv("KJSANDBOX_TEST_HOST_ONLY", "leak", 1);
  auto p = policy_for({"/usr/bin/env"});
  p.env = {{"PATH", "/usr/bin:/bin"}, {"FOO", "bar baz"}, {"EMPTY", ""}};
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  auto got = lines(r.stdout_data);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"EMPTY=", "FOO=bar baz", "PATH=/usr/bin:/bin"}));

  p.env.clear();
  r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "");
}

TEST_F(SandboxIsolation, IdentityIsInsideUidWithoutGroupsOrCapabilities) {
  auto r = kjsandbox::run(shell("id -u; id -g; grep -E '^(Groups|CapEff|NoNewPrivs):' /proc/self/status"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  const auto out = lines(r.stdout_data);
  ASSERT_GE(out.size(), 4u) << r.stdout_data;
  EXPECT_EQ(out[0], "1000");
  EXPECT_EQ(out[1], "1000");
  EXPECT_EQ(out[2].find_first_not_of(" \t", 7), std::string::npos) << out[2];  // "Groups:" empty
  EXPECT_EQ(out[3], "CapEff:\t0000000000000000");

  auto p = shell("id -u; id -g");
  p.inside_uid = 4242;
  p.inside_gid = 4343;
  r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "4242\n4343\n");
}

TEST_F(SandboxIsolation, HostMountsAndHostnameUnchanged) {
  const std::string mounts_before = read_file("/proc/self/mountinfo");
  const std::string host_before = host_hostname();
  TempDir job;
  auto p = shell("echo hi > /job/x");
  p.binds.push_back({job.path(), "/job", true});
  p.tmpfs.push_back({"/scratch", 1 << 20});
  p.hostname = "elsewhere";
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(read_file("/proc/self/mountinfo"), mounts_before);
  EXPECT_EQ(host_hostname(), host_before);
}

TEST_F(SandboxIsolation, TmpfsSizeIsCapped) {
  auto p = shell("head -c 3000000 /dev/zero > /scratch/big 2>/dev/null && echo fit || echo full");
  p.tmpfs.push_back({"/scratch", 1 << 20});
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "full\n");
}

}  // namespace
}  // namespace kjtest
