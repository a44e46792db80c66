"""Fidelity of kjudge's verdicts and speedups on honest, model-style KernelBench candidates
(issue 23), judged on one GPU node through the queue. bench/fidelity/run drives it there; the
phases can also be run one at a time (--phases) and resumed (results.jsonl in --out).

Phases (in this order):
  warm    every candidate once in strict and compat mode, all at once (builds, baselines, worker
          sets; not measured, but its verdicts are kept), plus the noisy neighbours when --noise;
          KernelBench's builds of the same candidates run beside it (--kb-src)
  alone   each candidate ALONE on the node (one job at a time), strict and compat, --repeats times
          (--repeats-subset for the manifest's repeat5 entries)
  loaded  each candidate again while the node is kept full: --concurrency - 1 other jobs in flight
          at all times (other corpus candidates in strict mode, and the noisy neighbours of
          noise/ with --noise); the measured job's mode is its primary mode (strict where strict
          is expected OK, else compat). The fillers' results are kept too (phase "filler")
  kb      KernelBench's eval_kernel_against_ref (kb_eval.py, one process per candidate, one at a
          time; run it with kjudged stopped, so its workers hold no device memory)
  report  the per-candidate table and the summary against the targets (table.md, results.json)

Usage (on the GPU node, kjudged running): fidelity.py --redis unix:///tmp/kjfid/redis.sock
          --dataset .kb/fidelity --kb-src .kb/kb_src/src --out /tmp/kjfid/out [--phases warm,alone,loaded]
       fidelity.py --dry-run [--dataset DIR]: validates the manifest and the problem paths only
The client is kjudge's Python package (kjudge.build_job / Client) when redis-py and protobuf import,
else the kjudge CLI (--kjudge BIN: submit, wait --json, cancel)."""
import argparse
import ast
import concurrent.futures
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "../.."))
KINDS = {"naive", "fast", "torch_partial"}
UNSCORED = {"INFRA_ERROR", "CANCELLED", "EXPIRED", "NO_RESULT", "QUEUE_ERROR"}


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S", time.gmtime()), *a, flush=True)


# ---------------------------------------------------------------- manifest

def load_entries(manifest, noise_manifest=None):
    entries = json.load(open(manifest))
    noise = json.load(open(noise_manifest)) if noise_manifest and os.path.exists(noise_manifest) else []
    return entries, noise


def _defines(tree, names):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found.add(node.name)
    return [n for n in names if n not in found]


def validate(entries, noise, dataset):
    """Manifest fields, files, problem paths, and a static look at every file (no torch needed)."""
    errors = []
    seen = set()
    for e in entries:
        where = e.get("candidate", "?")
        for field in ("problem", "candidate", "kind", "structured_inputs", "note"):
            if field not in e:
                errors.append("%s: missing field %s" % (where, field))
        if e.get("kind") not in KINDS:
            errors.append("%s: kind %r not one of %s" % (where, e.get("kind"), sorted(KINDS)))
        if where in seen:
            errors.append("%s: listed twice" % where)
        seen.add(where)
    for e in entries + noise:
        where = e.get("candidate", "?")
        cand = os.path.join(HERE, where)
        ref = os.path.join(dataset, e.get("problem", ""))
        if not e.get("problem", "").startswith(("level1/", "level2/", "level3/")):
            errors.append("%s: problem %r is not under level1..3" % (where, e.get("problem")))
        if not os.path.isfile(ref):
            errors.append("%s: problem file missing: %s" % (where, ref))
        else:
            missing = _defines(ast.parse(open(ref).read()), ["Model", "get_inputs", "get_init_inputs"])
            if missing:
                errors.append("%s: problem defines no %s" % (where, ", ".join(missing)))
        if not os.path.isfile(cand):
            errors.append("%s: candidate file missing" % where)
            continue
        src = open(cand).read()
        try:
            tree = ast.parse(src)
        except SyntaxError as exc:
            errors.append("%s: syntax error: %s" % (where, exc))
            continue
        if _defines(tree, ["ModelNew"]):
            errors.append("%s: defines no ModelNew" % where)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "load_inline"]
        if not calls or not all(any(k.arg == "cuda_sources" for k in c.keywords) for c in calls):
            errors.append("%s: no load_inline(..., cuda_sources=...) call" % where)
    texts = [open(os.path.join(HERE, e["candidate"])).read() for e in entries if os.path.isfile(os.path.join(HERE, e["candidate"]))]
    if len(set(texts)) != len(texts):
        errors.append("two candidates have the same source text")
    return errors


# ---------------------------------------------------------------- the judge, through the queue

def result_dict(msg):
    from google.protobuf import json_format
    return json_format.MessageToDict(msg)


