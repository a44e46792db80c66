#include "runner/protocol.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "runner/clock_marks.h"
#include "runner/engine_math.h"
#include "runner/error.h"

namespace kjudge::runner {

namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {


std::uint64_t outputs_digest(const std::vector<HostArg>& args) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& a : args)
    if (const auto* t = std::get_if<HostTensor>(&a); t && t->is_output()) h = digest64(t->data.span(), h);
  return h;
}

void digest_inputs(const std::vector<HostArg>& args, unsigned set,
                   google::protobuf::RepeatedPtrField<v1::ArgDigest>* out) {
  for (const auto& a : args) {
    const auto* t = std::get_if<HostTensor>(&a);
    if (!t || t->role != v1::IN) continue;
    auto* d = out->Add();
    d->set_arg(t->index);
    d->set_hash(digest64(t->data.span()));
    d->set_set(set);
  }
}

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void perturb(std::vector<HostArg>& args, std::uint64_t seed, unsigned call) {
  std::uint64_t state = seed ^ (0xd1b54a32d192ed03ull * (call + 1));
  for (auto& a : args) {
    auto* t = std::get_if<HostTensor>(&a);
    if (!t || t->role == v1::OUT || t->bytes() == 0) continue;
    const std::size_t es = dtype_size(t->dtype), n = t->bytes() / es;
    const std::size_t p = splitmix64(state) % n, q = splitmix64(state) % n;
    std::memmove(t->data.data() + p * es, t->data.data() + q * es, es);
  }
}

void write_outputs(const std::vector<HostArg>& args, const fs::path& dir) {
  for (const auto& arg : args)
    if (const auto* t = std::get_if<HostTensor>(&arg); t && t->is_output()) write_tensor(*t, dir);
}

}  // namespace

int count_threads() {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n;
}

void copy_set(const std::vector<HostArg>& src, std::vector<HostArg>& dst) {
  if (src.size() != dst.size()) throw RunnerError("input sets differ in argument count");
  for (std::size_t i = 0; i < src.size(); ++i) {
    const auto* s = std::get_if<HostTensor>(&src[i]);
    auto* d = std::get_if<HostTensor>(&dst[i]);
    if (!s || !d) continue;
    if (s->bytes() != d->bytes()) throw RunnerError("input sets differ in tensor size");
    if (d->role == v1::OUT) {
      poison(d->data.span(), d->dtype);
    } else if (d->bytes()) {
      std::memcpy(d->data.data(), s->data.data(), d->bytes());
    }
  }
}

std::vector<v1::RunnerSet> request_sets(const v1::RunnerRequest& request) {
  std::vector<v1::RunnerSet> sets(request.sets().begin(), request.sets().end());
  if (sets.empty()) {
    v1::RunnerSet s;
    s.set_input_dir(request.input_dir());
    s.set_output_dir(request.output_dir());
    sets.push_back(s);
  }
  for (const auto& s : sets)
    if (s.output_dir().empty()) throw RunnerError("RUN needs output_dir");
  return sets;
}

std::vector<HostArg> load_set_args(const v1::RunnerRequest& request, const std::string& input_dir) {
  v1::RunnerRequest r = request;
  r.set_input_dir(input_dir);
  return load_args(r);
}

std::vector<HostArg> load_working_args(const v1::RunnerRequest& request) {
  return load_set_args(request, request_sets(request).front().input_dir());
}

