#include "pipeline/kernelbench/build.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include "common/log.h"
#include "pipeline/build/claim.h"
#include "pipeline/build/slots.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/kernelbench/build_memo.h"
#include "pipeline/kernelbench/build_share.h"
#include "common/key_file_lock.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/build/toolchain_identity.h"
#include "common/random.h"
#include "pipeline/run/pipeline_util.h"
#include "common/sha256.h"
#include "common/single_flight.h"
#include "pipeline/run/workspace.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using nlohmann::json;

fs::path kernelbench_cache_root(const Config& cfg) {
  return cfg.kernelbench.cache_dir.empty() ? cfg.state_dir / "cache" : cfg.kernelbench.cache_dir;
}

fs::path private_dir(const fs::path& p) {
  fs::create_directories(p);
  ::chmod(p.c_str(), 0711);
  return p;
}

void add_phases(v1::Result& r, const std::string& role, const nlohmann::json& report) {
  if (!report.contains("phase_seconds") || !report["phase_seconds"].is_object()) return;
  for (const auto& [name, v] : report["phase_seconds"].items())
    if (v.is_number()) (*r.mutable_phase_seconds())[role + "." + name] = v.get<double>();
}

CandidateSource candidate_source(const v1::KernelBenchTask& task) {
  const bool completion = task.candidate_case() == v1::KernelBenchTask::kCompletion;
  return {completion, completion ? task.completion() : task.model_new_py(),
          completion ? "completion.md" : "candidate.py"};
}

fs::path kernelbench_ext_cache_dir(const v1::Job& job, const Config& cfg) {
  const CandidateSource src = candidate_source(job.kernelbench());
  Sha256 h;
  h.field(job.tenant()).field(src.completion ? "completion" : "candidate");
  h.field(src.text);
  return private_dir(private_dir(kernelbench_cache_root(cfg) / "torch-ext") / h.hex().substr(0, 32));
}

std::string kernelbench_cuda_arch_list(const Config& cfg) {
  if (!cfg.kernelbench.cuda_arch_list.empty()) return cfg.kernelbench.cuda_arch_list;
  static std::once_flag once;
  static std::string detected;
  std::call_once(once, [] {
    if (FILE* p = ::popen("nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null", "r")) {
      std::array<char, 64> buf{};
      if (std::fgets(buf.data(), buf.size(), p)) detected = buf.data();
      ::pclose(p);
    }
    while (!detected.empty() && (detected.back() == '\n' || detected.back() == ' ')) detected.pop_back();
  });
  return detected;
}