class QueueJudge:
    """Submit / poll / cancel KernelBench jobs: kjudge's Python client, else the kjudge CLI."""

    def __init__(self, redis_url, tenant, kjudge_bin=None, force_cli=False):
        self.redis_url, self.tenant, self.bin = redis_url, tenant, kjudge_bin
        self.py = None
        if not force_cli:
            try:
                sys.path.insert(0, os.path.join(REPO, "python"))
                import kjudge  # noqa: F401
                from kjudge.client import Client
                from kjudge.jobs import build_job
                self.py = Client(redis_url)
                self.build_job = build_job
            except Exception as exc:  # noqa: BLE001 - redis-py or protobuf missing: use the CLI
                log("python client unavailable (%s: %s); using the CLI %s" % (type(exc).__name__, exc, kjudge_bin))
                self.py = None
        if self.py is None and not (kjudge_bin and os.path.exists(kjudge_bin)):
            raise SystemExit("neither kjudge's Python client nor the kjudge CLI (--kjudge) is usable")
        self.via = "python client" if self.py else "CLI"

    def _cli(self, *args, timeout=60):
        return subprocess.run([self.bin, "--redis", self.redis_url, *args], capture_output=True, text=True, timeout=timeout)

    def submit(self, job_id, ref, cand, mode, batch, problem_id, meta):
        if self.py:
            job = self.build_job(__import__("pathlib").Path(ref), candidate=__import__("pathlib").Path(cand), backend="cuda",
                                 mode=mode, tenant=self.tenant, job_id=job_id, batch_id=batch, problem_id=problem_id, meta=meta)
            self.py.submit(job)
            return
        args = ["submit", "--tenant", self.tenant, "--job-id", job_id, "--kb-reference", ref, "--kb-candidate", cand,
                "--backend", "cuda", "--batch", batch]
        if mode == "compat":
            args.append("--compat")
        for k, v in meta.items():
            args += ["--meta", "%s=%s" % (k, v)]
        p = self._cli(*args)
        if p.returncode != 0:
            raise RuntimeError("kjudge submit failed: %s" % (p.stderr or p.stdout)[-300:])

    def poll(self, job_ids):
        """{job_id: result dict} for the finished ones among job_ids."""
        out = {}
        if self.py:
            got = self.py.wait_many(self.tenant, list(job_ids), 0.5)
            for j, r in got.items():
                if r is not None:
                    out[j] = result_dict(r)
            return out
        for j in job_ids:
            p = self._cli("wait", j, "--tenant", self.tenant, "--json", "--timeout", "0.05")
            if p.returncode != 3 and p.stdout.strip().startswith("{"):
                try:
                    out[j] = json.loads(p.stdout)
                except ValueError:
                    pass
        if not out:
            time.sleep(0.5)
        return out

    def wait(self, job_id, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            got = self.poll([job_id])
            if job_id in got:
                return got[job_id]
        self.cancel(job_id)
        return None

    def cancel(self, job_id):
        try:
            if self.py:
                self.py.cancel(self.tenant, job_id)
            else:
                self._cli("cancel", job_id, "--tenant", self.tenant)
        except Exception:  # noqa: BLE001
            pass


def summarize_result(r):
    """The fields the table needs from one Result (protobuf JSON)."""
    if r is None:
        return {"verdict": "NO_RESULT"}
    perf = r.get("performance", {})
    cand, base = perf.get("candidate", {}), perf.get("baseline", {})
    sets = r.get("correctness", [])
    ph = r.get("phaseSeconds", {})
    return {"verdict": r.get("status", "VERDICT_UNSPECIFIED"), "message": r.get("message", "")[:300],
            "cheat_class": r.get("cheatClass", ""), "sets": len(sets), "sets_passed": sum(1 for s in sets if s.get("passed")),
            "correct_sets": bool(sets) and all(s.get("passed") for s in sets),
            "speedup": perf.get("speedup", 0.0), "ci_low": perf.get("speedupCiLow", 0.0), "ci_high": perf.get("speedupCiHigh", 0.0),
            "baseline_loop_shift": perf.get("baselineLoopShift", 0.0),
            "device_loop_shift": perf.get("deviceLoopShift", 0.0),
            "cand_ms": cand.get("medianMs", 0.0), "cand_min_ms": cand.get("minMs", 0.0),
            "ref_ms": base.get("medianMs", 0.0), "trials": cand.get("trials", 0), "stop_reason": perf.get("stopReason", ""),
            "median_rel_ci": perf.get("medianRelCi", 0.0), "baseline_cached": perf.get("baselineCached", False),
            "cand_sm_mhz": perf.get("candidateSmClockMhz", 0.0), "ref_sm_mhz": perf.get("baselineSmClockMhz", 0.0),
            "outside_wall_ms": perf.get("outsideWallMs", 0.0), "inprocess_sum_ms": perf.get("inprocessSumMs", 0.0),
            "gpu_lock_held": ph.get("gpu_lock_held", 0.0), "legality_flags": r.get("legality", {}).get("flags", []),
            "worker": r.get("worker", ""), "speedup_source": perf.get("speedupSource", ""),
            "trusted_call_ms": perf.get("trustedCallMs", 0.0),
            # compat: KernelBench's means, and the trials timed again because the host made them wait
            "cand_mean_ms": cand.get("meanMs", 0.0), "ref_mean_ms": base.get("meanMs", 0.0),
            "cand_max_ms": cand.get("maxMs", 0.0), "ref_max_ms": base.get("maxMs", 0.0),
            "cand_trials_redone": cand.get("trialsRedone", 0), "ref_trials_redone": base.get("trialsRedone", 0),
            "cand_host_wait_ms": cand.get("hostWaitMs", 0.0), "ref_host_wait_ms": base.get("hostWaitMs", 0.0),
            "excessive_speedup": perf.get("excessiveSpeedup", False),
            # where a job's wall went (admission and lock waits, build, stages): a load's cost, per job
            "phase_seconds": {k: round(v, 3) for k, v in ph.items() if isinstance(v, (int, float))}}


# ---------------------------------------------------------------- state

class State:
    def __init__(self, out_dir):
        self.path = os.path.join(out_dir, "results.jsonl")
        self.rows = []
        self.lock = threading.Lock()
        if os.path.exists(self.path):
            for line in open(self.path):
                try:
                    self.rows.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a crash

    def add(self, row):
        row = dict(row, t=time.time())
        with self.lock:
            self.rows.append(row)
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")

    def done(self, phase, cand, mode, rep):
        return any(r["phase"] == phase and r["candidate"] == cand and r.get("mode") == mode and r.get("rep") == rep
                   and r.get("verdict") not in UNSCORED for r in self.rows)


def primary_mode(e):
    return "strict" if e.get("expected_strict", "OK") == "OK" else "compat"


# ---------------------------------------------------------------- phases

def job_id(tag):
    return "fid-%s-%s" % (tag, uuid.uuid4().hex[:12])


def run_one(judge, state, a, e, mode, phase, rep, extra=None):
    ref = os.path.join(a.dataset, e["problem"])
    cand = os.path.join(HERE, e["candidate"])
    jid = job_id(phase)
    t0 = time.time()
    judge.submit(jid, ref, cand, mode, jid, e["problem"], {"candidate": e["candidate"], "phase": phase})
    r = judge.wait(jid, a.job_timeout_s)
    row = {"phase": phase, "candidate": e["candidate"], "problem": e["problem"], "mode": mode, "rep": rep,
           "job_id": jid, "wall_s": round(time.time() - t0, 2), **summarize_result(r), **(extra or {})}
    state.add(row)
    return row


def phase_warm(judge, state, a, entries, noise):
    todo = [(e, m) for e in entries + (noise if a.noise else []) for m in a.modes
            if not state.done("warm", e["candidate"], m, 0)]
    log("warm: %d jobs at once (builds, baselines, sets)" % len(todo))
    jobs = {}
    for e, m in todo:
        jid = job_id("warm")
        judge.submit(jid, os.path.join(a.dataset, e["problem"]), os.path.join(HERE, e["candidate"]), m,
                     "warm-" + e["problem"].replace("/", "-").replace(".py", "") + "-" + m, e["problem"],
                     {"candidate": e["candidate"], "phase": "warm"})
        jobs[jid] = (e, m, time.time())
    deadline = time.monotonic() + a.warm_timeout_s
    while jobs and time.monotonic() < deadline:
        for jid, r in judge.poll(list(jobs)).items():
            e, m, t0 = jobs.pop(jid)
            row = {"phase": "warm", "candidate": e["candidate"], "problem": e["problem"], "mode": m, "rep": 0, "job_id": jid,
                   "wall_s": round(time.time() - t0, 2), **summarize_result(r)}
            state.add(row)
            log("warm %-70s %-6s %-12s %s" % (e["candidate"], m, row["verdict"], row.get("message", "")[:100]))
    for jid in jobs:
        judge.cancel(jid)
    if jobs:
        log("warm: %d jobs without a result after %d s (cancelled)" % (len(jobs), a.warm_timeout_s))


def phase_alone(judge, state, a, entries):
    reps = max(a.repeats, a.repeats_subset)
    for rep in range(reps):
        for e in entries:
            if rep >= (a.repeats_subset if e.get("repeat5") else a.repeats):
                continue
            for m in a.modes:
                if state.done("alone", e["candidate"], m, rep):
                    continue
                row = run_one(judge, state, a, e, m, "alone", rep)
                log("alone rep %d %-66s %-6s %-12s x%.3f  %.3f ms  %.1f s" % (
                    rep, e["candidate"], m, row["verdict"], row.get("speedup", 0), row.get("cand_ms", 0), row["wall_s"]))


class Filler(threading.Thread):
    """Keeps `n` jobs of other candidates (and the noisy neighbours) in flight."""

    def __init__(self, judge, state, a, pool, n):
        super().__init__(daemon=True)
        self.judge, self.state, self.a, self.pool, self.n = judge, state, a, pool, n
        self.stop = threading.Event()
        self.inflight = {}
        self.exclude = set()  # candidates being measured: no filler of the same source beside them
        self.rng = random.Random(1234)
        self.lock = threading.Lock()

    def count(self):
        with self.lock:
            return len(self.inflight)

    def run(self):
        i = 0
        while not self.stop.is_set():
            with self.lock:
                while len(self.inflight) < self.n:
                    e = self.pool[i % len(self.pool)]
                    i += 1
                    if e["candidate"] in self.exclude and len(self.pool) > 1:
                        continue
                    jid = job_id("fill")
                    mode = "strict"
                    try:
                        self.judge.submit(jid, os.path.join(self.a.dataset, e["problem"]), os.path.join(HERE, e["candidate"]),
                                          mode, jid, e["problem"], {"candidate": e["candidate"], "phase": "filler"})
                    except Exception as exc:  # noqa: BLE001
                        log("filler submit failed: %s" % exc)
                        time.sleep(1)
                        break
                    self.inflight[jid] = (e, mode, time.time())
                ids = list(self.inflight)
            for jid, r in self.judge.poll(ids).items():
                with self.lock:
                    e, mode, t0 = self.inflight.pop(jid)
                self.state.add({"phase": "filler", "candidate": e["candidate"], "problem": e["problem"], "mode": mode, "rep": 0,
                                "job_id": jid, "wall_s": round(time.time() - t0, 2), **summarize_result(r)})

    def finish(self):
        self.stop.set()
        self.join(timeout=30)
        with self.lock:
            for jid in self.inflight:
                self.judge.cancel(jid)


def loaded_modes(a, e):
    """The modes a candidate is measured in on the full node: its primary one, or --loaded-modes."""
    return [primary_mode(e)] if a.loaded_modes == "primary" else [m for m in a.loaded_modes.split(",") if m]


def phase_loaded(judge, state, a, entries, noise, all_entries):
    """Each candidate measured once per repeat with the node full: `loaded_at_once` measured jobs
    at a time (each other's load) and fillers for the rest of `concurrency`. With
    --filler-manifest the fillers are distinct sources (variants.py), each a cold build: the node
    builds while it times, as in an RL step."""
    # the fillers come from the whole corpus, whatever --only picked, or from --filler-manifest
    pool = json.load(open(a.filler_manifest)) if a.filler_manifest else list(all_entries)
    random.Random(7).shuffle(pool)
    if a.noise:
        # the noisy neighbours take every fourth filler slot
        pool = [x for i, e in enumerate(pool) for x in ([e] + ([noise[i % len(noise)]] if noise and i % 3 == 0 else []))]
    at_once = max(1, min(a.loaded_at_once, a.concurrency))
    filler = Filler(judge, state, a, pool, a.concurrency - at_once)
    filler.start()
    log("loaded: filling the node with %d jobs before the first measurement" % (a.concurrency - at_once))
    time.sleep(a.fill_settle_s)
    todo = queue.Queue()
    for rep in range(a.loaded_repeats):
        for e in entries:
            for m in loaded_modes(a, e):
                if not state.done("loaded", e["candidate"], m, rep):
                    todo.put((rep, e, m))

    def measure():
        while True:
            try:
                rep, e, m = todo.get_nowait()
            except queue.Empty:
                return
            filler.exclude.add(e["candidate"])
            inflight = filler.count()
            row = run_one(judge, state, a, e, m, "loaded", rep, {"fillers_at_submit": inflight, "measured_at_once": at_once})
            filler.exclude.discard(e["candidate"])
            log("loaded %-70s %-6s %-12s x%.3f  %.3f ms  fillers %d  %.1f s" % (
                e["candidate"], m, row["verdict"], row.get("speedup", 0), row.get("cand_ms", 0), inflight, row["wall_s"]))

    try:
        threads = [threading.Thread(target=measure, daemon=True) for _ in range(at_once)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        filler.finish()


def phase_kb(state, a, entries):
    if not a.kb_src or not os.path.isdir(os.path.join(a.kb_src, "kernelbench")):
        log("kb: no KernelBench src (--kb-src DIR holding kernelbench/): skipped")
        return
    for e in entries:
        if state.done("kb", e["candidate"], "kb", 0):
            continue
        t0 = time.time()
        cmd = [sys.executable, os.path.join(HERE, "kb_eval.py"), "--kb-src", a.kb_src, "--reference", os.path.join(a.dataset, e["problem"]),
               "--candidate", os.path.join(HERE, e["candidate"]), "--build-dir", kb_build_dir(a, e),
               "--correct-trials", str(a.kb_correct_trials), "--perf-trials", str(a.kb_perf_trials)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (a.kb_pythonpath, os.environ.get("PYTHONPATH", "")) if p))
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.kb_timeout_s, env=env)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            row = json.loads(lines[-1]) if lines else {"error": "no output (rc %d): %s" % (p.returncode, p.stderr[-300:])}
        except subprocess.TimeoutExpired:
            row = {"error": "timeout after %d s" % a.kb_timeout_s}
        row = {"phase": "kb", "candidate": e["candidate"], "problem": e["problem"], "mode": "kb", "rep": 0,
               "wall_s": round(time.time() - t0, 2), "verdict": "KB", **row}
        row.pop("runtime_stats", None) if not a.keep_kb_stats else None
        state.add(row)
        log("kb %-70s compiled %s correct %s speedup %s  %.1f s %s" % (
            e["candidate"], row.get("compiled"), row.get("correctness"), row.get("speedup"), row["wall_s"], row.get("error", "")[:120]))


