#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "pipeline/run/sandbox_profiles.h"
#include "pipeline/job/toolchain.h"

namespace {
namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kjcfg-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

TEST(Config, DefaultsWithoutAFile) {
  auto c = kj::load_config(std::nullopt);
  EXPECT_FALSE(c.node.empty());
  EXPECT_EQ(c.workers, 2u);
  EXPECT_EQ(c.result_ttl, std::chrono::hours(1));
}

// docs/capacity-plan.md steps 1-2: the TTLs that bound Redis memory, the artifact file store
TEST(Config, MarkerTtlAndArtifactDir) {
  const auto c = kj::load_config(std::nullopt);
  EXPECT_EQ(c.queue.marker_ttl, std::chrono::hours(1));
  EXPECT_EQ(c.build.artifact_ttl, std::chrono::hours(1));
  EXPECT_TRUE(c.build.artifact_dir.empty());
  TempDir d;
  write(d.path / "ok.toml", "[queue]\nmarker_ttl_s = 86400\n[build]\nartifact_dir = \"/mnt/kj\"\nartifact_file_ttl_s = 600\n");
  const auto ok = kj::load_config(d.path / "ok.toml");
  EXPECT_EQ(ok.queue.marker_ttl, std::chrono::hours(24));
  EXPECT_EQ(ok.build.artifact_dir, "/mnt/kj");
  EXPECT_EQ(ok.build.artifact_file_ttl, std::chrono::minutes(10));
  for (const char* bad : {"[queue]\nmarker_ttl_s = 5\n", "[build]\nartifact_dir = \"relative/dir\"\n",
                          "[build]\nartifact_file_ttl_s = 1\n"}) {
    write(d.path / "bad.toml", bad);
    EXPECT_THROW(kj::load_config(d.path / "bad.toml"), std::runtime_error) << bad;
  }
}

TEST(Config, KernelTraceLibBesideTheBinaryOrConfigured) {
  // default: beside the running binary, where the build puts it (build/bin) and device_bundle ships it
  EXPECT_EQ(kj::load_config(std::nullopt).kernelbench.kernel_trace_lib, kj::self_dir() / "libkjudge_kernel_trace.so");
  TempDir d;
  write(d.path / "kjudged.toml", "[kernelbench]\nkernel_trace_lib = \"/opt/x/libkt.so\"\n");
  EXPECT_EQ(kj::load_config(d.path / "kjudged.toml").kernelbench.kernel_trace_lib, "/opt/x/libkt.so");
}

TEST(Config, AnEmptyPathKeepsTheDefaultAGivenOneReplacesIt) {
  const auto defaults = kj::load_config(std::nullopt);
  TempDir d;
  write(d.path / "kjudged.toml", "[daemon]\nstate_dir = \"\"\n[kernelbench]\npython = \"\"\nresume_lib = \"\"\n"
                                 "cache_dir = \"/srv/kjcache\"\nharness_dir = \"/opt/kj/python\"\n");
  const auto c = kj::load_config(d.path / "kjudged.toml");
  EXPECT_EQ(c.state_dir, defaults.state_dir);
  EXPECT_EQ(c.kernelbench.python, defaults.kernelbench.python);
  EXPECT_EQ(c.kernelbench.resume_lib, defaults.kernelbench.resume_lib);
  EXPECT_EQ(c.kernelbench.cache_dir, "/srv/kjcache");
  EXPECT_EQ(c.kernelbench.harness_dir, "/opt/kj/python");
}

TEST(Config, NvccHalvesOnByDefaultAndSwitchedOff) {
  EXPECT_TRUE(kj::load_config(std::nullopt).kernelbench.nvcc_halves);
  TempDir d;
  write(d.path / "kjudged.toml", "[kernelbench]\nnvcc_halves = false\n");
  EXPECT_FALSE(kj::load_config(d.path / "kjudged.toml").kernelbench.nvcc_halves);
}

TEST(Config, LightHeadersOnByDefaultAndCanBeTurnedOff) {
  EXPECT_TRUE(kj::load_config(std::nullopt).kernelbench.light_headers);
  TempDir d;
  write(d.path / "kjudged.toml", "[kernelbench]\nlight_headers = false\n");
  EXPECT_FALSE(kj::load_config(d.path / "kjudged.toml").kernelbench.light_headers);
}

TEST(Config, PchVariantsAllThreeByDefaultOrAListOfKnownLevels) {
  EXPECT_EQ(kj::load_config(std::nullopt).kernelbench.pch_variants, (std::vector<std::string>{"O0", "O2", "O3"}));
  TempDir d;
  write(d.path / "kjudged.toml", "[kernelbench]\npch_variants = [\"O2\"]\n");
  EXPECT_EQ(kj::load_config(d.path / "kjudged.toml").kernelbench.pch_variants, std::vector<std::string>{"O2"});
  for (const char* bad : {"[]", "[\"O1\"]", "\"O2\"", "[2]"}) {
    write(d.path / "kjudged.toml", std::string("[kernelbench]\npch_variants = ") + bad + "\n");
    EXPECT_THROW(kj::load_config(d.path / "kjudged.toml"), std::runtime_error) << bad;
  }
}

// A [kernelbench] number: its default, a value taken, and values refused.
void expect_kernelbench_number(const std::string& key, double kj::KernelBenchConfig::*field, double fallback,
                               const std::string& good, double good_value, std::initializer_list<const char*> bad) {
  EXPECT_EQ(kj::load_config(std::nullopt).kernelbench.*field, fallback) << key;
  TempDir d;
  write(d.path / "kjudged.toml", "[kernelbench]\n" + key + " = " + good + "\n");
  EXPECT_EQ(kj::load_config(d.path / "kjudged.toml").kernelbench.*field, good_value) << key;
  for (const char* b : bad) {
    write(d.path / "kjudged.toml", "[kernelbench]\n" + key + " = " + b + "\n");
    EXPECT_THROW(kj::load_config(d.path / "kjudged.toml"), std::runtime_error) << key << " = " << b;
  }
}

TEST(Config, CandidateDeviceShareTheWorkersByDefaultOrASetShare) {  // 0: what the worker leaves
  expect_kernelbench_number("candidate_device_share", &kj::KernelBenchConfig::candidate_device_share, 0.0,
                            "0.25", 0.25, {"-0.1", "0.95", "\"half\""});
}

TEST(Config, AdmissionBackfillTwentySecondsByDefaultOrAWindowInSeconds) {  // 0: strict arrival order
  expect_kernelbench_number("admission_backfill_seconds", &kj::KernelBenchConfig::admission_backfill_seconds, 20.0,
                            "0", 0.0, {"-1", "3601", "\"long\""});
}

TEST(Config, CandidatesBorrowNothingByDefaultOrAShareOfThePreparationBudget) {
  expect_kernelbench_number("candidate_borrow_share", &kj::KernelBenchConfig::candidate_borrow_share, 0.0,
                            "1", 1.0, {"-0.5", "1.5", "\"all\""});
}

TEST(Config, TheCpuBackendAdmitsNothingByDefaultOrRehearsesADeviceOfSomeGib) {
  expect_kernelbench_number("cpu_rehearsal_device_gib", &kj::KernelBenchConfig::cpu_rehearsal_device_gib, 0.0,
                            "16", 16.0, {"-1", "5000", "\"big\""});
}

TEST(Config, AdmissionInArrivalOrderByDefaultOrLargestFirst) {
  EXPECT_FALSE(kj::load_config(std::nullopt).kernelbench.admission_largest_first);
  TempDir d;
  write(d.path / "kjudged.toml", "[kernelbench]\nadmission_largest_first = true\n");
  EXPECT_TRUE(kj::load_config(d.path / "kjudged.toml").kernelbench.admission_largest_first);
  for (const char* bad : {"1", "\"yes\""}) {
    write(d.path / "kjudged.toml", std::string("[kernelbench]\nadmission_largest_first = ") + bad + "\n");
    EXPECT_THROW(kj::load_config(d.path / "kjudged.toml"), std::runtime_error) << bad;
  }
}

TEST(Config, FileThenDropInsInNameOrder) {
  TempDir d;
  write(d.path / "kjudged.toml", "[daemon]\nworkers = 4\nnode = \"n1\"\n[redis]\nurl = \"unix:///x.sock\"\n");
  fs::create_directories(d.path / "kjudged.toml.d");
  write(d.path / "kjudged.toml.d" / "10-a.toml", "[daemon]\nworkers = 6\n");
  write(d.path / "kjudged.toml.d" / "20-b.toml", "[daemon]\nworkers = 8\n[limits]\nrun_wall_ms = 500\n");
  auto c = kj::load_config(d.path / "kjudged.toml");
  EXPECT_EQ(c.workers, 8u);
  EXPECT_EQ(c.node, "n1");
  EXPECT_EQ(c.redis.url, "unix:///x.sock");
  EXPECT_EQ(c.limits.run_wall_ms, 500u);
}

TEST(Config, RedisReplicaAcksDefaultToTheUrlAndAreChecked) {
  TempDir d;
  write(d.path / "a.toml", "[redis]\nurl = \"redis+sentinel://s1,s2,s3/kjudge\"\n");
  EXPECT_EQ(kj::load_config(d.path / "a.toml").redis.replica_acks, -1);  // the URL decides (1 here)
  write(d.path / "b.toml", "[redis]\nreplica_acks = 2\n");
  EXPECT_EQ(kj::load_config(d.path / "b.toml").redis.replica_acks, 2);
  write(d.path / "c.toml", "[redis]\nreplica_acks = -2\n");
  try {
    kj::load_config(d.path / "c.toml");
    FAIL() << "accepted replica_acks = -2";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("replica_acks"), std::string::npos) << e.what();
  }
}