void run_protocol(const v1::RunnerRequest& request, std::vector<HostArg>& args, Launcher& launcher,
                  v1::RunnerReport& report) {
  const auto sets = request_sets(request);

  // 1. Correctness: every set on fresh inputs and poisoned outputs.
  for (unsigned k = 0; k < sets.size(); ++k) {
    if (k > 0 || !request.sets().empty()) {
      const auto loaded = load_set_args(request, sets[k].input_dir());
      copy_set(loaded, args);
      launcher.load(args);
    }
    launcher.call();
    launcher.fetch_outputs();
    write_outputs(args, sets[k].output_dir());
    launcher.fetch_inputs();
    digest_inputs(args, k, report.mutable_inputs_after_correctness());
  }

  if (request.trials() == 0) {
    report.set_threads_after(count_threads());
    for (const auto& f : launcher.flags()) report.add_flags(f);
    return;
  }

  // 2. The timing pool, loaded once (host memory), rotated through.
  std::vector<unsigned> pool(request.timing_sets().begin(), request.timing_sets().end());
  if (pool.empty()) pool.push_back(0);
  std::vector<std::vector<HostArg>> pool_args;
  for (unsigned s : pool) {
    if (s >= sets.size()) throw RunnerError(fmt::format("timing set {} out of range", s));
    pool_args.push_back(load_set_args(request, sets[s].input_dir()));
  }
  const std::set<unsigned> audits(request.audit_calls().begin(), request.audit_calls().end());
  if (!audits.empty() && request.audit_dir().empty()) throw RunnerError("audit_calls need audit_dir");

  auto prepare = [&](unsigned i, bool timed) {
    copy_set(pool_args[i % pool.size()], args);
    if (timed && request.perturb_seed() != 0) perturb(args, request.perturb_seed(), i);
    launcher.load(args);
  };
  for (unsigned i = 0; i < request.warmup(); ++i) {
    prepare(i, false);
    launcher.call();
  }

  const unsigned max_trials = request.trials();
  const unsigned min_trials = std::min(max_trials, std::max(request.min_trials(), 1u));
  const double target = request.target_rel_ci() > 0 ? request.target_rel_ci() : 0.0;
  const auto t0 = std::chrono::steady_clock::now();
  ClockMarks clock(request.clock_path());
  std::vector<double> times;
  std::string stop = "max_trials";
  clock.mark('S');
  for (unsigned i = 0; i < max_trials; ++i) {
    prepare(i, true);
    launcher.before_timed_call();
    const CallTime t = launcher.call();
    clock.mark('T');
    launcher.fetch_outputs();
    report.add_trial_ms(t.ms);
    report.add_trial_wall_ms(t.wall_ms);
    report.add_trial_set(pool[i % pool.size()]);
    report.add_trial_output_hash(outputs_digest(args));
    if (audits.count(i)) {
      const fs::path dir = fs::path(request.audit_dir()) / std::to_string(i);
      fs::create_directories(dir);
      write_outputs(args, dir);
    }
    times.push_back(t.ms);
    const unsigned n = i + 1;
    if (n >= min_trials && target > 0 && n >= 5 && median_rel_ci(times) <= target) {
      stop = "ci";
      break;
    }
    if (request.budget_ms() > 0 && n >= min_trials &&
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() >
            request.budget_ms()) {
      stop = "budget";
      break;
    }
  }
  clock.mark('E');
  report.set_stop_reason(stop);
  // IN tensors after the loop, against what the last call was given (the set, perturbed): the
  // daemon cannot recompute perturbed inputs, so the runner compares here and reports a flag.
  {
    const unsigned last = static_cast<unsigned>(times.size() - 1);
    std::vector<HostArg> given = load_set_args(request, sets[pool[last % pool.size()]].input_dir());
    if (request.perturb_seed() != 0) perturb(given, request.perturb_seed(), last);
    launcher.fetch_inputs();
    for (std::size_t a = 0; a < args.size(); ++a) {
      const auto* t = std::get_if<HostTensor>(&args[a]);
      const auto* g = std::get_if<HostTensor>(&given[a]);
      if (t && g && t->role == v1::IN && digest64(t->data.span()) != digest64(g->data.span()))
        report.add_flags(fmt::format("inputs_mutated_during_timing:{}", t->index));
    }
  }
  report.set_threads_after(count_threads());
  report.set_flush_bandwidth_gbps(launcher.flush_bandwidth_gbps());
  for (const auto& f : launcher.flags()) report.add_flags(f);
}

}  // namespace kjudge::runner