def kb_build_dir(a, e):
    return os.path.join(a.kb_build_root, e["candidate"].replace("/", "__").replace(".py", ""))


def start_kb_builds(a, entries):
    """KernelBench's builds in the background (its eval_from_generations builds before it evaluates)."""
    if not a.kb_src or not os.path.isdir(os.path.join(a.kb_src, "kernelbench")):
        return None
    pairs = [{"name": e["candidate"], "candidate": os.path.join(HERE, e["candidate"]), "build_dir": kb_build_dir(a, e)} for e in entries]
    path = os.path.join(a.out, "kb_pairs.json")
    json.dump(pairs, open(path, "w"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (a.kb_pythonpath, os.environ.get("PYTHONPATH", "")) if p))
    log("kb builds: %d candidates, %d processes, in the background" % (len(pairs), a.kb_build_processes))
    return subprocess.Popen([sys.executable, os.path.join(HERE, "kb_eval.py"), "--kb-src", a.kb_src, "--build", "--pairs", path,
                             "--processes", str(a.kb_build_processes)], stdout=open(os.path.join(a.out, "kb_builds.jsonl"), "a"),
                            stderr=subprocess.STDOUT, env=env)


# ---------------------------------------------------------------- report

def _med(xs):
    return statistics.median(xs) if xs else None