TEST(Config, BadValuesNameTheFile) {
  TempDir d;
  write(d.path / "bad.toml", "[daemon]\nworkers = 0\n");
  try {
    kj::load_config(d.path / "bad.toml");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("workers"), std::string::npos);
  }
  write(d.path / "syntax.toml", "[daemon\n");
  EXPECT_THROW(kj::load_config(d.path / "syntax.toml"), std::runtime_error);
}

TEST(Config, SandboxAndToolchainDefaults) {
  const auto c = kj::load_config(std::nullopt);
  EXPECT_EQ(c.sandbox.compile_memory_bytes, 4ull << 30);
  EXPECT_EQ(c.sandbox.run_memory_bytes, 16ull << 30);
  EXPECT_EQ(c.sandbox.compile_pids, 512u);
  EXPECT_EQ(c.sandbox.run_pids, 1024u);
  EXPECT_FALSE(c.sandbox.compile_cpus);
  EXPECT_FALSE(c.sandbox.run_cpus);
  EXPECT_EQ(c.sandbox.compile_cpu_weight, 10u);
  EXPECT_EQ(c.sandbox.seccomp, kj::SeccompMode::Enforce);
  EXPECT_FALSE(c.sandbox.gpu_index);
  EXPECT_EQ(c.toolchain.cuda_arch, "");
  EXPECT_EQ(c.kernelbench.cuda_arch_list, "");
}