namespace {

bool pch_ready(const fs::path& dir) { return fs::exists(dir / "pch" / "torch" / "extension.h.gch"); }

// One pch role run into a private work dir, renamed into place when it succeeded.
fs::path make_pch(const Config& cfg, const fs::path& dir, bool with_cuda) {
  const fs::path work = dir.string() + fmt::format(".tmp{}", ::getpid()) + random_suffix();
  fs::remove_all(work);
  fs::create_directories(work);
  ::chown(work.c_str(), sandbox_host_uid(cfg.sandbox.host_uid), sandbox_host_gid(cfg.sandbox.host_gid));
  HarnessRun run;
  run.role = "pch";
  run.job_dir = work;
  run.request = {{"pch_out", "/job"}, {"with_cuda", with_cuda}, {"variants", cfg.kernelbench.pch_variants},
                 {"light", cfg.kernelbench.light_headers}};
  if (with_cuda) run.request["arch_list"] = kernelbench_cuda_arch_list(cfg);  // torch's writer needs one
  run.wall_ms = 1'800'000;  // once per node; a loaded 2-core machine needs ~10 min for three variants
  run.file_size_bytes = 4ull << 30;
  const auto step = run_harness(cfg, run);
  if (step.sandbox.outcome == kjsandbox::Outcome::Exited && step.report && step.report->value("ok", false)) {
    fs::remove_all(work / "probe");
    fs::remove(work / "pch_request.json");
    fs::remove(work / "pch_report.json");
    std::error_code ec;
    fs::rename(work, dir, ec);
    if (!ec) {
      // light_error: why the light main.cpp header could not be made (builds then use the full one)
      log::info("kernelbench.pch_ready", {{"dir", dir.string()}, {"light_error", step.report->value("light", "")}});
      return dir / "pch";
    }
  }
  log::warn("kernelbench.pch_failed", {{"stderr", tail(step.sandbox.stderr_data, 500)},
                                       {"error", step.report ? step.report->value("error", "") : "no report"}});
  fs::remove_all(work);
  std::ofstream(dir.string() + ".failed") << "tried again an hour after this file's time (or delete it)\n";
  return {};
}

// A failed header is tried again after an hour: a failure of a loaded node (disk, memory, time)
// or of an older kjudge must not leave every later build without it for good.
bool pch_failed_recently(const fs::path& dir) {
  std::error_code ec;
  const auto when = fs::last_write_time(dir.string() + ".failed", ec);
  return !ec && fs::file_time_type::clock::now() - when < std::chrono::hours(1);
}

struct Pch {
  fs::path dir;        // empty: disabled, or making it failed (builds are then just slower)
  double waited = 0;   // seconds this job waited for another's build of it
};

// The precompiled torch/extension.h for the binding file (main.cpp, compiled by g++ on every
// backend), made once per cache dir, torch install and variant. Concurrent first users, in this
// process or others sharing the cache dir, wait on one flock while one of them builds it.
Pch ensure_pch(const Config& cfg, bool with_cuda) {
  if (!cfg.kernelbench.precompiled_header) return {};
  const fs::path root = private_dir(kernelbench_cache_root(cfg) / "torch-pch");
  const std::string variant = with_cuda ? "cuda" : "cpu";
  const fs::path dir = root / variant;
  if (pch_ready(dir)) return {dir / "pch", 0};
  GpuLock lock(root / (variant + ".lock"));  // a plain flock: held while the header is built
  if (pch_ready(dir)) return {dir / "pch", lock.seconds_waited()};
  if (pch_failed_recently(dir)) return {{}, lock.seconds_waited()};
  return {make_pch(cfg, dir, with_cuda), lock.seconds_waited()};
}

bool valid_key(const std::string& key) {
  return key.size() == 32 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Fresh builds move into the cache (content-addressed by the harness's key); the manifest the
// candidate gets names only cache paths, each bound read-only into its sandbox.
json publish_builds(const json& records, const fs::path& build_dir, const fs::path& ext_cache,
                    std::vector<kjsandbox::BindMount>& binds) {
  json out = json::array();
  for (const auto& rec : records) {
    const std::string key = rec.value("key", ""), so = rec.value("so", "");
    if (!valid_key(key) || so.empty()) continue;
    const fs::path so_name = fs::path(so).filename();
    const fs::path dst = ext_cache / key;
    if (!rec.value("cache_hit", false) && !fs::exists(dst)) {
      const fs::path src = build_dir / "ext" / key;
      const fs::path tmp = dst.string() + fmt::format(".tmp{}", ::getpid()) + random_suffix();
      std::error_code ec;
      fs::copy(src, tmp, fs::copy_options::recursive, ec);
      if (!ec) fs::rename(tmp, dst, ec);
      if (ec) fs::remove_all(tmp);
    }
    if (!fs::exists(dst / so_name)) continue;
    const std::string in_sandbox = "/ext/" + key;
    binds.push_back({dst.string(), in_sandbox, false});
    out.push_back({{"key", key}, {"name", rec.value("name", "")}, {"so", in_sandbox + "/" + so_name.string()}});
  }
  return out;
}

json build_request(const v1::Job& job, const Config& cfg, const KernelBenchBuildInput& in, const std::string& arch,
                   bool pch) {
  json policy_overrides = json::object();
  for (const auto& [k, v] : job.options().policy_overrides()) policy_overrides[k] = v;
  json req = {{"backend", in.backend},
              {"candidate_path", "/job/candidate.py"},
              {"reference_path", "/job/reference.py"},
              {"size_overrides", in.size_overrides},
              {"ext_dir", "/job/ext"},
              {"cache_dir", "/cache/ext"},
              {"pch_dir", pch ? "/cache/pch" : ""},
              {"manifest_path", "/job/manifest.json"},
              {"arch_list", arch},
              {"policy_overrides", policy_overrides},
              // the harness's nvcc keeps its two front ends at once under the build's limit (nvcc_steps.py)
              {"memory_limit_bytes", cfg.sandbox.compile_memory_bytes},
              {"nvcc_halves", cfg.kernelbench.nvcc_halves},
              {"light_headers", cfg.kernelbench.light_headers}};
  if (in.completion) req["completion_path"] = "/job/completion.md";
  return req;
}

namespace {
// torch prints this on every build in the build sandbox (it has no GPU): noise in the text a
// model repairs from. The harness drops it from its own texts (judge_text.drop_build_noise); this
// covers the sandbox's stderr.
std::string drop_build_noise(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("No CUDA runtime is found, using CUDA_HOME=") == std::string::npos) out += line + "\n";
  return out;
}
}  // namespace

void record_compile(const HarnessStep& build, v1::Result& r) {
  auto* compile = r.mutable_compile();
  compile->set_seconds(build.sandbox.wall_seconds);
  // The compiler's own output when a build failed (judge paths taken out by the harness), else the
  // harness's repair text (a syntax error, no code block), else what the sandbox printed.
  const std::string compiler = build.report ? build.report->value("compiler_output", "") : "";
  const std::string error = build.report ? build.report->value("error", "") : "";
  const std::string feedback = build.report ? build.report->value("feedback", "") : "";
  // the traceback through the harness is the operator's, not the candidate's: logged here only
  if (!error.empty()) log::info("kernelbench.build_error", {{"error", tail(error, 4000)}});
  const std::string log = !compiler.empty() ? compiler
                          : !feedback.empty() ? feedback
                                              : !error.empty() ? error : tail(build.sandbox.stderr_data, 8000);
  bool truncated = false;
  compile->set_log(truncate_log(drop_build_noise(log), truncated));
  compile->set_log_truncated(truncated);
}

// The static policy's flags go into the legality report; its reject decides the job.
std::optional<Decision> apply_static_policy(const HarnessStep& build, v1::Result& r) {
  if (!build.report || !build.report->contains("static_policy")) return std::nullopt;
  const auto& pol = (*build.report)["static_policy"];
  for (const auto& f : pol.value("findings", json::array()))
    if (f.value("severity", "") == "flag") r.mutable_legality()->add_flags("static:" + f.value("rule", ""));
  auto d = decide_static_policy(pol, r);
  if (d) r.set_stage_reached(v1::STAGE_STATIC_POLICY);
  return d;
}

bool all_cache_hits(const json& records) {
  bool all = !records.empty();
  for (const auto& rec : records) all &= rec.value("cache_hit", false);
  return all;
}

// How many of the build's extensions compiled with the light torch headers (light_headers.py), and
// how many of those with the minimal one for their .cu, as the flag-like phases do (build.replayed):
// the share a node's builds get of that saving shows.
void count_light_headers(const json& records, v1::Result& r) {
  double light = 0, minimal = 0;
  for (const auto& rec : records) {
    const std::string headers = rec.value("headers", "");
    light += headers == "light" || headers == "minimal" ? 1 : 0;
    minimal += headers == "minimal" ? 1 : 0;
  }
  if (records.empty()) return;
  (*r.mutable_phase_seconds())["build.light_headers"] = light;
  (*r.mutable_phase_seconds())["build.minimal_headers"] = minimal;
}

bool backend_needs_cuda_arch(const std::string& backend) { return backend != "cpu" && backend != "triton"; }

std::string build_arch(const Config& cfg, const std::string& backend) {
  return backend_needs_cuda_arch(backend) ? kernelbench_cuda_arch_list(cfg) : "";
}

BuildMemo build_memo(const v1::Job& job, const Config& cfg, const std::string& backend) {
  const auto& task = job.kernelbench();
  const CandidateSource src = candidate_source(task);
  json policy_overrides = json::object(), size_overrides = json::object();
  for (const auto& [k, v] : job.options().policy_overrides()) policy_overrides[k] = v;
  for (const auto& [k, v] : task.size_overrides()) size_overrides[k] = v;
  return BuildMemo(private_dir(kernelbench_cache_root(cfg) / "kb-build"),
                   {job.tenant(), src.text, src.completion, task.reference_py(),
                    size_overrides, policy_overrides, backend, build_arch(cfg, backend),
                    cfg.kernelbench.python.string(), cfg.kernelbench.harness_dir.string()});
}

std::string shared_key(const BuildMemo& memo, const Config& cfg) {
  return Sha256().field("kb-shared-build-1").field(memo.key()).field(toolchain_identity(cfg)).hex();
}

// One flight per build memo key in this process: the key is the build's inputs (tenant, source,
// reference and sizes for the init probe, policy overrides, backend, arch, python and harness),
// never the job's mode, precision or timing, so strict and compat of one source share it.
// A flight lands with the build's memo entry (a success, or the candidate's own failure).
using Flights = SingleFlight<json>;
Flights& build_flights() {
  static Flights flights;
  return flights;
}

// A remembered build whose extensions are all still in the cache: no sandbox, no torch import.
bool replay(const json& memo, const KernelBenchBuildInput& in, const fs::path& ext_cache, KernelBenchBuild& out,
            v1::Result& r) {
  const json records = memo.value("extensions", json::array());
  json manifest = publish_builds(records, in.build_dir, ext_cache, out.binds);
  if (manifest.size() != records.size()) {
    out.binds.clear();
    return false;
  }
  if (in.completion) std::ofstream(in.build_dir / "candidate.py") << memo.value("candidate_py", "");
  HarnessStep step;
  step.report = json{{"static_policy", memo.value("static_policy", json::object())}};
  apply_static_policy(step, r);
  r.mutable_compile()->set_ok(true);
  r.mutable_compile()->set_cache_hit(true);
  (*r.mutable_phase_seconds())["build.replayed"] = 1;
  out.manifest = std::move(manifest);
  return true;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Another node's build of the same key (build/claim.h), its wait in the job's phases.
BuildClaim claim_shared(const v1::Job& job, const Config& cfg, const KernelBenchBuildInput& in, const std::string& key,
                        v1::Result& r) {
  BuildClaim claim = claim_for_job(*in.store, job, cfg, key, std::chrono::milliseconds(in.compile_ms));
  (*r.mutable_phase_seconds())["build.shared_wait"] = claim.waited_s;
  return claim;
}

// A fetched artifact: a success installed into this node's caches and replayed, a failure replayed.
bool use_artifact(const SharedBuild& b, const KernelBenchBuildInput& in, const fs::path& ext_cache,
                  const BuildMemo& memo, KernelBenchBuild& out, v1::Result& r) {
  if (b.failed) {
    out.failure = replay_failure(b, r, out.detail);
  } else {
    if (!install_shared(b, ext_cache, memo)) return false;
    auto entry = memo.lookup();
    if (!entry || !replay(*entry, in, ext_cache, out, r)) return false;
  }
  (*r.mutable_phase_seconds())["build.shared_fetched"] = 1;
  log::info("kernelbench.build_fetched", {{"key", b.key}, {"builder", b.builder}, {"failed", b.failed}});
  return true;
}

// What a failed build depended on beyond its inputs: the toolchain, and the node's settings that
// can turn a build that succeeds into a failure (its memory and process limits, how nvcc and the
// header run).
std::string failure_conditions(const Config& cfg) {
  return Sha256()
      .field("kb-build-failure-1")
      .field(toolchain_identity(cfg))
      .field(std::to_string(cfg.sandbox.compile_memory_bytes))
      .field(std::to_string(cfg.sandbox.compile_pids))
      .field(cfg.kernelbench.nvcc_halves ? "halves" : "nvcc")
      .field(cfg.kernelbench.precompiled_header ? "pch" : "no-pch")
      .hex();
}

// A failure the harness decided for the candidate (its sandbox exited with a report): the same
// inputs fail the same way, so the memo keeps it. A build the sandbox killed is not kept: its
// wall time depends on the node's load.
void remember_failure(const BuildMemo& memo, const Config& cfg, const HarnessStep& build, const KernelBenchBuild& out,
                      const v1::Result& r) {
  if (build.sandbox.outcome != kjsandbox::Outcome::Exited || !build.report) return;
  if (auto failed = shared_failure(memo.key(), *out.failure, out.detail, r))
    memo.store_failure(failure_entry(*failed), failure_conditions(cfg));
}

// Stage 1-2 proper: the build role in its sandbox (the body of a build nobody shared).
void build_fresh(const v1::Job& job, const Config& cfg, const KernelBenchBuildInput& in, const fs::path& ext_cache,
                 const BuildMemo& memo, KernelBenchBuild& out, v1::Result& r) {
  // The binding file is C++ on the cpu and cuda backends alike (g++, load_inline's cflags).
  const Pch pch = in.backend == "cpu" || in.backend == "cuda" ? ensure_pch(cfg, in.backend == "cuda") : Pch{};
  if (cfg.kernelbench.precompiled_header && (in.backend == "cpu" || in.backend == "cuda"))
    (*r.mutable_phase_seconds())["build.pch_wait"] = pch.waited;
  HarnessRun b;
  b.role = "build";
  b.job_dir = in.build_dir;
  b.wall_ms = in.compile_ms;
  b.output_bytes = in.output_bytes;
  b.binds.push_back({ext_cache.string(), "/cache/ext", false});
  if (!pch.dir.empty()) b.binds.push_back({pch.dir.string(), "/cache/pch", false});
  b.request = build_request(job, cfg, in, out.arch, !pch.dir.empty());
  log::info("kernelbench.build", {{"job_id", job.job_id()}, {"backend", in.backend},
                                  {"pch", pch.dir.string()}, {"pch_wait_s", pch.waited}});
  const auto build = run_harness(cfg, b);
  if (build.report) add_phases(r, "build", *build.report);
  // CPU time of the whole build tree (g++, nvcc, ninja): what a candidate's build costs the node
  (*r.mutable_phase_seconds())["build.cpu_seconds"] = build.sandbox.cpu_seconds;
  // time past the limit granted for a loaded node (pipeline/run/cpu_pressure.h)
  if (build.sandbox.wall_extension_seconds > 0)
    (*r.mutable_phase_seconds())["build.wall_extension"] = build.sandbox.wall_extension_seconds;
  record_compile(build, r);
  // feedback: the harness's repair text (the first compiler error at the candidate's line, the
  // syntax error with a caret); without one, make_feedback falls back to the compile log.
  const std::string feedback = build.report ? build.report->value("feedback", "") : "";
  if ((out.failure = apply_static_policy(build, r))) {
    out.detail = feedback.empty() ? out.failure->message : feedback;  // its stderr is no compile log
    return remember_failure(memo, cfg, build, out, r);
  }
  if ((out.failure = decide_harness(build.sandbox, build.report ? &*build.report : nullptr, Party::Candidate, true,
                                    in.compile_ms, build.host_fault))) {
    out.detail = feedback;
    return remember_failure(memo, cfg, build, out, r);
  }
  r.mutable_compile()->set_ok(true);
  const json records = build.report->value("extensions", json::array());
  r.mutable_compile()->set_cache_hit(all_cache_hits(records));
  count_light_headers(records, r);
  out.manifest = publish_builds(records, in.build_dir, ext_cache, out.binds);
  if (out.manifest.size() == records.size())
    memo.store(*build.report, in.completion ? read_text(in.build_dir / "candidate.py") : "");
}

// What the build we held the lease for leaves for the others: the memo's entry and binaries, or
// the candidate's failure; our own failures only give the lease back.
void share_build(BuildStore& store, const std::string& key, const BuildMemo& memo, const fs::path& ext_cache,
                 const KernelBenchBuild& out, const v1::Result& r) {
  std::optional<SharedBuild> shared;
  if (out.failure) shared = shared_failure(key, *out.failure, out.detail, r);
  else if (auto entry = memo.lookup()) shared = shared_success(key, *entry, ext_cache);
  if (shared) store.publish(*shared);
  else store.release(key);
}

// A replay of the memo's entry: a success's extensions, or the candidate's remembered failure.
bool replay_entry(const json& entry, const KernelBenchBuildInput& in, const fs::path& ext_cache, KernelBenchBuild& out,
                  v1::Result& r) {
  if (!entry.value("failed", false)) return replay(entry, in, ext_cache, out, r);
  out.failure = replay_failure(failure_from_entry(entry), r, out.detail);
  (*r.mutable_phase_seconds())["build.replayed"] = 1;
  return true;
}

// The memo's entry for the job's inputs, success or failure, if this node still fits it.
std::optional<json> remembered(const BuildMemo& memo, const Config& cfg) {
  if (auto hit = memo.lookup()) return hit;
  return memo.lookup_failure([&] { return failure_conditions(cfg); });
}

// The job's deadline on the steady clock (max without one): the bound of its waits for other builds.
std::chrono::steady_clock::time_point wait_bound(const v1::Job& job) {
  const auto deadline = job_deadline(job);
  if (!deadline) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + (*deadline - std::chrono::system_clock::now());
}

// The build's lock shared by every process using this cache dir: a build of the key in another
// process (a parallel `kjudge eval`, a build node on this host) is waited for, then replayed.
std::unique_ptr<KeyFileLock> lock_key(const v1::Job& job, const Config& cfg, const BuildMemo& memo,
                                     KernelBenchBuild& out, v1::Result& r) {
  const fs::path dir = private_dir(private_dir(kernelbench_cache_root(cfg) / "kb-build") / "locks");
  auto lock = std::make_unique<KeyFileLock>(dir / (memo.key() + ".lock"), current_cancel_fd(), wait_bound(job));
  if (lock->contended()) (*r.mutable_phase_seconds())["build.flight_wait"] += lock->seconds_waited();
  if (lock->result() == KeyFileLock::Result::Cancelled)
    out.failure = ended_by_cancel("cancelled while waiting for its build");
  if (lock->result() == KeyFileLock::Result::TimedOut)
    out.failure = ended_by_deadline("deadline passed while waiting for its build");
  return lock;
}

// The build of a job whose key no other slot of this node is building: the memo, else the shared
// store (another node's artifact, or its lease), else the build role itself, under the key's lock.
KernelBenchBuild lead_build(const v1::Job& job, const Config& cfg, const KernelBenchBuildInput& in,
                            const fs::path& ext_cache, const BuildMemo& memo, v1::Result& r) {
  KernelBenchBuild out;
  out.arch = build_arch(cfg, in.backend);
  const std::string key = in.store ? shared_key(memo, cfg) : "";
  HeldLease lease{in.leased ? in.store : nullptr, key};
  auto fresh = [&] {  // what a replay or fetch that failed half-way left is dropped
    out = KernelBenchBuild{};
    out.arch = build_arch(cfg, in.backend);
  };
  auto replayed = [&] {
    auto hit = remembered(memo, cfg);
    if (!hit || !replay_entry(*hit, in, ext_cache, out, r)) return fresh(), false;
    if (lease.store) share_build(*lease.release(), key, memo, ext_cache, out, r);
    return true;
  };
  if (replayed()) return out;
  if (in.store && !in.leased) {
    BuildClaim claim = claim_shared(job, cfg, in, key, r);
    if (claim.kind == BuildClaim::Artifact && use_artifact(*claim.artifact, in, ext_cache, memo, out, r)) return out;
    if ((out.failure = claim_ended_the_job(claim))) return out;
    if (claim.kind == BuildClaim::Leased) lease.store = in.store;
    fresh();
  }
  // after the store's lease, never before: a lock holder never waits for a lease (no cycle)
  const auto lock = lock_key(job, cfg, memo, out, r);
  if (out.failure || replayed()) return out;
  const BuildSlot slot(cfg, current_cancel_fd());  // the node's build places (build/slots.h)
  (*r.mutable_phase_seconds())["build.slot_wait"] = slot.seconds_waited();
  if (slot.cancelled()) return (out.failure = ended_by_cancel("cancelled while waiting to build")), out;
  build_fresh(job, cfg, in, ext_cache, memo, out, r);
  if (lease.store) share_build(*lease.release(), key, memo, ext_cache, out, r);
  return out;
}

// What a leader's build leaves for the slots that waited on it: the memo's entry of a success, or
// the candidate's own failure with the build stage's report. Nothing for our failures (INFRA_ERROR)
// or the leader's cancel and deadline: a follower then builds for itself.
std::optional<json> flight_outcome(const KernelBenchBuild& out, const BuildMemo& memo, const v1::Result& r) {
  if (!out.failure) return memo.lookup();  // nullopt when not remembered (torch's file not visible)
  if (auto failed = shared_failure(memo.key(), *out.failure, out.detail, r)) return failure_entry(*failed);
  return std::nullopt;
}

// A slot whose key another slot is building: waits for it, then replays its outcome (no sandbox,
// no phases of its own but build.flight_wait and build.replayed). False: nothing to replay.
bool follow_build(Flights::Seat& seat, const v1::Job& job, const KernelBenchBuildInput& in, const fs::path& ext_cache,
                  KernelBenchBuild& out, v1::Result& r) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto waited = seat.wait(current_cancel_fd(), wait_bound(job));
  (*r.mutable_phase_seconds())["build.flight_wait"] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (waited == Flights::Seat::Wait::Cancelled)
    return (out.failure = ended_by_cancel("cancelled while waiting for its build")), true;
  if (waited == Flights::Seat::Wait::TimedOut)
    return (out.failure = ended_by_deadline("deadline passed while waiting for its build")), true;
  return seat.outcome() && replay_entry(*seat.outcome(), in, ext_cache, out, r);
}

}  // namespace

const char* kernelbench_backend_name(v1::Backend b) {
  switch (b) {
    case v1::BACKEND_TRITON: return "triton";
    case v1::BACKEND_CPU: return "cpu";
    case v1::BACKEND_HIP: return "hip";
    case v1::BACKEND_MUSA: return "musa";
    default: return "cuda";
  }
}

std::string kernelbench_build_key(const v1::Job& job, const Config& cfg) {
  return shared_key(build_memo(job, cfg, kernelbench_backend_name(job.kernelbench().backend())), cfg);
}

bool kernelbench_build_needs_cuda_arch(const v1::Job& job) {
  return backend_needs_cuda_arch(kernelbench_backend_name(job.kernelbench().backend()));
}

KernelBenchBuild build_kernelbench(const v1::Job& job, const Config& cfg, const KernelBenchBuildInput& in,
                                   v1::Result& r) {
  if (backend_needs_cuda_arch(in.backend) && build_arch(cfg, in.backend).empty()) {
    // torch's extension build fails without an arch list where it sees no GPU (IndexError): the
    // node's gap, never the candidate's COMPILE_ERROR
    KernelBenchBuild out;
    out.failure = node_fault("this node has no CUDA architecture for cuda builds (no GPU answered nvidia-smi and "
                             "[kernelbench] cuda_arch_list is not set)");
    return out;
  }
  const fs::path ext_cache = kernelbench_ext_cache_dir(job, cfg);
  const BuildMemo memo = build_memo(job, cfg, in.backend);
  for (;;) {
    auto seat = build_flights().join(memo.key());
    if (seat.leader()) {
      KernelBenchBuild out = lead_build(job, cfg, in, ext_cache, memo, r);
      seat.land(flight_outcome(out, memo, r));
      return out;
    }
    KernelBenchBuild out;
    out.arch = build_arch(cfg, in.backend);
    if (follow_build(seat, job, in, ext_cache, out, r)) return out;
    // the leader left nothing to replay (its build failed on our side): lead the next flight
  }
}

}  // namespace kj