def _fmt(x, f="%.3f"):
    return "-" if x is None else f % x


def build_report(rows, entries):
    by = {}
    for r in rows:
        by.setdefault(r["candidate"], []).append(r)
    table = []
    for e in entries:
        rs = by.get(e["candidate"], [])
        pm = primary_mode(e)

        def pick(phase, mode):
            return [r for r in rs if r["phase"] == phase and r.get("mode") == mode and r.get("verdict") not in UNSCORED]
        alone = {m: pick("alone", m) for m in ("strict", "compat")}
        strict_rows = [r for r in rs if r.get("mode") == "strict" and r["phase"] in ("warm", "alone", "loaded", "filler")
                       and r.get("verdict") not in UNSCORED]
        sp = {m: [r["speedup"] for r in alone[m] if r.get("speedup", 0) > 0] for m in alone}
        ms = {m: [r["cand_ms"] for r in alone[m] if r.get("cand_ms", 0) > 0] for m in alone}
        loaded = [r for r in pick("loaded", pm) if r.get("speedup", 0) > 0]
        kb = [r for r in rs if r["phase"] == "kb"]
        kb = kb[-1] if kb else None
        row = {"candidate": e["candidate"], "problem": e["problem"], "kind": e["kind"], "structured_inputs": e.get("structured_inputs"),
               "expected_strict": e.get("expected_strict", "OK"), "primary_mode": pm,
               "strict_verdicts": sorted({r["verdict"] for r in alone["strict"]}),
               "strict_verdicts_all": sorted({r["verdict"] for r in strict_rows}),
               "compat_verdicts": sorted({r["verdict"] for r in alone["compat"]}),
               "compat_correct": (all(r.get("correct_sets") for r in alone["compat"]) if alone["compat"] else None),
               "strict_verdict_jobs": {v: sum(1 for r in strict_rows if r["verdict"] == v) for v in sorted({r["verdict"] for r in strict_rows})},
               "strict_messages": sorted({"%s: %s" % (r["verdict"], r.get("message", "")[:160]) for r in strict_rows
                                          if r["verdict"] not in ("OK", e.get("expected_strict", "OK"))})[:3]}
        unjudged = [r for r in rs if r["phase"] != "kb" and r.get("verdict") in UNSCORED]
        row["unjudged_jobs"] = {v: sum(1 for r in unjudged if r["verdict"] == v) for v in sorted({r["verdict"] for r in unjudged})}
        row["unjudged_messages"] = sorted({"%s %s: %s" % (r.get("mode"), r["verdict"], r.get("message", "")[:160])
                                           for r in unjudged})[:3]
        for m in ("strict", "compat"):
            row[m + "_speedup"] = {"median": _med(sp[m]), "min": min(sp[m]) if sp[m] else None, "max": max(sp[m]) if sp[m] else None, "n": len(sp[m])}
            row[m + "_cand_ms"] = _med(ms[m])
            row[m + "_spread"] = (max(sp[m]) / min(sp[m])) if len(sp[m]) >= 2 else None
            row[m + "_ci_covers"] = ci_covers(alone[m])
        ss, cs = row["strict_speedup"]["median"], row["compat_speedup"]["median"]
        row["strict_over_compat"] = (ss / cs) if ss and cs else None  # two loops, one kernel: should agree
        alone_pm = row[pm + "_speedup"]["median"]
        row["loaded_speedup"] = _med([r["speedup"] for r in loaded])
        row["loaded_over_alone"] = (row["loaded_speedup"] / alone_pm) if row["loaded_speedup"] and alone_pm else None
        if kb:
            row["kb_compiled"], row["kb_correct"], row["kb_speedup"] = kb.get("compiled"), kb.get("correctness"), kb.get("speedup")
            row["kb_error"] = kb.get("error", "")
        else:
            row["kb_compiled"] = row["kb_correct"] = row["kb_speedup"] = None
        cs = row["compat_speedup"]["median"]
        row["compat_over_kb"] = (cs / row["kb_speedup"]) if cs and row.get("kb_speedup") else None
        compat_loaded(row, pick("loaded", "compat"))
        table.append(row)
    s = summarize(table)
    waits = sorted(r["wall_s"] for r in rows if r["phase"] == "loaded" and r.get("verdict") not in UNSCORED and "wall_s" in r)
    # how long a measured job took beside 15 others, queue included: what fair admission bounds
    s["loaded_wall_s"] = {"n": len(waits), "median": _med(waits), "max": waits[-1] if waits else None}
    return table, s