TEST(Config, SandboxAndToolchainKeys) {
  TempDir d;
  write(d.path / "kjudged.toml",
        "[sandbox]\ncompile_memory_bytes = 2147483648\nrun_memory_bytes = 34359738368\ncompile_pids = 64\n"
        "run_pids = 2048\ncompile_cpus = 1.5\nrun_cpus = 4\ncompile_cpu_weight = 50\nseccomp = \"log\"\ngpu_index = 3\n"
        "[toolchain]\ncuda_arch = \"sm_90a\"\n");
  auto c = kj::load_config(d.path / "kjudged.toml");
  EXPECT_EQ(c.sandbox.compile_memory_bytes, 2ull << 30);
  EXPECT_EQ(c.sandbox.run_memory_bytes, 32ull << 30);
  EXPECT_EQ(c.sandbox.compile_pids, 64u);
  EXPECT_EQ(c.sandbox.run_pids, 2048u);
  ASSERT_TRUE(c.sandbox.compile_cpus);
  EXPECT_DOUBLE_EQ(*c.sandbox.compile_cpus, 1.5);
  ASSERT_TRUE(c.sandbox.run_cpus);  // an integer is a number of CPUs too
  EXPECT_DOUBLE_EQ(*c.sandbox.run_cpus, 4.0);
  EXPECT_EQ(c.sandbox.compile_cpu_weight, 50u);
  EXPECT_EQ(c.sandbox.seccomp, kj::SeccompMode::Log);
  EXPECT_EQ(c.sandbox.gpu_index, 3);
  EXPECT_EQ(c.toolchain.cuda_arch, "sm_90a");
  EXPECT_EQ(c.kernelbench.cuda_arch_list, "9.0");  // derived: one key feeds both toolchains

  // A drop-in overrides key by key; run_cpus = 0 lifts the limit; an explicit arch list wins.
  fs::create_directories(d.path / "kjudged.toml.d");
  write(d.path / "kjudged.toml.d" / "10-x.toml",
        "[sandbox]\nrun_cpus = 0\nseccomp = \"enforce\"\n[kernelbench]\ncuda_arch_list = \"8.0;9.0\"\n");
  c = kj::load_config(d.path / "kjudged.toml");
  EXPECT_FALSE(c.sandbox.run_cpus);
  ASSERT_TRUE(c.sandbox.compile_cpus);
  EXPECT_EQ(c.sandbox.seccomp, kj::SeccompMode::Enforce);
  EXPECT_EQ(c.sandbox.run_pids, 2048u);
  EXPECT_EQ(c.kernelbench.cuda_arch_list, "8.0;9.0");
}

