// kjudged configuration: TOML file plus a drop-in directory (<file>.d/*.toml, applied in name
// order), then command-line overrides. Every field has a default that works in --dev mode.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kj {

struct RedisConfig {
  std::string url = "tcp://127.0.0.1:6379";
  std::string username;
  std::string password;
  int partition = 0;
  // Replicas that must hold a submission, and a result before it is visible (WAIT): -1 = 1 with a
  // redis+sentinel:// URL, else 0 (docs/operator-guide.md, "High availability").
  int replica_acks = -1;
};

// What the sandbox does with a system call outside its allow-list (kjsandbox::Seccomp::Mode).
enum class SeccompMode { Enforce, Log, Off };

struct SandboxConfig {
  std::optional<std::uint32_t> host_uid;  // unset: 65534 when root, own uid otherwise
  std::optional<std::uint32_t> host_gid;
  std::vector<std::string> extra_ro_binds;  // added to every sandbox (e.g. a toolchain outside /usr)
  // cgroup limits of the two slot kinds (compile: builds; run: runner, oracle, harness).
  std::uint64_t compile_memory_bytes = 4ull << 30;
  std::uint64_t run_memory_bytes = 16ull << 30;  // CUDA contexts and pinned buffers are host memory
  std::uint64_t compile_pids = 512;              // nvcc and g++ -j fan out
  std::uint64_t run_pids = 1024;                 // PoCL and PyTorch thread pools
  std::optional<double> compile_cpus;            // CPUs' worth of time (cgroup cpu quota); unset = no limit
  std::optional<double> run_cpus;
  // Compile slots' CPU weight against run slots' 100 (cgroup v2 cpu.weight scale, 1..10000): on
  // a contended node builds yield the CPU to the timed loops.
  std::uint32_t compile_cpu_weight = 10;
  SeccompMode seccomp = SeccompMode::Enforce;    // Log and Off are for debugging (warned at load)
  std::optional<int> gpu_index;  // device minor for run slots; unset: $KJUDGE_GPU_INDEX, else auto-detect
  // The GPUs one kjudged drives (`gpus = "all" | [0, 2, 5]`); empty and not all: one GPU, gpu_index's.
  std::vector<int> gpus;
  bool all_gpus = false;
};

struct ToolchainConfig {
  // nvcc -arch of native CUDA jobs ("sm_90"); empty: $KJUDGE_CUDA_ARCH, else nvidia-smi, else sm_90.
  // Also the default of kernelbench.cuda_arch_list ("sm_90" -> "9.0") when that is unset.
  std::string cuda_arch;
};

struct LimitsConfig {  // defaults when a job leaves a limit at 0, and the maximum it may ask for
  std::uint32_t compile_wall_ms = 60'000;
  std::uint32_t run_wall_ms = 10'000;
  std::uint32_t max_compile_wall_ms = 300'000;
  std::uint32_t max_run_wall_ms = 120'000;
  std::uint64_t output_bytes = 1 << 20;
  std::uint64_t max_job_bytes = 8 << 20;   // a serialized Job larger than this is INVALID_JOB
  // Free space (to unprivileged users) the state dir's filesystem must have before a job starts,
  // else the job is INFRA_ERROR (retried elsewhere or later); also the headroom a job may use
  // before a full filesystem counts as its own doing (pipeline/run/host_fault.h). 0: no check.
  std::uint64_t min_free_bytes = 1ull << 30;
  std::uint64_t min_free_inodes = 10'000;
};

// Switches for the project's own tests and benchmarks; every one is off on a production node.
struct TestingConfig {
  bool allow_trivial_switches = false;  // TrivialTask.fail_infra / skip_sandbox; else INVALID_JOB
};

struct TenantConfig {
  unsigned weight = 1;        // weighted round-robin share of this node's slots
  unsigned max_running = 0;   // per-node concurrency cap (0 = no cap beyond the slots)
};