def compat_loaded(row, loaded):
    """compat on the full node beside compat alone and KernelBench's evaluator alone (issue 53), with
    what the loops say of the host: trials timed again, the longest trial, excessive speedups."""
    sp = [r["speedup"] for r in loaded if r.get("speedup", 0) > 0]
    row["compat_loaded_speedup"] = _med(sp)
    alone, kb = row["compat_speedup"]["median"], row.get("kb_speedup")
    row["compat_loaded_over_alone"] = (row["compat_loaded_speedup"] / alone) if sp and alone else None
    row["compat_loaded_over_kb"] = (row["compat_loaded_speedup"] / kb) if sp and kb else None
    row["compat_loaded_redone"] = [[r.get("cand_trials_redone", 0), r.get("ref_trials_redone", 0)] for r in loaded]
    row["compat_loaded_max_ms"] = [[r.get("cand_max_ms", 0), r.get("ref_max_ms", 0)] for r in loaded]
    row["excessive_speedup"] = any(r.get("excessive_speedup") for r in loaded) or bool(kb and kb > 10)


def compat_summary(table, s):
    """The compat targets: loaded vs KernelBench alone within 10 % for >= 90 %, none beyond 25 %;
    loaded vs alone p90 <= 5 %."""
    kb = [(t["candidate"], t["compat_loaded_over_kb"]) for t in table if t.get("compat_loaded_over_kb")]
    s["compat_loaded_kb_n"] = len(kb)
    s["compat_loaded_kb_within10"] = (sum(1 for _, x in kb if 0.9 <= x <= 1.1) / len(kb)) if kb else None
    s["compat_loaded_kb_beyond25"] = [[c, round(x, 3)] for c, x in kb if not 0.75 <= x <= 1.25]
    dev = [abs(t["compat_loaded_over_alone"] - 1) for t in table if t.get("compat_loaded_over_alone")]
    s["compat_loaded_alone_p90"], s["compat_loaded_alone_n"] = _p90(dev), len(dev)
    s["excessive_speedups"] = [t["candidate"] for t in table if t.get("excessive_speedup")]
    s["targets"].update({
        "compat loaded vs KernelBench alone within 10% for >= 90%":
            s["compat_loaded_kb_within10"] is not None and s["compat_loaded_kb_within10"] >= 0.90,
        "compat loaded vs KernelBench alone: none beyond 25%": bool(kb) and not s["compat_loaded_kb_beyond25"],
        "compat loaded vs compat alone p90 <= 5%": s["compat_loaded_alone_p90"] is not None and s["compat_loaded_alone_p90"] <= 0.05,
    })


def compat_markdown(table, s):
    out = ["", "## compat: alone, on the full node, and KernelBench's evaluator alone", "",
           "| candidate | compat alone | compat loaded | loaded/alone | KB alone | loaded/KB | trials redone (cand, ref) | longest trial ms (cand, ref) |",
           "|---|---|---|---|---|---|---|---|"]
    for t in table:
        if t.get("compat_loaded_speedup") is None and t["compat_speedup"]["median"] is None:
            continue
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            t["candidate"].replace("corpus/", ""), _fmt(t["compat_speedup"]["median"]), _fmt(t.get("compat_loaded_speedup")),
            _fmt(t.get("compat_loaded_over_alone")), _fmt(t["kb_speedup"]), _fmt(t.get("compat_loaded_over_kb")),
            t.get("compat_loaded_redone") or "-", t.get("compat_loaded_max_ms") or "-"))
    out += ["", "- compat loaded vs KernelBench alone: within 10%% for %s of %d; beyond 25%%: %s" % (
                _fmt(s["compat_loaded_kb_within10"], "%.3f"), s["compat_loaded_kb_n"], s["compat_loaded_kb_beyond25"] or "none"),
            "- compat loaded vs compat alone: p90 |ratio - 1| = %s over %d" % (
                _fmt(s["compat_loaded_alone_p90"], "%.4f"), s["compat_loaded_alone_n"]),
            "- speedups beyond KernelBench's 10x (excessive_speedup): %s" % (s["excessive_speedups"] or "none")]
    return out