TEST(Config, TorchArchFromSm) {
  EXPECT_EQ(kj::torch_arch_from_sm("sm_90"), "9.0");
  EXPECT_EQ(kj::torch_arch_from_sm("sm_90a"), "9.0");
  EXPECT_EQ(kj::torch_arch_from_sm("sm_86"), "8.6");
  EXPECT_EQ(kj::torch_arch_from_sm("sm_100"), "10.0");
  EXPECT_EQ(kj::torch_arch_from_sm("sm_120f"), "12.0");
  EXPECT_EQ(kj::torch_arch_from_sm("90"), "");
  EXPECT_EQ(kj::torch_arch_from_sm(""), "");
}

// Every bad value is an error that names the file and the key (section.key).
TEST(Config, BadSandboxAndToolchainValuesNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[sandbox]\nrun_memory_bytes = -1\n", "sandbox.run_memory_bytes"},
      {"[sandbox]\ncompile_memory_bytes = 4096\n", "sandbox.compile_memory_bytes"},  // MiB meant, bytes read
      {"[sandbox]\nrun_memory_bytes = \"16G\"\n", "sandbox.run_memory_bytes"},
      {"[sandbox]\ncompile_memory_bytes = 4.0e9\n", "sandbox.compile_memory_bytes"},
      {"[sandbox]\ncompile_pids = -5\n", "sandbox.compile_pids"},
      {"[sandbox]\nrun_pids = 0\n", "sandbox.run_pids"},
      {"[sandbox]\nrun_pids = 1.5\n", "sandbox.run_pids"},
      {"[sandbox]\nrun_cpus = -1\n", "sandbox.run_cpus"},
      {"[sandbox]\nrun_cpus = \"2\"\n", "sandbox.run_cpus"},
      {"[sandbox]\ncompile_cpus = nan\n", "sandbox.compile_cpus"},
      {"[sandbox]\ncompile_cpus = 0.001\n", "sandbox.compile_cpus"},
      {"[sandbox]\ncompile_cpu_weight = 0\n", "sandbox.compile_cpu_weight"},
      {"[sandbox]\ncompile_cpu_weight = 10001\n", "sandbox.compile_cpu_weight"},
      {"[sandbox]\ncompile_cpu_weight = 2.5\n", "sandbox.compile_cpu_weight"},
      {"[sandbox]\nseccomp = \"strict\"\n", "sandbox.seccomp"},
      {"[sandbox]\nseccomp = \"Enforce\"\n", "sandbox.seccomp"},
      {"[sandbox]\nseccomp = false\n", "sandbox.seccomp"},
      {"[sandbox]\ngpu_index = -1\n", "sandbox.gpu_index"},
      {"[sandbox]\ngpu_index = 1000\n", "sandbox.gpu_index"},
      {"[sandbox]\ngpu_index = \"0\"\n", "sandbox.gpu_index"},
      {"[sandbox]\ngpus = \"some\"\n", "sandbox.gpus"},
      {"[sandbox]\ngpus = []\n", "sandbox.gpus"},
      {"[sandbox]\ngpus = [0, 0]\n", "sandbox.gpus"},
      {"[sandbox]\ngpus = [1000]\n", "sandbox.gpus"},
      {"[sandbox]\ngpus = [\"0\"]\n", "sandbox.gpus"},
      {"[toolchain]\ncuda_arch = \"90\"\n", "toolchain.cuda_arch"},
      {"[toolchain]\ncuda_arch = \"sm_90 -Xcompiler=-fplugin=x\"\n", "toolchain.cuda_arch"},
      {"[toolchain]\ncuda_arch = 90\n", "toolchain.cuda_arch"},
      {"toolchain = \"sm_90\"\n", "toolchain"},
  };
  TempDir d;
  for (const auto& [text, key] : cases) {
    write(d.path / "bad.toml", text);
    try {
      kj::load_config(d.path / "bad.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << "expected '" << key << "' in: " << e.what();
    }
  }
}

