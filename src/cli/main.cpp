// kjudge: the command-line client. submit / wait / kernelbench-results / eval / status / cancel / batch / admin:
// one options struct, one add_* and one run_* function per subcommand, and main's dispatch table.
#include <CLI/CLI.hpp>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli/admin.h"
#include "cli/exit_code.h"
#include "cli/gateway_client.h"
#include "cli/job_builder.h"
#include "cli/result_view.h"
#include "common/config.h"
#include "common/log.h"
#include "common/runtime_dir.h"
#include "kjqueue/queue.h"
#include "kjsandbox/policy.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/judge.h"
#include "pipeline/job/validate.h"
#include "pipeline/run/workspace.h"

namespace {

namespace v1 = kjudge::v1;
using kj::cli::JobSpec;

std::string default_redis_url() {
  if (const char* u = std::getenv("KJUDGE_REDIS")) return u;
  return "unix://" + (kj::default_runtime_dir() / "redis.sock").string();
}

// kjudge eval without a config judges in a fresh state dir of its own but shares the dev daemon's
// cache (builds, precompiled headers, baselines): <state>/cache is a link to it, so a second eval
// of the same candidate replays its build instead of compiling for a minute.
// Job cgroups of its own, as kjudged makes them (cgroup v2 from a shell: a subtree beside the
// shell's cgroup, which holds processes and so cannot delegate), or no judging: every job would
// end INFRA_ERROR. Several evals at once each make their own. Job cgroups an earlier eval left
// (one killed by a signal ends without removing its idle pooled ones) go first, as kjudged's do.
bool eval_cgroups_ready() {
  const auto cg = kjsandbox::setup_cgroups({.own_subtree = true, .command_line = {}});
  if (cg.ok) {
    kjsandbox::cleanup_stale_cgroups();  // after the set-up, as kjudged: on v2 its base is ours then
    return true;
  }
  std::cerr << "kjudge eval cannot create job cgroups: " << cg.explained() << "\n";
  return false;
}

void share_dev_cache(kj::Config& cfg) {
  const auto cache = kj::dev_state_dir() / "cache";
  std::filesystem::create_directories(cache);
  for (auto p : {cache.parent_path().parent_path(), cache.parent_path(), cache})  // sandboxes traverse it
    std::filesystem::permissions(p, std::filesystem::perms::group_exec | std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add);
  std::filesystem::create_directory_symlink(cache, cfg.state_dir / "cache");
  // KernelBench builds bind cache folders into sandboxes, where a host symlink does not resolve
  if (cfg.kernelbench.cache_dir.empty()) cfg.kernelbench.cache_dir = std::filesystem::canonical(cache);
}

void add_job_options(CLI::App* cmd, JobSpec& s) {
  cmd->add_option("--job", s.job_json, "a complete kjudge.v1.Job in protobuf JSON")->check(CLI::ExistingFile);
  cmd->add_option("--task", s.task_json, "a kjudge.v1.NativeTask in protobuf JSON")->check(CLI::ExistingFile);
  cmd->add_option("--candidate", s.candidate, "candidate source file")->check(CLI::ExistingFile);
  cmd->add_option("--reference", s.reference, "reference source (default: the task's reference_source.name)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--job-id", s.job_id, "idempotency key (default: random)");
  cmd->add_option("--tenant", s.tenant, "tenant (default: the job's, else 'dev')");
  cmd->add_option("--batch", s.batch_id, "batch id");
  cmd->add_option("--priority", s.priority, "higher runs first within the tenant (>0 high lane, <0 low lane; aging prevents starvation)");
  cmd->add_option("--compile-wall-ms", s.compile_wall_ms, "build time limit");
  cmd->add_option("--run-wall-ms", s.run_wall_ms, "run time limit per sandboxed run");
  cmd->add_option("--trials", s.trials, "timed trials");
  cmd->add_option("--sets", s.sets, "correctness input sets");
  cmd->add_option("--reward-policy", s.reward_policy, "default-v2 (default) | default-v1 | binary-v1 | buckets-v1");
  cmd->add_option("--kb-reference", s.kb_reference, "KernelBench-format reference module (Model, get_inputs, ...)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--kb-candidate", s.kb_candidate, "module defining ModelNew")->check(CLI::ExistingFile);
  cmd->add_option("--kb-completion", s.kb_completion, "raw model answer; the ModelNew code block is extracted")
      ->check(CLI::ExistingFile);
  cmd->add_option("--backend", s.backend, "KernelBench backend: cuda (default), triton, cpu");
  cmd->add_option("--precision", s.precision, "fp32 (default), fp16, bf16");
  cmd->add_flag("--compat", s.compat, "KernelBench compatibility mode (seed 42, allclose, 100 trials)");
  cmd->add_option("--size", s.sizes, "NAME=VALUE: replace a module-level size constant of the reference");
  cmd->add_option("--meta", s.meta, "KEY=VALUE: client metadata echoed in the result (e.g. sample_id=3)");
}

kjqueue::Endpoint endpoint_for(const std::string& url) {
  kjqueue::Endpoint e;
  e.url = url;
  return e;
}

bool kernelbench_format = false;  // --kernelbench-json: KernelBench's result JSON instead

// Prints the result; the exit code says its verdict's class (cli/exit_code.h).
int print_result(const v1::Result& r, bool json) {
  if (kernelbench_format) std::cout << kj::cli::kernelbench_view(r) << "\n";
  else std::cout << (json ? kj::cli::json_view(r) + "\n" : kj::cli::text_view(r));
  return kj::cli::exit_code_for(r.status());
}


// What every subcommand shares: where Redis (or a gateway) is, and --json.
struct Globals {
  std::string redis = default_redis_url();
  int partition = 0;
  bool json = false;  // --json of wait, eval, status, batch and admin
  kjqueue::Queue queue() const { return kjqueue::Queue(endpoint_for(redis), partition); }
};

constexpr const char* kNeedsRedis = "through a gateway: submit, wait, cancel and batch (the rest needs Redis)";

std::chrono::milliseconds ms_of_seconds(double s) { return std::chrono::milliseconds(static_cast<long>(s * 1000)); }

// --- submit ---
struct SubmitCmd {
  JobSpec spec;
  std::uint32_t batch_size = 0;
  std::optional<std::string> raw_payload_file;
};

CLI::App* add_submit(CLI::App& app, SubmitCmd& s) {
  auto* submit = app.add_subcommand("submit", "put a job on the queue; prints its job id");
  add_job_options(submit, s.spec);
  submit->add_option("--batch-size", s.batch_size, "jobs the batch will have (its batch_done event waits for them)");
  submit->add_flag("--trivial", s.spec.trivial, "a TrivialTask (queue tests, benchmarks)");
  submit->add_option("--argv", s.spec.trivial_argv, "the trivial task's command (default /bin/true)");
  submit->add_option("--raw-payload", s.raw_payload_file, "send this file's bytes as the job payload, unchecked (testing)")
      ->check(CLI::ExistingFile);
  return submit;
}

int run_submit(const Globals& g, SubmitCmd& s) {
  kjqueue::Queue q = g.queue();
  if (s.raw_payload_file) {
    const std::string id = s.spec.job_id.empty() ? kj::cli::random_job_id() : s.spec.job_id;
    q.submit(s.spec.tenant.value_or("dev"), id, kj::cli::read_text(*s.raw_payload_file));
    std::cout << id << "\n";
    return 0;
  }
  const v1::Job job = kj::cli::build_job(s.spec);
  try {
    q.submit(job.tenant(), job.job_id(), job.SerializeAsString(),
             kjqueue::SubmitOptions{job.batch_id(), s.batch_size, kjqueue::lane_of_priority(job.priority())});
  } catch (const kjqueue::QueueFull& e) {
    std::cerr << "kjudge: queue full: " << e.what() << "\n";
    return 4;
  }
  std::cout << job.job_id() << "\n";
  return 0;
}

int submit_via_gateway(const kj::cli::GatewayClient& gw, SubmitCmd& s) {
  if (s.raw_payload_file) throw std::runtime_error(kNeedsRedis);
  s.spec.default_tenant = "";  // the gateway sets the token's
  return kj::cli::gateway_submit(gw, kj::cli::build_job(s.spec));
}

// --- wait ---
struct WaitCmd {
  std::string id, tenant = "dev";
  double timeout = 300;
};

CLI::App* add_wait(CLI::App& app, Globals& g, WaitCmd& w) {
  auto* wait = app.add_subcommand("wait", "block until a job's result exists and print it");
  wait->add_option("job_id", w.id)->required();
  wait->add_option("--tenant", w.tenant, "tenant of the job");
  wait->add_option("--timeout", w.timeout, "seconds (exit code 3 when it passes)");
  wait->add_flag("--json", g.json, "print the Result in protobuf JSON");
  wait->add_flag("--kernelbench-json", kernelbench_format, "print KernelBench's result JSON (compiled, correctness, runtime, ...)");
  return wait;
}

int no_result(const WaitCmd& w) {
  std::cerr << "kjudge: no result for " << w.id << " within " << w.timeout << " s\n";
  return 3;
}

int run_wait(const Globals& g, const WaitCmd& w) {
  kjqueue::Queue q = g.queue();
  auto bytes = q.wait_result(w.tenant, w.id, ms_of_seconds(w.timeout));
  if (!bytes) return no_result(w);
  v1::Result r;
  if (!r.ParseFromString(*bytes)) throw std::runtime_error("stored result is not a kjudge.v1.Result");
  return print_result(r, g.json);
}

int wait_via_gateway(const kj::cli::GatewayClient& gw, const Globals& g, const WaitCmd& w) {
  const auto r = kj::cli::gateway_wait(gw, w.id, ms_of_seconds(w.timeout));
  if (!r) return no_result(w);
  return print_result(*r, g.json);
}

// --- kernelbench-results ---
struct KbResultsCmd {
  std::vector<std::string> ids;
  std::optional<std::string> ids_file, out;
  std::string tenant = "dev";
  double timeout = 0;
};

CLI::App* add_kernelbench_results(CLI::App& app, KbResultsCmd& k) {
  auto* kbr = app.add_subcommand("kernelbench-results",
                                 "write KernelBench's eval_results.json (samples grouped by problem) for finished jobs");
  kbr->add_option("job_ids", k.ids, "jobs to include");
  kbr->add_option("--ids-from", k.ids_file, "file with one job id per line")->check(CLI::ExistingFile);
  kbr->add_option("--tenant", k.tenant, "tenant of the jobs");
  kbr->add_option("--timeout", k.timeout, "seconds to wait for each missing result (default 0: only finished jobs)");
  kbr->add_option("-o,--out", k.out, "write here instead of stdout");
  return kbr;
}

int run_kernelbench_results(const Globals& g, KbResultsCmd& k) {
  if (k.ids_file) {
    std::istringstream lines(kj::cli::read_text(*k.ids_file));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) k.ids.push_back(line);
  }
  kjqueue::Queue q = g.queue();
  std::vector<v1::Result> results;
  int missing = 0;
  for (const auto& id : k.ids) {
    auto bytes = k.timeout > 0 ? q.wait_result(k.tenant, id, ms_of_seconds(k.timeout)) : q.get_result(k.tenant, id);
    v1::Result r;
    if (!bytes || !r.ParseFromString(*bytes)) {
      std::cerr << "kjudge: no result for " << id << "\n";
      ++missing;
      continue;
    }
    results.push_back(std::move(r));
  }
  const std::string text = kj::cli::kernelbench_eval_results(results).dump(2) + "\n";
  if (k.out) {
    std::ofstream(*k.out) << text;
  } else {
    std::cout << text;
  }
  return missing ? 3 : 0;
}