def ci_covers(jobs):
    """[jobs whose reported 95% interval holds the median of all the repeats, jobs with an interval]
    for one candidate judged R >= 2 times: does the spread a result reports cover what repeating
    the job shows?"""
    sp = [r["speedup"] for r in jobs if r.get("speedup", 0) > 0]
    with_ci = [r for r in jobs if r.get("speedup", 0) > 0 and r.get("ci_low", 0) > 0]
    if len(sp) < 2 or not with_ci:
        return None
    mid = _med(sp)
    return [sum(1 for r in with_ci if r["ci_low"] <= mid <= r["ci_high"]), len(with_ci)]


def _p90(xs):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


def summarize(table):
    s = {}
    jobs = {}
    for t in table:
        for v, n in t["strict_verdict_jobs"].items():
            jobs[v] = jobs.get(v, 0) + n
    s["strict_cheat"] = sum(1 for t in table if "CHEAT" in t["strict_verdicts_all"])
    s["strict_suspicious"] = sum(1 for t in table if "SUSPICIOUS" in t["strict_verdicts_all"])
    s["strict_unexpected"] = [t["candidate"] for t in table if t["strict_verdicts"] and t["strict_verdicts"] != [t["expected_strict"]]]
    s["strict_verdict_counts"] = jobs
    unjudged = {}
    for t in table:
        for v, n in t["unjudged_jobs"].items():
            unjudged[v] = unjudged.get(v, 0) + n
    s["unjudged_counts"] = unjudged  # both modes, every phase: jobs the judge gave no verdict (its faults)
    for m in ("strict", "compat"):
        rep = [(t["candidate"], t[m + "_spread"]) for t in table if t[m + "_spread"] is not None and (t[m + "_cand_ms"] or 0) >= 0.1]
        s["repeat_%s" % m] = {"n": len(rep), "pass": sum(1 for _, x in rep if x <= 1.03),
                              "worst": sorted(rep, key=lambda x: -x[1])[:5]}
        covers = [t[m + "_ci_covers"] for t in table if t[m + "_ci_covers"] and (t[m + "_cand_ms"] or 0) >= 0.1]
        s["ci_covers_%s" % m] = [sum(c[0] for c in covers), sum(c[1] for c in covers)]
    soc = [abs(t["strict_over_compat"] - 1) for t in table if t["strict_over_compat"] is not None]
    s["strict_compat_p90_abs_dev"], s["strict_compat_n"] = _p90(soc), len(soc)
    dev = [abs(t["loaded_over_alone"] - 1) for t in table if t["loaded_over_alone"] is not None]
    s["loaded_p90_abs_dev"] = _p90(dev)
    s["loaded_n"] = len(dev)
    # the target's second half: no candidate beyond 15 % (its kernel time says whether the 100 us
    # floor of the repeatability target would cover it)
    worst = sorted(((abs(t["loaded_over_alone"] - 1), t["candidate"], t["strict_cand_ms"]) for t in table
                    if t["loaded_over_alone"] is not None), reverse=True)
    s["loaded_worst"] = [[c, round(d, 4), ms] for d, c, ms in worst[:3]]
    s["loaded_beyond_15"] = [c for d, c, _ in worst if d > 0.15]
    agree = [(t["compat_correct"] == t["kb_correct"]) for t in table if t["compat_correct"] is not None and t["kb_correct"] is not None]
    s["compat_kb_agreement"] = (sum(agree) / len(agree)) if agree else None
    s["compat_kb_agreement_n"] = len(agree)
    ratios = [t["compat_over_kb"] for t in table if t["compat_over_kb"] is not None]
    s["compat_kb_within10"] = (sum(1 for x in ratios if 0.9 <= x <= 1.1) / len(ratios)) if ratios else None
    s["compat_kb_n"] = len(ratios)
    s["targets"] = {
        "honest corpus 0 CHEAT / 0 SUSPICIOUS under strict": s["strict_cheat"] == 0 and s["strict_suspicious"] == 0,
        "every job judged (no INFRA_ERROR or other job without a verdict)": not unjudged,
        "repeatability max/min <= 1.03 for kernels >= 100 us (strict)": s["repeat_strict"]["n"] > 0 and s["repeat_strict"]["pass"] == s["repeat_strict"]["n"],
        "the reported spread (95% interval) holds the repeats' median in >= 90% of strict jobs":
            s["ci_covers_strict"][1] > 0 and s["ci_covers_strict"][0] >= 0.9 * s["ci_covers_strict"][1],
        "p90 |loaded/alone - 1| <= 5%": s["loaded_p90_abs_dev"] is not None and s["loaded_p90_abs_dev"] <= 0.05,
        "no candidate's |loaded/alone - 1| beyond 15%": s["loaded_n"] > 0 and not s["loaded_beyond_15"],
        "compat correctness agreement with KernelBench >= 98%": s["compat_kb_agreement"] is not None and s["compat_kb_agreement"] >= 0.98,
        "compat-vs-KernelBench speedup within 10% for >= 90%": s["compat_kb_within10"] is not None and s["compat_kb_within10"] >= 0.90,
    }
    compat_summary(table, s)
    return s