TEST(Config, SeccompOffOrLogIsWarnedAtLoad) {
  TempDir d;
  auto warning_for = [&](const std::string& mode) {
    write(d.path / "s.toml", "[sandbox]\nseccomp = \"" + mode + "\"\n");
    testing::internal::CaptureStderr();
    const auto c = kj::load_config(d.path / "s.toml");
    return std::make_pair(c.sandbox.seccomp, testing::internal::GetCapturedStderr());
  };
  auto [off, off_log] = warning_for("off");
  EXPECT_EQ(off, kj::SeccompMode::Off);
  EXPECT_NE(off_log.find("config.seccomp_off"), std::string::npos) << off_log;
  EXPECT_NE(off_log.find("SECCOMP IS OFF"), std::string::npos) << off_log;
  auto [lg, lg_log] = warning_for("log");
  EXPECT_EQ(lg, kj::SeccompMode::Log);
  EXPECT_NE(lg_log.find("config.seccomp_log"), std::string::npos) << lg_log;
  auto [enf, enf_log] = warning_for("enforce");
  EXPECT_EQ(enf, kj::SeccompMode::Enforce);
  EXPECT_EQ(enf_log.find("seccomp"), std::string::npos) << enf_log;
}

TEST(SandboxProfiles, PoliciesCarryTheConfiguredLimits) {
  auto c = kj::load_config(std::nullopt);
  // defaults: the values kjudge always had, no CPU quota, seccomp enforced
  auto cp = kj::compile_policy(c, "/tmp/kj-job", {"/usr/bin/true"}, 1000);
  EXPECT_EQ(cp.cgroup.memory_bytes, 4ull << 30);
  EXPECT_EQ(cp.cgroup.pids, 512u);
  EXPECT_FALSE(cp.cgroup.cpu_quota);
  EXPECT_EQ(cp.cgroup.cpu_weight, 10u);  // builds yield the CPU to the timed loops
  EXPECT_EQ(cp.seccomp.mode, kjsandbox::Seccomp::Mode::Enforce);
  auto rp = kj::run_policy(c, "/tmp/kj-job", "", {"/usr/bin/true"}, 1000, 1024, "");
  EXPECT_EQ(rp.cgroup.memory_bytes, 16ull << 30);
  EXPECT_EQ(rp.cgroup.pids, 1024u);
  EXPECT_FALSE(rp.cgroup.cpu_quota);
  EXPECT_FALSE(rp.cgroup.cpu_weight);  // the default weight: ahead of every build
  EXPECT_EQ(rp.seccomp.mode, kjsandbox::Seccomp::Mode::Enforce);

  c.sandbox.compile_memory_bytes = 1ull << 30;
  c.sandbox.run_memory_bytes = 3ull << 30;
  c.sandbox.compile_pids = 77;
  c.sandbox.run_pids = 99;
  c.sandbox.compile_cpus = 2.0;
  c.sandbox.run_cpus = 0.5;
  c.sandbox.compile_cpu_weight = 200;
  c.sandbox.seccomp = kj::SeccompMode::Log;
  cp = kj::compile_policy(c, "/tmp/kj-job", {"/usr/bin/true"}, 1000);
  EXPECT_EQ(cp.cgroup.memory_bytes, 1ull << 30);
  EXPECT_EQ(cp.cgroup.pids, 77u);
  EXPECT_EQ(cp.cgroup.cpu_quota, 2.0);
  EXPECT_EQ(cp.cgroup.cpu_weight, 200u);
  EXPECT_EQ(cp.seccomp.mode, kjsandbox::Seccomp::Mode::Log);
  rp = kj::run_policy(c, "/tmp/kj-job", "", {"/usr/bin/true"}, 1000, 1024, "opencl");
  EXPECT_EQ(rp.cgroup.memory_bytes, 3ull << 30);
  EXPECT_EQ(rp.cgroup.pids, 99u);
  EXPECT_EQ(rp.cgroup.cpu_quota, 0.5);
  EXPECT_EQ(rp.seccomp.mode, kjsandbox::Seccomp::Mode::Log);
  c.sandbox.seccomp = kj::SeccompMode::Off;
  EXPECT_EQ(kj::run_policy(c, "/tmp/kj-job", "", {"/usr/bin/true"}, 1000, 1024, "").seccomp.mode,
            kjsandbox::Seccomp::Mode::Off);
}