// Queue reliability and fairness (design §8).
struct QueueConfig {
  std::chrono::milliseconds lease{30'000};        // an entry idle this long is claimable by any node's reaper
  std::chrono::milliseconds reap_interval{1'000}; // how often this node's reaper looks (and the housekeeper scans)
  // The elected housekeeper's lease (src/daemon/housekeeper.h): a holder that dies is replaced
  // after at most this long.
  std::chrono::milliseconds housekeeper_lease{10'000};
  unsigned max_deliveries = 5;                    // then: dead letter + INFRA_ERROR result
  std::chrono::milliseconds retry_base{1'000};    // INFRA_ERROR retry backoff: base * 2^(attempt-1), jittered
  std::chrono::milliseconds retry_max{60'000};
  std::chrono::seconds trim_interval{10};
  std::chrono::milliseconds cancel_poll{500};     // running jobs' cancel markers are checked this often
  // Priority lanes within a tenant: a lane's oldest job scores lane x aging + time waited, so a
  // job one lane down overtakes after waiting this much longer (kj_fetch; 0: oldest first, lanes ignored).
  std::chrono::milliseconds priority_aging{30'000};
  std::chrono::seconds drain_timeout{60};         // SIGTERM: running jobs get this long, then leases go back
  std::chrono::seconds cancel_ttl{7 * 24 * 3600};
  // How long a job id stays deduplicated (kj_submit's marker; published to kj:{pN}:config at start).
  std::chrono::seconds marker_ttl{3600};
  std::map<std::string, TenantConfig> tenants;    // [tenants.<name>] weight/max_running; "*" = default
};

struct MetricsConfig {
  std::string address = "127.0.0.1";  // loopback only by default
  int port = 0;                        // 0 = no HTTP endpoint
};

// KernelBench-format jobs: the in-sandbox Python harness and its caches (design §5, §11).
struct KernelBenchConfig {
  std::filesystem::path python = "/usr/bin/python3";  // the system's python3 with torch
  std::filesystem::path harness_dir;  // holds kjudge_harness/; default: the source tree's python/
  // The candidate harness's kernel recorder (src/kernel_trace); default: beside the running
  // binary. Absent file: the legality trace uses torch.profiler (seconds per job).
  std::filesystem::path kernel_trace_lib;
  std::filesystem::path cache_dir;    // torch extension builds + precompiled headers; empty = <state>/cache
  std::string cuda_arch_list;         // TORCH_CUDA_ARCH_LIST for builds; empty = ask nvidia-smi once
  bool precompiled_header = true;     // build torch/extension.h once per node and torch version
  bool light_headers = true;          // main.cpp and the .cu try light torch headers first (light_headers.py)
  // its optimisation levels (python/kjudge_harness/pch.py), each ~30 CPU-s and 620 MB on the cpu
  std::vector<std::string> pch_variants = {"O0", "O2", "O3"};
  // the reference's timed loop right after each candidate's, in the same GPU-lock hold and on the
  // same input buffers (docs/timing.md); false: the baseline cached per node and problem
  bool adjacent_baseline = true;
  bool nvcc_halves = true;            // a .cu's host and device halves side by side (nvcc_steps.py)
  // Harness roles resumed from a zygote that imported torch once (python/kjudge_harness/zygote.py)
  // instead of a fresh interpreter per role; off (or without the library): exec'd as before.
  bool zygote = true;
  std::filesystem::path resume_lib;   // libkjsandbox_resume.so; default: <bin>/../lib/
  std::uint32_t compile_wall_ms = 240'000;  // a load_inline build compiles torch headers: slow
  std::uint32_t run_wall_ms = 120'000;
  // The trusted worker (python/kjudge_worker): the reference's own budget per job (never the
  // candidate's), the share of device memory its cache may hold, and how long it stays idle.
  std::uint32_t reference_wall_ms = 300'000;
  double worker_cache_fraction = 0.2;
  std::uint32_t worker_idle_seconds = 600;
  // The share of device memory the running candidates may hold together; 0: what the worker
  // leaves them (python/kjudge_worker/candidate_share.py), a set share for a GPU shared with others.
  double candidate_device_share = 0;
  // How long a candidate waiting for device memory at the head of the line may be passed by later
  // ones that fit within its reservation (src/pipeline/worker/device_budget.h); 0: strict arrival order.
  double admission_backfill_seconds = 20;  // measured against 0 in bench/results/rlstep-20261207-h200-backfill
  // The head of that line: the largest waiter instead of the earliest (device_budget.h). Off until
  // measured on a GPU; modelled on the measured holds of bench/results/rlstep-20261208-h100-steady.
  bool admission_largest_first = false;
  // The share of the trusted worker's preparation budget a candidate at the head of that line may
  // borrow while no preparation needs it (device_budget.h; python/kjudge_worker/candidate_loans.py);
  // 0: none. Off until measured on a GPU.
  double candidate_borrow_share = 0;
  // The cpu backend's trusted worker admits candidates by device memory as if its device had this
  // many GiB (0, the default: it admits none): kjudged's admission and the worker's loans, run
  // without a GPU (tests/python/daemon/test_admission_rehearsal.py).
  double cpu_rehearsal_device_gib = 0;
};

// The shared build store and build-only nodes (docs/operator-guide.md, *Build nodes*).
struct BuildConfig {
  // A judging node shares KernelBench builds through Redis: it takes a build another node made (or
  // is making) instead of compiling, and publishes its own. A build node always shares.
  bool shared = false;
  std::uint64_t artifact_max_bytes = 64ull << 20;  // larger builds are not shared (built where judged)
  std::chrono::seconds artifact_ttl{3600};         // artifacts (or, with artifact_dir, their markers) expire from Redis after this
  // Artifacts as files on this shared mount (buildfarm/file_artifact_store.h); Redis then holds a
  // ~80-byte marker per build. Empty: the artifact itself is stored in Redis.
  std::filesystem::path artifact_dir;
  std::chrono::seconds artifact_file_ttl{24 * 3600};  // the elected housekeeper removes files older than this
  std::chrono::milliseconds lease{30'000};         // a build lease not renewed this long is free again
  std::chrono::milliseconds builder_ttl{15'000};   // a build node counts as alive this long after its heartbeat
  // A judging node's concurrent local builds while a build node is alive; past it, its jobs wait for
  // the build nodes (-1: its slots, i.e. it always builds what no one else is building).
  int local_max = -1;
  // build node: a build request left unacked this long on another build node (it died) is taken over
  std::chrono::milliseconds request_idle{60'000};
  // KernelBench build sandboxes at once on this node, whatever its job slots (pipeline/build/slots.h);
  // 0: sized from its CPUs and memory.
  int concurrency = 0;
};

struct Config {
  std::string role = "judge";              // "judge" (kjudged) or "build" (build-only node, no GPU)
  std::string node;                        // defaults to the host name
  std::filesystem::path state_dir = "/var/lib/kjudge";
  unsigned workers = 2;                    // concurrent jobs on this node
  std::chrono::seconds result_ttl{3600};  // docs/capacity-plan.md step 2: what trainers need
  std::chrono::seconds heartbeat_ttl{15};
  std::string log_level = "info";
  bool keep_job_dirs = false;              // debugging: leave per-job dirs behind
  std::filesystem::path runner_path;       // kjudge-runner; default: next to the running binary
  std::string opencl_device_type;          // "", "gpu", "cpu", "all" → KJUDGE_OPENCL_DEVICE_TYPE
  RedisConfig redis;
  SandboxConfig sandbox;
  ToolchainConfig toolchain;
  LimitsConfig limits;
  TestingConfig testing;
  QueueConfig queue;
  MetricsConfig metrics;
  KernelBenchConfig kernelbench;
  BuildConfig build;
};

// Throws std::runtime_error with the file and the offending key on bad input.
Config load_config(const std::optional<std::filesystem::path>& file);

// TORCH_CUDA_ARCH_LIST entry for an nvcc arch: "sm_90" -> "9.0", "sm_100a" -> "10.0" (the suffix is
// dropped: older torch rejects "9.0a"); "" when `sm` is not of that form.
std::string torch_arch_from_sm(const std::string& sm);

// Directory of the running executable (for finding sibling binaries like kjudge-runner).
std::filesystem::path self_dir();

}  // namespace kj