// --- eval ---
struct EvalCmd {
  JobSpec spec;
  std::optional<std::string> config_file;
};

CLI::App* add_eval(CLI::App& app, Globals& g, EvalCmd& e) {
  auto* eval = app.add_subcommand("eval", "judge one job locally, in this process (no Redis)");
  add_job_options(eval, e.spec);
  eval->add_flag("--json", g.json, "print the Result in protobuf JSON");
  eval->add_flag("--kernelbench-json", kernelbench_format, "print KernelBench's result JSON (compiled, correctness, runtime, ...)");
  eval->add_option("-c,--config", e.config_file, "kjudged config (limits, sandbox)")->check(CLI::ExistingFile);
  return eval;
}

int run_eval(const Globals& g, const EvalCmd& e) {
  const auto& config_file = e.config_file;
  kj::Config cfg = kj::load_config(config_file ? std::optional<std::filesystem::path>(*config_file) : std::nullopt);
  if (!config_file) cfg.state_dir = std::filesystem::temp_directory_path() / ("kjudge-eval-" + std::to_string(::getpid()));
  const v1::Job job = kj::cli::build_job(e.spec);
  if (!eval_cgroups_ready()) return kj::cli::kExitInfraError;
  kj::prepare_state_dir(cfg.state_dir);
  // One interpreter imports torch for every role of the job (the build's, the candidate's);
  // roles exec'd while it starts would each import it again. Without it, they still run.
  if (job.task_case() == v1::Job::kKernelbench && cfg.kernelbench.zygote &&
      !kj::await_harness_zygote(cfg, std::chrono::seconds(90)))
    std::cerr << "kjudge eval: the harness zygote is not serving; every role imports torch itself\n";
  if (!config_file) share_dev_cache(cfg);
  kj::JudgeContext ctx{cfg, cfg.node + "/local"};
  ctx.device_turns = true;  // parallel evals: builds side by side, judging in turns
  const v1::Result r = kj::judge(job, ctx);
  kjsandbox::trim_pools();  // the idle job cgroups kept for reuse: no later run of this process
  std::error_code ec;
  if (!config_file) std::filesystem::remove_all(cfg.state_dir, ec);
  return print_result(r, g.json);
}