TEST(SandboxProfiles, GpuIndexFromConfigThenEnvironment) {
  auto c = kj::load_config(std::nullopt);
  const char* old = std::getenv("KJUDGE_GPU_INDEX");
  const std::string saved = old ? old : "";
  ::setenv("KJUDGE_GPU_INDEX", "5", 1);
  EXPECT_EQ(kj::gpu_index(c), 5);  // unset in the config: the environment's
  c.sandbox.gpu_index = 2;
  EXPECT_EQ(kj::gpu_index(c), 2);  // the config wins
  c.sandbox.gpu_index.reset();
  ::setenv("KJUDGE_GPU_INDEX", "x", 1);
  EXPECT_THROW(kj::gpu_index(c), std::runtime_error);
  ::unsetenv("KJUDGE_GPU_INDEX");
  EXPECT_GE(kj::gpu_index(c), 0);  // detected
  if (old) ::setenv("KJUDGE_GPU_INDEX", saved.c_str(), 1);
}

TEST(SandboxProfiles, NodeGpusFromTheConfigOrEveryDevice) {
  TempDir d;
  write(d.path / "list.toml", "[sandbox]\ngpus = [0, 2, 5]\n");
  EXPECT_EQ(kj::node_gpus(kj::load_config(d.path / "list.toml")), (std::vector<int>{0, 2, 5}));
  write(d.path / "all.toml", "[sandbox]\ngpus = \"all\"\n");
  const auto all = kj::load_config(d.path / "all.toml");
  EXPECT_TRUE(all.sandbox.all_gpus);
  const auto devices = kj::nvidia_device_minors();  // this host's (none on a machine without GPUs)
  EXPECT_EQ(kj::node_gpus(all), devices.empty() ? std::vector<int>{kj::gpu_index(all)} : devices);
  auto one = kj::load_config(std::nullopt);
  one.sandbox.gpu_index = 3;
  EXPECT_EQ(kj::node_gpus(one), std::vector<int>{3});  // one kjudged per GPU, as before
}

TEST(Toolchain, ConfiguredCudaArchOverridesDetection) {
  auto c = kj::load_config(std::nullopt);
  const auto* tc = kj::toolchain_for(kjudge::v1::CUDA);
  ASSERT_NE(tc, nullptr);
  kjudge::v1::NativeTask task;
  task.set_language(kjudge::v1::CUDA);
  task.mutable_launch()->add_grid(1);
  task.mutable_launch()->add_block(32);
  auto has = [](const std::vector<std::string>& argv, const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) != argv.end();
  };
  EXPECT_TRUE(has(tc->argv_for(task, c), "-arch=" + kj::cuda_arch()));  // unset: detected as before
  c.toolchain.cuda_arch = "sm_75";
  EXPECT_EQ(kj::cuda_arch(c), "sm_75");
  EXPECT_TRUE(has(tc->argv_for(task, c), "-arch=sm_75"));
  task.mutable_launch()->Clear();  // host-launch build: same arch
  EXPECT_TRUE(has(tc->argv_for(task, c), "-arch=sm_75"));
  // C++ has no {arch}: its argv does not depend on the key
  const auto* cpp = kj::toolchain_for(kjudge::v1::CPP);
  task.set_language(kjudge::v1::CPP);
  EXPECT_EQ(cpp->argv_for(task, c), cpp->argv_for(task));
}

}  // namespace