def markdown(table, s, meta):
    out = ["# kjudge fidelity run (bench/fidelity)", ""]
    out += ["- %s: %s" % (k, v) for k, v in meta.items()]
    out += ["", "| candidate | kind | strict | compat | strict speedup med (min-max) n | compat speedup med (min-max) n | cand ms | loaded | loaded/alone | KB correct | KB speedup | compat/KB |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in table:
        ss, cs = t["strict_speedup"], t["compat_speedup"]
        out.append("| %s | %s%s | %s | %s | %s (%s-%s) %d | %s (%s-%s) %d | %s | %s | %s | %s | %s | %s |" % (
            t["candidate"].replace("corpus/", ""), t["kind"], " S" if t["structured_inputs"] else "",
            "/".join(t["strict_verdicts"]) or "-", "/".join(t["compat_verdicts"]) or "-",
            _fmt(ss["median"]), _fmt(ss["min"]), _fmt(ss["max"]), ss["n"], _fmt(cs["median"]), _fmt(cs["min"]), _fmt(cs["max"]), cs["n"],
            _fmt(t["strict_cand_ms"] or t["compat_cand_ms"], "%.4g"), _fmt(t["loaded_speedup"]), _fmt(t["loaded_over_alone"]),
            {True: "yes", False: "NO", None: "-"}[t["kb_correct"]], _fmt(t["kb_speedup"]), _fmt(t["compat_over_kb"])))
    out += ["", "S: the problem's get_inputs() has structure (symmetric, triangular, probability rows, masks, labels).", "",
            "## Strict verdicts other than OK and the expected one (first 3 messages per candidate)", ""]
    for t in table:
        for msg in t["strict_messages"]:
            out.append("- %s: %s" % (t["candidate"], msg))
    out += ["", "## Jobs without a verdict (the judge's faults: not counted above, first 3 messages per candidate)", ""]
    for t in table:
        for msg in t["unjudged_messages"]:
            out.append("- %s (%s): %s" % (t["candidate"], t["unjudged_jobs"], msg))
    out += ["", "## Summary against the targets", ""]
    rs, rc = s["repeat_strict"], s["repeat_compat"]
    out += ["- strict jobs of the corpus per verdict (warm, alone, loaded, filler): %s" % s["strict_verdict_counts"],
            "- jobs of the corpus without a verdict (both modes, every phase): %s" % (s["unjudged_counts"] or "none"),
            "- candidates with a CHEAT: %d, with a SUSPICIOUS: %d; alone strict verdict differs from expected: %s" % (
                s["strict_cheat"], s["strict_suspicious"], s["strict_unexpected"] or "none"),
            "- repeatability (max/min speedup over R, kernels >= 100 us): strict %d/%d within 1.03 (worst %s); compat %d/%d (worst %s)" % (
                rs["pass"], rs["n"], ", ".join("%s %.3f" % w for w in rs["worst"][:3]), rc["pass"], rc["n"], ", ".join("%s %.3f" % w for w in rc["worst"][:3])),
            "- the reported spread (speedup_ci_low..high) holds the median of the candidate's repeats: strict %d of %d jobs, compat %d of %d" % (
                *s["ci_covers_strict"], *s["ci_covers_compat"]),
            "- strict/compat median speedup (two timing loops, one kernel): p90 |ratio - 1| = %s over %d candidates" % (
                _fmt(s["strict_compat_p90_abs_dev"], "%.4f"), s["strict_compat_n"]),
            "- loaded/alone: p90 |ratio - 1| = %s over %d candidates; worst %s; beyond 15%%: %d" % (
                _fmt(s["loaded_p90_abs_dev"], "%.4f"), s["loaded_n"],
                ", ".join("%s %.4f (%s ms)" % (c, d, _fmt(ms, "%.3f")) for c, d, ms in s["loaded_worst"]) or "-",
                len(s["loaded_beyond_15"])),
            "- a loaded job's wall (submitted to verdict, beside the fillers): median %s s, longest %s s over %d" % (
                _fmt(s["loaded_wall_s"]["median"], "%.1f"), _fmt(s["loaded_wall_s"]["max"], "%.1f"), s["loaded_wall_s"]["n"]),
            "- compat correctness agreement with KernelBench: %s over %d" % (_fmt(s["compat_kb_agreement"], "%.3f"), s["compat_kb_agreement_n"]),
            "- compat speedup within 10%% of KernelBench's: %s over %d" % (_fmt(s["compat_kb_within10"], "%.3f"), s["compat_kb_n"])]
    out += compat_markdown(table, s) + [""]
    for k, v in s["targets"].items():
        out.append("- [%s] %s" % ("x" if v else " ", k))
    return "\n".join(out) + "\n"


def write_report(state, entries, out, meta):
    table, s = build_report(state.rows, entries)
    json.dump({"meta": meta, "summary": s, "candidates": table}, open(os.path.join(out, "results.json"), "w"), indent=1, default=str)
    md = markdown(table, s, meta)
    open(os.path.join(out, "table.md"), "w").write(md)
    return md


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=os.path.join(HERE, "corpus.json"))
    ap.add_argument("--noise-manifest", default=os.path.join(HERE, "noise", "noise.json"))
    ap.add_argument("--dataset", default=os.path.normpath(os.path.join(REPO, "../shared/kernelbench")),
                    help="KernelBench's problems (level1/.. level3/)")
    ap.add_argument("--kb-src", help="KernelBench's src dir (holds kernelbench/eval.py); no kb phase without it")
    ap.add_argument("--kb-pythonpath", default="", help="extra PYTHONPATH for KernelBench's evaluator (pydantic)")
    ap.add_argument("--kb-build-root", default="/tmp/kjfid_kb_build")
    ap.add_argument("--kb-build-processes", type=int, default=8)
    ap.add_argument("--no-kb-builds", action="store_true",
                    help="no KernelBench builds beside warm (run passes it when PHASES has no kb)")
    ap.add_argument("--kb-correct-trials", type=int, default=5)
    ap.add_argument("--kb-perf-trials", type=int, default=100)
    ap.add_argument("--kb-timeout-s", type=int, default=900)
    ap.add_argument("--kb-build-timeout-s", type=int, default=1800)
    ap.add_argument("--keep-kb-stats", action="store_true")
    ap.add_argument("--redis", default=os.environ.get("KJUDGE_REDIS", ""))
    ap.add_argument("--kjudge", default=os.path.join(REPO, ".device/bin/kjudge"), help="the CLI, used when the Python client cannot import")
    ap.add_argument("--cli", action="store_true", help="use the CLI even when the Python client imports")
    ap.add_argument("--tenant", default="fidelity")
    ap.add_argument("--out", default="/tmp/kjfid/out")
    ap.add_argument("--phases", default="warm,alone,loaded,kb,report")
    ap.add_argument("--modes", default="strict,compat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-subset", type=int, default=5, help="repeats for the manifest's repeat5 entries")
    ap.add_argument("--loaded-repeats", type=int, default=1)
    ap.add_argument("--loaded-modes", default="primary",
                    help="modes measured on the full node: primary (strict, or compat for FALLBACK candidates) or a list, e.g. compat")
    ap.add_argument("--filler-manifest", default="",
                    help="fillers from this manifest (variants.py's: every filler a distinct source, a cold build)")
    ap.add_argument("--concurrency", type=int, default=16, help="jobs in flight in the loaded phase (the measured one included)")
    ap.add_argument("--loaded-at-once", type=int, default=1,
                    help="measured jobs in flight at once in the loaded phase (each other's load; fillers make up the rest)")
    ap.add_argument("--fill-settle-s", type=float, default=20)
    ap.add_argument("--noise", action="store_true", help="the noisy neighbours of noise/ among the fillers (and warmed)")
    ap.add_argument("--only", nargs="*", default=[], help="candidates whose path contains one of these")
    ap.add_argument("--limit", type=int, default=0, help="the first N candidates only")
    ap.add_argument("--shard", default="", help="I/N: every N-th candidate from the I-th (0-based) of those selected, "
                                                 "for one of N pipelines on one GPU each")
    ap.add_argument("--job-timeout-s", type=float, default=900)
    ap.add_argument("--warm-timeout-s", type=float, default=1800)
    ap.add_argument("--resume", nargs="*", action="extend", default=[],
                    help="results.jsonl files of earlier runs to start from (the flag may repeat)")
    ap.add_argument("--resume-phases", default="",
                    help="comma-separated phases whose rows are taken from --resume files (default: all), e.g. kb "
                         "to judge afresh with kjudge but keep KernelBench's evaluations")
    ap.add_argument("--merge", nargs="*", action="extend", default=[],
                    help="results.jsonl files of this run's shards: every row taken, whatever --resume-phases says")
    ap.add_argument("--dry-run", action="store_true", help="validate the manifest and problem paths; judge nothing")
    a = ap.parse_args()
    a.modes = [m for m in a.modes.split(",") if m]
    entries, noise = load_entries(a.manifest, a.noise_manifest)
    errors = validate(entries, noise, a.dataset)
    problems = {e["problem"] for e in entries}
    log("manifest: %d candidates over %d problems (%s), %d noisy neighbours; dataset %s" % (
        len(entries), len(problems), ", ".join("%s %d" % (k, sum(1 for e in entries if e["kind"] == k)) for k in sorted(KINDS)),
        len(noise), a.dataset))
    for err in errors:
        log("MANIFEST ERROR: " + err)
    if a.dry_run:
        log("dry run: %s" % ("manifest OK" if not errors else "%d errors" % len(errors)))
        return 1 if errors else 0
    if errors:
        return 1
    all_entries = list(entries)
    if a.only:
        entries = [e for e in entries if any(s in e["candidate"] for s in a.only)]
    if a.limit:
        entries = entries[:a.limit]
    if a.shard:
        i, n = (int(x) for x in a.shard.split("/"))
        entries = entries[i::n]
    os.makedirs(a.out, exist_ok=True)
    state_path = os.path.join(a.out, "results.jsonl")
    have = set(open(state_path).read().splitlines()) if os.path.exists(state_path) else set()
    # rows of earlier runs (filtered by --resume-phases) and of this run's shards, each line once
    sources = [(f, a.resume_phases) for f in a.resume] + [(f, "") for f in a.merge]
    gpu = cuda_device_name()
    for f, keep_phases in sources:
        if os.path.exists(f) and os.path.abspath(f) != os.path.abspath(state_path):
            with open(state_path, "a") as dst:
                for line in open(f).read().splitlines():
                    if line.strip() and line not in have and resumed_phase(line, keep_phases, gpu):
                        dst.write(line + "\n")
                        have.add(line)
    state = State(a.out)
    phases = [p for p in a.phases.split(",") if p]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "candidates": len(entries), "problems": len({e["problem"] for e in entries}),
            "repeats": "%d (%d for repeat5 entries)" % (a.repeats, a.repeats_subset), "concurrency": a.concurrency, "noise": a.noise}
    try:
        import torch
        meta["device"] = gpu or "no CUDA device"
        meta["torch"] = torch.__version__
    except Exception:  # noqa: BLE001
        pass
    judge = None
    if any(p in phases for p in ("warm", "alone", "loaded")):
        judge = QueueJudge(a.redis, a.tenant, a.kjudge, a.cli)
        log("judging through kjudged at %s (%s), tenant %s" % (a.redis, judge.via, a.tenant))
    # KernelBench's builds beside warm, for the candidates whose kb row a later kb phase will add
    kb_missing = [e for e in entries if not state.done("kb", e["candidate"], "kb", 0)]
    builds = start_kb_builds(a, kb_missing) if "warm" in phases and kb_missing and not a.no_kb_builds else None
    if "warm" in phases:
        phase_warm(judge, state, a, entries, noise)
    if builds is not None:
        log("waiting for KernelBench's builds")
        try:
            builds.wait(timeout=a.kb_build_timeout_s)
        except subprocess.TimeoutExpired:
            builds.kill()
            log("KernelBench's builds still running after %d s: stopped (the kb phase builds what is missing)" % a.kb_build_timeout_s)
    if "alone" in phases:
        phase_alone(judge, state, a, entries)
    if "loaded" in phases:
        phase_loaded(judge, state, a, entries, noise, all_entries)
    if "kb" in phases:
        if "warm" not in phases and not os.path.isdir(a.kb_build_root):
            b = start_kb_builds(a, entries)
            if b is not None:
                b.wait()
        phase_kb(state, a, entries)
    if "report" in phases:
        print(write_report(state, entries, a.out, meta))
    return 0


def cuda_device_name():
    """The GPU this run judges on, None without one (a report made elsewhere)."""
    try:
        import torch
        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None


def resumed_phase(line, phases, gpu=None):
    """Whether a row of an earlier run is kept: its phase is among `phases` ("" keeps every row),
    and a KernelBench row was measured on this run's GPU (`gpu`; None: any), else its speedups
    would not be side by side with this run's and KernelBench evaluates the candidate again."""
    try:
        row = json.loads(line)
    except ValueError:
        return False
    hardware = (row.get("metadata") or {}).get("hardware")
    if gpu and row.get("phase") == "kb" and hardware and hardware != gpu:
        return False
    return not phases or row.get("phase") in phases.split(",")


if __name__ == "__main__":
    sys.exit(main())