// --- status ---
CLI::App* add_status(CLI::App& app, Globals& g) {
  auto* status = app.add_subcommand("status", "queues per tenant and live nodes");
  status->add_flag("--json", g.json, "machine-readable output");
  return status;
}

int run_status(const Globals& g) {
  const auto st = g.queue().status();
  if (g.json) {
    nlohmann::json j = {{"tenants", nlohmann::json::array()}, {"nodes", nlohmann::json::array()}};
    for (const auto& t : st.tenants)
      j["tenants"].push_back({{"tenant", t.tenant}, {"waiting", t.lag}, {"running", t.pending},
                              {"completion_events", t.completed}, {"stream_entries", t.queued}});
    for (const auto& n : st.nodes)
      j["nodes"].push_back({{"node", n.node}, {"info", nlohmann::json::parse(n.info, nullptr, false)}, {"ttl_ms", n.ttl_ms}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "tenants:\n";
  for (const auto& t : st.tenants)
    // waiting: not yet taken by a node; running: taken, not acknowledged (the stream keeps done
    // entries until it is trimmed, so its length is not a count of anything waiting); the
    // completion stream has one event per result and per finished batch
    std::cout << "  " << t.tenant << ": waiting " << t.lag << ", running " << t.pending
              << " (completion stream: " << t.completed << " events)\n";
  std::cout << "nodes:\n";
  for (const auto& n : st.nodes) std::cout << "  " << n.node << " " << n.info << "\n";
  return 0;
}

// --- cancel ---
struct CancelCmd {
  std::string tenant = "dev", id, batch;
};

CLI::App* add_cancel(CLI::App& app, CancelCmd& c) {
  auto* cancel = app.add_subcommand("cancel", "cancel a job (queued: never runs; running: result CANCELLED) or a whole batch");
  cancel->add_option("job_id", c.id, "the job");
  cancel->add_option("--batch", c.batch, "cancel every job of this batch instead");
  cancel->add_option("--tenant", c.tenant, "tenant");
  return cancel;
}

int run_cancel(const Globals& g, const CancelCmd& c) {
  kjqueue::Queue q = g.queue();
  const auto ttl = std::chrono::seconds(7 * 24 * 3600);
  if (!c.batch.empty()) q.cancel_batch(c.tenant, c.batch, ttl);
  else if (!c.id.empty()) q.cancel_job(c.tenant, c.id, ttl);
  else throw std::runtime_error("cancel needs a job id or --batch");
  std::cout << "cancel requested\n";
  return 0;
}

// --- batch ---
struct BatchCmd {
  std::string id, tenant = "dev";
};

CLI::App* add_batch(CLI::App& app, Globals& g, BatchCmd& b) {
  auto* batch = app.add_subcommand("batch", "a batch's counters (submitted, completed, verdicts)");
  batch->add_option("batch_id", b.id)->required();
  batch->add_option("--tenant", b.tenant, "tenant");
  batch->add_flag("--json", g.json, "machine-readable output");
  return batch;
}

int run_batch(const Globals& g, const BatchCmd& b) {
  kjqueue::Queue q = g.queue();
  return kj::cli::batch_status(q, b.tenant, b.id, g.json);
}

// --- admin: its own subcommands ---
struct AdminCmd {
  std::string tenant = "dev", job, node, action = "list", entry, password, token_action;
  bool undo = false, apply = false;
  long long max = -1;
  CLI::App *queues = nullptr, *job_cmd = nullptr, *nodes = nullptr, *drain = nullptr, *dead = nullptr,
           *quota = nullptr, *gpu_clear = nullptr, *cap = nullptr, *token = nullptr, *acl = nullptr,
           *acl_gateway = nullptr;
};

CLI::App* add_admin(CLI::App& app, Globals& g, AdminCmd& a) {
  auto* admin = app.add_subcommand("admin", "operator commands");
  admin->require_subcommand(1);
  admin->add_flag("--json", g.json, "machine-readable output");
  a.queues = admin->add_subcommand("queues", "per tenant: lag, pending, jobs without a result, parked retries, dead letters");
  a.job_cmd = admin->add_subcommand("job", "inspect a job: state, owner, deliveries, verdict");
  a.job_cmd->add_option("job_id", a.job)->required();
  a.job_cmd->add_option("--tenant", a.tenant, "tenant");
  a.nodes = admin->add_subcommand("nodes", "live nodes (heartbeats)");
  a.drain = admin->add_subcommand("drain", "ask a node to drain (stop fetching, hand back, finish, exit)");
  a.drain->add_option("node", a.node)->required();
  a.drain->add_flag("--undo", a.undo, "withdraw the request");
  a.dead = admin->add_subcommand("dead", "dead letters: list | retry [entry] | purge [entry]");
  a.dead->add_option("action", a.action)->check(CLI::IsMember({"list", "retry", "purge"}));
  a.dead->add_option("entry", a.entry, "one dead-letter entry id (default: all)");
  a.dead->add_option("--tenant", a.tenant, "tenant")->required();
  a.quota = admin->add_subcommand("quota", "set a tenant's (or '*' default) max jobs waiting for a result; -1 removes");
  a.quota->add_option("tenant", a.tenant)->required();
  a.quota->add_option("max", a.max)->required();
  a.gpu_clear = admin->add_subcommand("gpu-clear", "lift a node's GPU quarantine (after checking the GPU)");
  a.gpu_clear->add_option("node", a.node)->required();
  a.cap = admin->add_subcommand("cap", "set a tenant's (or '*' default) max running jobs on all nodes together; -1 removes");
  a.cap->add_option("tenant", a.tenant)->required();
  a.cap->add_option("max", a.max)->required();
  a.token = admin->add_subcommand("token", "kjudge-gateway API tokens: create | rotate | revoke <tenant>, or list");
  a.token->add_option("action", a.token_action)->required()->check(CLI::IsMember({"create", "rotate", "revoke", "list"}));
  a.token->add_option("tenant", a.tenant, "tenant (create, rotate, revoke)");
  a.acl = admin->add_subcommand("acl", "print (or --apply) the ACL SETUSER line of a tenant user");
  a.acl->add_option("tenant", a.tenant)->required();
  a.acl->add_option("--password", a.password, "the user's password")->required();
  a.acl->add_flag("--apply", a.apply, "run it on the server and register the tenant");
  a.acl_gateway = admin->add_subcommand("acl-gateway", "print (or --apply) the ACL SETUSER line of kjudge-gateway's user kj-gateway");
  a.acl_gateway->add_option("--password", a.password, "the user's password")->required();
  a.acl_gateway->add_flag("--apply", a.apply, "run it on the server");
  return admin;
}

int run_admin(const Globals& g, const AdminCmd& a) {
  namespace cli = kj::cli;
  if (*a.acl && !a.apply) return cli::admin_acl(nullptr, a.tenant, a.password, g.partition, false);
  if (*a.acl_gateway && !a.apply) return cli::admin_gateway_acl(nullptr, a.password, g.partition, false);
  kjqueue::Queue q = g.queue();
  if (*a.queues) return cli::admin_queues(q, g.json);
  if (*a.job_cmd) return cli::admin_job(q, a.tenant, a.job, g.json);
  if (*a.nodes) return cli::admin_nodes(q, g.json);
  if (*a.drain) return cli::admin_drain(q, a.node, a.undo);
  if (*a.dead) return cli::admin_dead(q, a.tenant, a.action, a.entry, g.json);
  if (*a.quota) return cli::admin_quota(q, a.tenant, a.max);
  if (*a.cap) return cli::admin_cap(q, a.tenant, a.max);
  if (*a.gpu_clear) {
    q.command({"SET", kjqueue::Keys::gpu_clear(g.partition, a.node), "1", "EX", "86400"});
    std::cout << "quarantine lift requested for " << a.node << " (applied at its next heartbeat)\n";
    return 0;
  }
  if (*a.acl) return cli::admin_acl(&q, a.tenant, a.password, g.partition, true);
  if (*a.acl_gateway) return cli::admin_gateway_acl(&q, a.password, g.partition, true);
  if (*a.token) return cli::admin_token(q, a.token_action, a.tenant, g.json);
  return 0;
}

// A subcommand: its parser, how it runs against Redis (or locally), and how through a gateway
// (none: it needs Redis).
struct Command {
  CLI::App* app;
  std::function<int()> run;
  std::function<int(const kj::cli::GatewayClient&)> via_gateway;
};

int dispatch(const Command& c, const std::string& redis, bool local) {
  if (!kj::cli::is_gateway_url(redis)) return c.run();
  const char* token = std::getenv("KJUDGE_TOKEN");
  const kj::cli::GatewayClient gw(redis, token ? token : "");
  if (c.via_gateway) return c.via_gateway(gw);
  if (local) return c.run();  // eval judges in this process, whatever --redis says
  throw std::runtime_error(kNeedsRedis);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kjudge: submit kernels to kjudge and read verdicts"};
  app.require_subcommand(1);
  Globals g;
  app.add_option("--redis", g.redis, "Redis URL, or a kjudge-gateway's http(s)://host:port for submit, wait, cancel and batch "
                                     "(token: env KJUDGE_TOKEN) (env KJUDGE_REDIS; default: the dev daemon's socket)");
  app.add_option("--partition", g.partition, "queue partition");

  SubmitCmd submit;
  WaitCmd wait;
  KbResultsCmd kbr;
  EvalCmd eval;
  CancelCmd cancel;
  BatchCmd batch;
  AdminCmd admin;
  using Gw = const kj::cli::GatewayClient&;
  const std::vector<Command> commands = {
      {add_submit(app, submit), [&] { return run_submit(g, submit); }, [&](Gw gw) { return submit_via_gateway(gw, submit); }},
      {add_wait(app, g, wait), [&] { return run_wait(g, wait); }, [&](Gw gw) { return wait_via_gateway(gw, g, wait); }},
      {add_kernelbench_results(app, kbr), [&] { return run_kernelbench_results(g, kbr); }, nullptr},
      {add_eval(app, g, eval), [&] { return run_eval(g, eval); }, nullptr},
      {add_status(app, g), [&] { return run_status(g); }, nullptr},
      {add_cancel(app, cancel), [&] { return run_cancel(g, cancel); },
       [&](Gw gw) { return kj::cli::gateway_cancel(gw, cancel.id, cancel.batch); }},
      {add_batch(app, g, batch), [&] { return run_batch(g, batch); },
       [&](Gw gw) { return kj::cli::gateway_batch(gw, batch.id, g.json); }},
      {add_admin(app, g, admin), [&] { return run_admin(g, admin); }, nullptr},
  };
  const CLI::App* eval_app = commands[3].app;

  CLI11_PARSE(app, argc, argv);
  kj::log::init("warn");
  try {
    for (const auto& c : commands)
      if (*c.app) return dispatch(c, g.redis, c.app == eval_app);
  } catch (const std::exception& e) {
    std::cerr << "kjudge: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
