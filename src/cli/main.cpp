// kjudge: the command-line client. submit / wait / eval / status / cancel / batch / admin.
#include <CLI/CLI.hpp>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
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
// end INFRA_ERROR. Several evals at once each make their own.
bool eval_cgroups_ready() {
  const auto cg = kjsandbox::setup_cgroups({.own_subtree = true, .command_line = {}});
  if (cg.ok) return true;
  std::cerr << "kjudge eval cannot create job cgroups: " << cg.error << "\n";
  if (!cg.fix.empty()) std::cerr << "  fix: " << cg.fix << "\n";
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kjudge: submit kernels to kjudge and read verdicts"};
  app.require_subcommand(1);
  std::string redis = default_redis_url();
  int partition = 0;
  app.add_option("--redis", redis, "Redis URL, or a kjudge-gateway's http(s)://host:port for submit, wait, cancel and batch "
                                   "(token: env KJUDGE_TOKEN) (env KJUDGE_REDIS; default: the dev daemon's socket)");
  app.add_option("--partition", partition, "queue partition");

  JobSpec submit_spec, eval_spec;
  std::optional<std::string> raw_payload_file, raw_job_id;
  auto* submit = app.add_subcommand("submit", "put a job on the queue; prints its job id");
  add_job_options(submit, submit_spec);
  std::uint32_t batch_size = 0;
  submit->add_option("--batch-size", batch_size, "jobs the batch will have (its batch_done event waits for them)");
  submit->add_flag("--trivial", submit_spec.trivial, "a TrivialTask (queue tests, benchmarks)");
  submit->add_option("--argv", submit_spec.trivial_argv, "the trivial task's command (default /bin/true)");
  submit->add_option("--raw-payload", raw_payload_file, "send this file's bytes as the job payload, unchecked (testing)")
      ->check(CLI::ExistingFile);

  std::string wait_id, wait_tenant = "dev";
  double wait_timeout = 300;
  bool json = false;
  auto* wait = app.add_subcommand("wait", "block until a job's result exists and print it");
  wait->add_option("job_id", wait_id)->required();
  wait->add_option("--tenant", wait_tenant, "tenant of the job");
  wait->add_option("--timeout", wait_timeout, "seconds (exit code 3 when it passes)");
  wait->add_flag("--json", json, "print the Result in protobuf JSON");
  wait->add_flag("--kernelbench-json", kernelbench_format, "print KernelBench's result JSON (compiled, correctness, runtime, ...)");

  std::vector<std::string> kbr_ids;
  std::optional<std::string> kbr_ids_file, kbr_out;
  std::string kbr_tenant = "dev";
  double kbr_timeout = 0;
  auto* kbr = app.add_subcommand("kernelbench-results",
                                 "write KernelBench's eval_results.json (samples grouped by problem) for finished jobs");
  kbr->add_option("job_ids", kbr_ids, "jobs to include");
  kbr->add_option("--ids-from", kbr_ids_file, "file with one job id per line")->check(CLI::ExistingFile);
  kbr->add_option("--tenant", kbr_tenant, "tenant of the jobs");
  kbr->add_option("--timeout", kbr_timeout, "seconds to wait for each missing result (default 0: only finished jobs)");
  kbr->add_option("-o,--out", kbr_out, "write here instead of stdout");

  std::optional<std::string> config_file;
  auto* eval = app.add_subcommand("eval", "judge one job locally, in this process (no Redis)");
  add_job_options(eval, eval_spec);
  eval->add_flag("--json", json, "print the Result in protobuf JSON");
  eval->add_flag("--kernelbench-json", kernelbench_format, "print KernelBench's result JSON (compiled, correctness, runtime, ...)");
  eval->add_option("-c,--config", config_file, "kjudged config (limits, sandbox)")->check(CLI::ExistingFile);

  auto* status = app.add_subcommand("status", "queues per tenant and live nodes");
  status->add_flag("--json", json, "machine-readable output");

  std::string cancel_tenant = "dev", cancel_id, cancel_batch;
  auto* cancel = app.add_subcommand("cancel", "cancel a job (queued: never runs; running: result CANCELLED) or a whole batch");
  cancel->add_option("job_id", cancel_id, "the job");
  cancel->add_option("--batch", cancel_batch, "cancel every job of this batch instead");
  cancel->add_option("--tenant", cancel_tenant, "tenant");

  std::string batch_id, batch_tenant = "dev";
  auto* batch = app.add_subcommand("batch", "a batch's counters (submitted, completed, verdicts)");
  batch->add_option("batch_id", batch_id)->required();
  batch->add_option("--tenant", batch_tenant, "tenant");
  batch->add_flag("--json", json, "machine-readable output");

  auto* admin = app.add_subcommand("admin", "operator commands");
  admin->require_subcommand(1);
  admin->add_flag("--json", json, "machine-readable output");
  auto* a_queues = admin->add_subcommand("queues", "per tenant: lag, pending, jobs without a result, parked retries, dead letters");
  std::string a_tenant = "dev", a_job, a_node, a_action = "list", a_entry, a_password;
  auto* a_job_cmd = admin->add_subcommand("job", "inspect a job: state, owner, deliveries, verdict");
  a_job_cmd->add_option("job_id", a_job)->required();
  a_job_cmd->add_option("--tenant", a_tenant, "tenant");
  auto* a_nodes = admin->add_subcommand("nodes", "live nodes (heartbeats)");
  bool a_undo = false;
  auto* a_drain = admin->add_subcommand("drain", "ask a node to drain (stop fetching, hand back, finish, exit)");
  a_drain->add_option("node", a_node)->required();
  a_drain->add_flag("--undo", a_undo, "withdraw the request");
  auto* a_dead = admin->add_subcommand("dead", "dead letters: list | retry [entry] | purge [entry]");
  a_dead->add_option("action", a_action)->check(CLI::IsMember({"list", "retry", "purge"}));
  a_dead->add_option("entry", a_entry, "one dead-letter entry id (default: all)");
  a_dead->add_option("--tenant", a_tenant, "tenant")->required();
  long long a_max = -1;
  auto* a_quota = admin->add_subcommand("quota", "set a tenant's (or '*' default) max jobs waiting for a result; -1 removes");
  a_quota->add_option("tenant", a_tenant)->required();
  a_quota->add_option("max", a_max)->required();
  auto* a_gpu_clear = admin->add_subcommand("gpu-clear", "lift a node's GPU quarantine (after checking the GPU)");
  a_gpu_clear->add_option("node", a_node)->required();
  auto* a_cap = admin->add_subcommand("cap", "set a tenant's (or '*' default) max running jobs on all nodes together; -1 removes");
  a_cap->add_option("tenant", a_tenant)->required();
  a_cap->add_option("max", a_max)->required();
  std::string a_token_action;
  auto* a_token = admin->add_subcommand("token", "kjudge-gateway API tokens: create | rotate | revoke <tenant>, or list");
  a_token->add_option("action", a_token_action)->required()->check(CLI::IsMember({"create", "rotate", "revoke", "list"}));
  a_token->add_option("tenant", a_tenant, "tenant (create, rotate, revoke)");
  bool a_apply = false;
  auto* a_acl = admin->add_subcommand("acl", "print (or --apply) the ACL SETUSER line of a tenant user");
  a_acl->add_option("tenant", a_tenant)->required();
  a_acl->add_option("--password", a_password, "the user's password")->required();
  a_acl->add_flag("--apply", a_apply, "run it on the server and register the tenant");
  auto* a_acl_gateway = admin->add_subcommand("acl-gateway", "print (or --apply) the ACL SETUSER line of kjudge-gateway's user kj-gateway");
  a_acl_gateway->add_option("--password", a_password, "the user's password")->required();
  a_acl_gateway->add_flag("--apply", a_apply, "run it on the server");

  CLI11_PARSE(app, argc, argv);
  kj::log::init("warn");
  try {
    if (kj::cli::is_gateway_url(redis)) {
      const char* token = std::getenv("KJUDGE_TOKEN");
      const kj::cli::GatewayClient gw(redis, token ? token : "");
      submit_spec.default_tenant = "";  // the gateway sets the token's
      if (*submit && !raw_payload_file) return kj::cli::gateway_submit(gw, kj::cli::build_job(submit_spec));
      if (*cancel) return kj::cli::gateway_cancel(gw, cancel_id, cancel_batch);
      if (*batch) return kj::cli::gateway_batch(gw, batch_id, json);
      if (*wait) {
        const auto r = kj::cli::gateway_wait(gw, wait_id, std::chrono::milliseconds(static_cast<long>(wait_timeout * 1000)));
        if (!r) {
          std::cerr << "kjudge: no result for " << wait_id << " within " << wait_timeout << " s\n";
          return 3;
        }
        return print_result(*r, json);
      }
      if (!*eval) throw std::runtime_error("through a gateway: submit, wait, cancel and batch (the rest needs Redis)");
    }
    if (*submit) {
      kjqueue::Queue q(endpoint_for(redis), partition);
      if (raw_payload_file) {
        const std::string id = submit_spec.job_id.empty() ? kj::cli::random_job_id() : submit_spec.job_id;
        q.submit(submit_spec.tenant.value_or("dev"), id, kj::cli::read_text(*raw_payload_file));
        std::cout << id << "\n";
        return 0;
      }
      const v1::Job job = kj::cli::build_job(submit_spec);
      try {
        q.submit(job.tenant(), job.job_id(), job.SerializeAsString(),
                 kjqueue::SubmitOptions{job.batch_id(), batch_size, kjqueue::lane_of_priority(job.priority())});
      } catch (const kjqueue::QueueFull& e) {
        std::cerr << "kjudge: queue full: " << e.what() << "\n";
        return 4;
      }
      std::cout << job.job_id() << "\n";
      return 0;
    }
    if (*cancel) {
      kjqueue::Queue q(endpoint_for(redis), partition);
      const auto ttl = std::chrono::seconds(7 * 24 * 3600);
      if (!cancel_batch.empty()) q.cancel_batch(cancel_tenant, cancel_batch, ttl);
      else if (!cancel_id.empty()) q.cancel_job(cancel_tenant, cancel_id, ttl);
      else throw std::runtime_error("cancel needs a job id or --batch");
      std::cout << "cancel requested\n";
      return 0;
    }
    if (*batch) {
      kjqueue::Queue q(endpoint_for(redis), partition);
      return kj::cli::batch_status(q, batch_tenant, batch_id, json);
    }
    if (*admin) {
      if (*a_acl && !a_apply) return kj::cli::admin_acl(nullptr, a_tenant, a_password, partition, false);
      if (*a_acl_gateway && !a_apply) return kj::cli::admin_gateway_acl(nullptr, a_password, partition, false);
      kjqueue::Queue q(endpoint_for(redis), partition);
      if (*a_queues) return kj::cli::admin_queues(q, json);
      if (*a_job_cmd) return kj::cli::admin_job(q, a_tenant, a_job, json);
      if (*a_nodes) return kj::cli::admin_nodes(q, json);
      if (*a_drain) return kj::cli::admin_drain(q, a_node, a_undo);
      if (*a_dead) return kj::cli::admin_dead(q, a_tenant, a_action, a_entry, json);
      if (*a_quota) return kj::cli::admin_quota(q, a_tenant, a_max);
      if (*a_cap) return kj::cli::admin_cap(q, a_tenant, a_max);
      if (*a_gpu_clear) {
        q.command({"SET", kjqueue::Keys::gpu_clear(partition, a_node), "1", "EX", "86400"});
        std::cout << "quarantine lift requested for " << a_node << " (applied at its next heartbeat)\n";
        return 0;
      }
      if (*a_acl) return kj::cli::admin_acl(&q, a_tenant, a_password, partition, true);
      if (*a_acl_gateway) return kj::cli::admin_gateway_acl(&q, a_password, partition, true);
      if (*a_token) return kj::cli::admin_token(q, a_token_action, a_tenant, json);
    }
    if (*wait) {
      kjqueue::Queue q(endpoint_for(redis), partition);
      auto bytes = q.wait_result(wait_tenant, wait_id,
                                 std::chrono::milliseconds(static_cast<long>(wait_timeout * 1000)));
      if (!bytes) {
        std::cerr << "kjudge: no result for " << wait_id << " within " << wait_timeout << " s\n";
        return 3;
      }
      v1::Result r;
      if (!r.ParseFromString(*bytes)) throw std::runtime_error("stored result is not a kjudge.v1.Result");
      return print_result(r, json);
    }
    if (*kbr) {
      if (kbr_ids_file) {
        std::istringstream lines(kj::cli::read_text(*kbr_ids_file));
        for (std::string line; std::getline(lines, line);)
          if (!line.empty()) kbr_ids.push_back(line);
      }
      kjqueue::Queue q(endpoint_for(redis), partition);
      std::vector<v1::Result> results;
      int missing = 0;
      for (const auto& id : kbr_ids) {
        auto bytes = kbr_timeout > 0 ? q.wait_result(kbr_tenant, id, std::chrono::milliseconds(static_cast<long>(kbr_timeout * 1000)))
                                     : q.get_result(kbr_tenant, id);
        v1::Result r;
        if (!bytes || !r.ParseFromString(*bytes)) {
          std::cerr << "kjudge: no result for " << id << "\n";
          ++missing;
          continue;
        }
        results.push_back(std::move(r));
      }
      const std::string text = kj::cli::kernelbench_eval_results(results).dump(2) + "\n";
      if (kbr_out) {
        std::ofstream(*kbr_out) << text;
      } else {
        std::cout << text;
      }
      return missing ? 3 : 0;
    }
    if (*eval) {
      kj::Config cfg = kj::load_config(config_file ? std::optional<std::filesystem::path>(*config_file) : std::nullopt);
      if (!config_file) cfg.state_dir = std::filesystem::temp_directory_path() / ("kjudge-eval-" + std::to_string(::getpid()));
      const v1::Job job = kj::cli::build_job(eval_spec);
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
      std::error_code ec;
      if (!config_file) std::filesystem::remove_all(cfg.state_dir, ec);
      return print_result(r, json);
    }
    if (*status) {
      kjqueue::Queue q(endpoint_for(redis), partition);
      const auto st = q.status();
      if (json) {
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
  } catch (const std::exception& e) {
    std::cerr << "kjudge: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
