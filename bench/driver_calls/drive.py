#!/usr/bin/env python3
"""Driver calls per job with 1, 2, 4 trusted workers sharing one GPU (issue 58).

The trusted worker (python/kjudge_worker) as kjudged runs it, without kjudged: N worker processes
on one GPU (one flock GPU lock between them, as one GPU's tenants have), each serving its control
socket; candidate processes on the same GPU that do what the candidate's harness does on the job
channel (for each set: inputs, the shared GPU lock, the call, the output, unlock). The candidates
run the reference's own model (same weights: the job's weight seed), so every output is right.
Each worker and candidate process has the CUPTI driver-call counter injected
(CUDA_INJECTION64_PATH=libkjdc.so, counter.c): per process, per driver function, calls and the wall
time in them, snapshotted before and after each measured batch.

A configuration (N workers, pool on or off: KJUDGE_VMM_POOL) starts its workers, warms each one
up (one job of every problem: the problem loaded, its sets made and cached, as after a GRPO step's
first jobs), then judges the batch: J jobs (PROBLEMS x samples, each problem's jobs sharing their
sets' seeds as an RL group does), always C jobs in flight over the node (C/N per worker, job i to
worker i mod N), the same C candidate processes for every configuration.

Usage:
  drive.py all --out DIR --problems DIR [--counter libkjdc.so] [--configs "1:0 1:1 2:0 ..."]
               [--samples 12] [--inflight 8] [--deadline UNIX_S] [--device cuda|cpu] [--tiny]
  drive.py client        (a candidate process: job lines on stdin, one reply line each)
Writes DIR/rows.jsonl (a row per job), DIR/summary.jsonl and DIR/calls.jsonl (per configuration),
as each configuration ends; `table.py DIR` renders them."""
import argparse
import json
import os
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

# (file under the problems dir, size overrides): the GRPO-shaped level-1/2 batch of
# bench/results/rlstep-20261202-h200-grpo-b64 (8 problems), sized so that 4 workers' caches of
# every set and the candidates' copies fit an 80 GB H100 together (sets of 64-270 MB)
PROBLEMS = [
    ("level1/1_Square_matrix_multiplication_.py", {}),
    ("level1/13_Matmul_for_symmetric_matrices.py", {}),
    ("level1/91_cumsum_reverse.py", {"batch_size": 1024}),
    ("level1/26_GELU_.py", {"batch_size": 64}),
    ("level1/47_Sum_reduction_over_a_dimension.py", {"batch_size": 2}),
    ("level1/98_KLDivLoss.py", {"batch_size": 1024}),
    ("level2/40_Matmul_Scaling_ResidualAdd.py", {"batch_size": 4096}),
    ("level2/76_Gemm_Add_ReLU.py", {}),
]
# --tiny (a CPU check of this script): every size small
TINY = {
    "level1/1_Square_matrix_multiplication_.py": {"N": 64},
    "level1/13_Matmul_for_symmetric_matrices.py": {"N": 64},
    "level1/91_cumsum_reverse.py": {"batch_size": 4},
    "level1/26_GELU_.py": {"batch_size": 2},
    "level1/47_Sum_reduction_over_a_dimension.py": {"batch_size": 2, "dim1": 16, "dim2": 15},
    "level1/98_KLDivLoss.py": {"batch_size": 4},
    "level2/40_Matmul_Scaling_ResidualAdd.py": {"batch_size": 8, "in_features": 32, "out_features": 32},
    "level2/76_Gemm_Add_ReLU.py": {"batch_size": 8, "in_features": 32, "out_features": 32},
}
# strict mode's five sets as kjudged asks for them (kernelbench/pipeline.cpp), one group's seeds
SETS = [{"name": n, "seed": 9100 + i, "transform": t} for i, (n, t) in enumerate(
    [("declared", "none"), ("declared-2", "none"), ("signed", "signflip"), ("large", "scale8"), ("spike", "spike")])]
TOL = {"atol": 1e-2, "rtol": 1e-2, "scale_aware": True, "nan_equal": True}
WEIGHT_SEED = 4242
BACKEND = "cuda"  # the jobs' backend: the device (main_all)


def log(*a):
    print(time.strftime("[%H:%M:%S]", time.gmtime()), *a, flush=True)


# --- a candidate process ---------------------------------------------------------------------

def client_main():
    import torch
    from kjudge_harness.channel import Channel
    from kjudge_protocol import inputs as kin
    from kjudge_protocol import numerics, transport
    from kjudge_protocol.module_loader import load_module

    device = torch.device(os.environ.get("KJDC_DEVICE", "cuda"))
    if device.type == "cuda":
        numerics.apply(compat=False)
        torch.ones(1, device=device).add_(1).item()  # the context, before the first job
    models = {}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        t0 = time.perf_counter()
        try:
            key = (job["ref"], json.dumps(job["overrides"], sort_keys=True))
            if key not in models:
                mod = load_module(job["ref"], f"ref{len(models)}", job["overrides"])
                kin.set_seed(int(job["weight_seed"]))
                models[key] = mod.Model(*mod.get_init_inputs()).to(device).eval()
            model = models[key]
            t1 = time.perf_counter()
            chan = Channel(job["chan"], device)
            with torch.no_grad():
                for k in job["sets"]:
                    values = chan.inputs(k)
                    chan.lock(shared=True)
                    try:
                        out = model(*values)
                        if device.type == "cuda":
                            torch.cuda.synchronize(device)
                    finally:
                        chan.unlock()
                    desc = {"index": k, "type": "torch.Tensor", **transport.describe(out), "device": str(out.device)}
                    chan.send_output("output", k, out, desc)
                    del out, values
                    chan.release(k)
            chan.close()
            reply = {"ok": True, "seconds": time.perf_counter() - t0, "channel_seconds": time.perf_counter() - t1}
        except Exception as exc:  # noqa: BLE001 -- said to the driver, the process goes on
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500], "seconds": time.perf_counter() - t0}
        print(json.dumps(reply), flush=True)
    return 0


class Client:
    def __init__(self, i, env, logdir):
        self.i = i
        self.err = open(os.path.join(logdir, f"client{i}.log"), "w")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "client"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, env=env, text=True, bufsize=1)

    def ready(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"candidate process {self.i} exited at start (see client{self.i}.log)")
        return json.loads(line)

    def run(self, job):
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"candidate process {self.i} exited")
        return json.loads(line)

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        except Exception:  # noqa: BLE001
            self.proc.kill()
        self.err.close()


# --- workers ----------------------------------------------------------------------------------

def ask(root, req, timeout=300):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(os.path.join(root, "control.sock"))
        s.sendall(json.dumps(req).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                raise RuntimeError("the worker closed the connection")
            data += chunk
    return json.loads(data)


class Worker:
    def __init__(self, root, tag, device, lock, cache_fraction, env, logdir):
        self.root, self.tag = root, tag
        for d in ("refs", "chan"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self.err = open(os.path.join(logdir, f"{tag}.log"), "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "kjudge_worker", root, device, lock, str(cache_fraction),
                                      "900"], env=env, stderr=self.err, stdout=self.err)

    def wait_ready(self, deadline):
        sock = os.path.join(self.root, "control.sock")
        while not os.path.exists(sock):
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.tag} exited at start (see {self.tag}.log)")
            if time.time() > deadline:
                raise RuntimeError(f"worker {self.tag} did not start")
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def run_job(worker, client, problems_dir, rel, overrides, job_id):
    """One job through `worker` with `client` as its candidate: prepare, the channel, results."""
    root = worker.root
    ref = os.path.join(problems_dir, rel)
    with open(ref) as f:
        src = f.read()
    with open(os.path.join(root, "refs", f"{job_id}.py"), "w") as f:
        f.write(src)
    os.makedirs(os.path.join(root, "chan", job_id), exist_ok=True)
    req = {"op": "prepare", "job_id": job_id, "reference_path": f"refs/{job_id}.py",
           "channel_path": f"chan/{job_id}/sock", "backend": BACKEND, "precision": "fp32", "mode": "strict",
           "size_overrides": overrides, "weight_seed": WEIGHT_SEED, "sets": SETS, "timing": {"skip": True},
           "tolerance": TOL, "time_baseline": False}
    row = {"job": job_id, "worker": worker.tag, "problem": rel}
    t0 = time.perf_counter()
    rep = ask(root, req)
    row["prepare_s"] = time.perf_counter() - t0
    if not rep.get("ok"):
        row["error"] = f"prepare: {rep.get('error', '')[:300]}"
        return row
    row["prepare_phases"] = rep.get("phase_seconds", {})
    sets = [s["index"] for s in rep["sets"] if "skipped" not in s]
    t1 = time.perf_counter()
    cand = client.run({"chan": os.path.join(root, "chan", job_id, "sock"), "ref": ref, "overrides": overrides,
                       "weight_seed": WEIGHT_SEED, "sets": sets})
    row["candidate_s"] = time.perf_counter() - t1
    row["candidate"] = cand
    res = ask(root, {"op": "results", "job_id": job_id, "timeout": 30})
    row["wall_s"] = time.perf_counter() - t0
    row["steps"] = res.get("worker_step_seconds", {})
    row["judge_s"] = res.get("judge_seconds", 0.0)
    row["judge_by"] = res.get("judge_seconds_by_request", {})
    row["hand_over"] = res.get("hand_over_buffers")
    row["passed"] = sum(1 for v in res.get("sets", {}).values() if v.get("passed"))
    row["sets"] = len(sets)
    row["faults"] = res.get("worker_faults", []) + res.get("transport_errors", []) + res.get("protocol_errors", [])
    if not cand.get("ok"):
        row["error"] = f"candidate: {cand.get('error')}"
    return row


# --- counters ---------------------------------------------------------------------------------

def snapshot(kjdc_dir, prefix, after, wait=3.0):
    """{file: calls} of the processes whose role starts with prefix, each written after `after`."""
    deadline = time.time() + wait
    while True:
        snaps, stale = {}, False
        for name in os.listdir(kjdc_dir) if os.path.isdir(kjdc_dir) else []:
            if not name.startswith(prefix) or not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(kjdc_dir, name)) as f:
                    d = json.load(f)
            except (OSError, ValueError):
                stale = True
                continue
            if d["t"] < after:
                stale = True
            snaps[name] = d["calls"]
        if not stale or time.time() > deadline:
            return snaps
        time.sleep(0.05)


def diff(before, after):
    """Calls and seconds per driver function over the window, summed over the processes."""
    total = {}
    for name, calls in after.items():
        was = before.get(name, {})
        for fn, (n, ns) in calls.items():
            n0, ns0 = was.get(fn, (0, 0))
            if n - n0:
                c = total.setdefault(fn, [0, 0.0])
                c[0] += n - n0
                c[1] += (ns - ns0) / 1e9
    return total


# --- a configuration --------------------------------------------------------------------------

def q(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


def run_config(a, n, pool, clients, work, problems, rows_f, rnd):
    tag = f"n{n}-pool{'on' if pool else 'off'}-r{rnd}"
    log(f"== {tag}: {n} worker(s), pool {'on' if pool else 'off'}")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "KJUDGE_VMM_POOL": "1" if pool else "0",
           "PYTHONUNBUFFERED": "1"}
    if a.counter:
        env.update({"CUDA_INJECTION64_PATH": a.counter, "KJDC_DIR": a.kjdc_dir})
    lock = os.path.join(work, "gpu.lock")
    workers = []
    t_start = time.time()
    for i in range(n):
        root = tempfile.mkdtemp(prefix=f"w{i}.", dir=work)
        workers.append(Worker(root, f"worker-{tag}-{i}", a.device, lock, a.cache_fraction,
                              {**env, "KJDC_ROLE": f"worker-{tag}-{i}"}, a.logdir))
    for w in workers:
        w.wait_ready(time.time() + 180)
    started = time.time() - t_start
    log(f"{tag}: workers up in {started:.1f} s")
    per = max(1, len(clients) // n)
    mine = {i: clients[i * per:(i + 1) * per] for i in range(n)}
    summary = {"config": tag, "workers": n, "pool": pool, "round": rnd, "start_s": round(started, 2)}
    # a configuration that hangs (a worker stalled, a candidate waiting on its channel) ends when
    # its workers are killed: every job in flight then fails, and the next configuration runs
    watchdog = threading.Timer(a.config_timeout, lambda: [w.proc.kill() for w in workers])
    watchdog.daemon = True
    watchdog.start()
    try:
        # warm-up: every worker loads every problem and makes its sets (not measured)
        t0 = time.time()
        warm = [[(rel, ov, f"{tag}-warm-{i}-{p}") for p, (rel, ov) in enumerate(problems)] for i in range(n)]
        errors = drive(workers, mine, warm, a.problems, None)
        summary["warm_s"] = round(time.time() - t0, 2)
        summary["warm_errors"] = errors[:3]
        log(f"{tag}: warm-up {summary['warm_s']} s, {len(errors)} errors {errors[:1]}")
        # the batch: samples x problems, job i to worker i mod n
        jobs = [(rel, ov) for rel, ov in problems for _ in range(a.samples)]
        queues = [[] for _ in range(n)]
        for j, (rel, ov) in enumerate(jobs):
            queues[j % n].append((rel, ov, f"{tag}-j{j}"))
        mark = time.time()
        wb = snapshot(a.kjdc_dir, f"worker-{tag}-", mark) if a.counter else {}
        cb = snapshot(a.kjdc_dir, "cand-", mark) if a.counter else {}
        t0 = time.perf_counter()
        batch_rows = []
        errors = drive(workers, mine, queues, a.problems, batch_rows)
        makespan = time.perf_counter() - t0
        mark = time.time()
        wa = snapshot(a.kjdc_dir, f"worker-{tag}-", mark) if a.counter else {}
        ca = snapshot(a.kjdc_dir, "cand-", mark) if a.counter else {}
        for r in batch_rows:
            r["config"] = tag
            rows_f.write(json.dumps(r) + "\n")
        rows_f.flush()
        ok = [r for r in batch_rows if "error" not in r]
        step_sum = [sum(v for k, v in r["steps"].items() if k != "gpu_lock_wait_shared") for r in ok]
        nj = max(1, len(batch_rows))
        wcalls, ccalls = diff(wb, wa), diff(cb, ca)
        steps = sorted({k for r in ok for k in r["steps"]})
        summary.update({
            "jobs": len(batch_rows), "ok": len(ok), "errors": errors[:3], "makespan_s": round(makespan, 3),
            "jobs_per_s": round(len(batch_rows) / makespan, 3),
            "passed_sets": sum(r["passed"] for r in ok), "sets": sum(r["sets"] for r in ok),
            "step_s_median": q(step_sum, 0.5), "step_s_mean": statistics.mean(step_sum) if step_sum else None,
            "step_s_p90": q(step_sum, 0.9),
            "judge_s_median": q([r["judge_s"] for r in ok], 0.5),
            "wall_s_median": q([r["wall_s"] for r in ok], 0.5),
            "prepare_s_median": q([r["prepare_s"] for r in ok], 0.5),
            "steps_median": {k: q([r["steps"].get(k, 0.0) for r in ok], 0.5) for k in steps},
            "steps_mean": {k: statistics.mean([r["steps"].get(k, 0.0) for r in ok]) for k in steps} if ok else {},
            "hand_over": {k: sum((r.get("hand_over") or {}).get(k, 0) for r in ok) for k in ("made", "reused")},
            "worker_calls_per_job": sum(c[0] for c in wcalls.values()) / nj,
            "worker_call_s_per_job": sum(c[1] for c in wcalls.values()) / nj,
            "cand_calls_per_job": sum(c[0] for c in ccalls.values()) / nj,
            "cand_call_s_per_job": sum(c[1] for c in ccalls.values()) / nj,
            "counted_processes": {"workers": len(wa), "candidates": len(ca)},
        })
        with open(os.path.join(a.out, "calls.jsonl"), "a") as f:
            f.write(json.dumps({"config": tag, "jobs": len(batch_rows), "worker": wcalls, "candidate": ccalls}) + "\n")
    finally:
        watchdog.cancel()
        for w in workers:
            w.stop()
        for w in workers:
            shutil.rmtree(w.root, ignore_errors=True)
    with open(os.path.join(a.out, "summary.jsonl"), "a") as f:
        f.write(json.dumps(summary) + "\n")
    log(f"{tag}: {summary.get('jobs')} jobs in {summary.get('makespan_s')} s, step median "
        f"{summary.get('step_s_median')}, worker driver calls/job {summary.get('worker_calls_per_job')}, "
        f"{summary.get('worker_call_s_per_job')} s/job")
    return summary


def drive(workers, mine, queues, problems_dir, rows):
    """Each worker's jobs through its candidate processes, every candidate busy at once."""
    errors = []
    lock = threading.Lock()

    def feed(w, client, jobs):
        while True:
            with lock:
                if not jobs:
                    return
                rel, ov, job_id = jobs.pop(0)
            try:
                row = run_job(w, client, problems_dir, rel, ov, job_id)
            except Exception as exc:  # noqa: BLE001
                row = {"job": job_id, "worker": w.tag, "problem": rel, "error": f"{type(exc).__name__}: {exc}"[:300]}
            with lock:
                if "error" in row or row.get("faults"):
                    errors.append(f"{job_id}: {row.get('error') or row.get('faults')}")
                if rows is not None:
                    rows.append(row)

    threads = [threading.Thread(target=feed, args=(w, c, queues[i]))
               for i, w in enumerate(workers) for c in mine[i]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def main_all(a):
    global BACKEND
    BACKEND = a.device
    os.makedirs(a.out, exist_ok=True)
    a.logdir = a.logdir or os.path.join(a.out, "logs")
    os.makedirs(a.logdir, exist_ok=True)
    a.kjdc_dir = a.kjdc_dir or os.path.join(tempfile.gettempdir(), f"kjdc.{os.getpid()}")
    os.makedirs(a.kjdc_dir, exist_ok=True)
    if a.counter:
        a.counter = os.path.abspath(a.counter)
    work = tempfile.mkdtemp(prefix="kjdc-work.")
    problems = [(rel, TINY[rel] if a.tiny else ov) for rel, ov in PROBLEMS][: a.problem_count]
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "KJDC_DEVICE": a.device, "PYTHONUNBUFFERED": "1"}
    clients = []
    for i in range(a.inflight):
        cenv = dict(env)
        if a.counter:
            cenv.update({"CUDA_INJECTION64_PATH": a.counter, "KJDC_DIR": a.kjdc_dir, "KJDC_ROLE": f"cand-{i}"})
        clients.append(Client(i, cenv, a.logdir))
    for c in clients:
        c.ready()
    log(f"{len(clients)} candidate processes up")
    configs = [tuple(int(x) for x in c.split(":")) for c in a.configs.split()]
    rows_f = open(os.path.join(a.out, "rows.jsonl"), "a")
    done = []
    try:
        for rnd in range(a.rounds):
            order = configs if rnd % 2 == 0 else list(reversed(configs))
            for n, pool in order:
                if a.deadline and time.time() + a.config_budget > a.deadline:
                    log(f"deadline near: {n}:{pool} round {rnd} not run")
                    continue
                try:
                    done.append(run_config(a, n, pool, clients, work, problems, rows_f, rnd))
                except Exception as exc:  # noqa: BLE001 -- said, and the next configuration runs
                    log(f"configuration {n}:{pool} round {rnd} failed: {type(exc).__name__}: {exc}")
                    if a.counter and not done:  # the counter in the workers may be why: timings without it
                        log("the first configuration failed: the workers run without the counter from now on")
                        a.counter = ""
                    with open(os.path.join(a.out, "summary.jsonl"), "a") as f:
                        f.write(json.dumps({"config": f"n{n}-pool{'on' if pool else 'off'}-r{rnd}", "workers": n,
                                            "pool": pool, "round": rnd, "failed": f"{type(exc).__name__}: {exc}"[:300]})
                                + "\n")
    finally:
        rows_f.close()
        for c in clients:
            c.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0 if done and all(s.get("ok") == s.get("jobs") for s in done) else 1


def main(argv):
    if len(argv) > 1 and argv[1] == "client":
        return client_main()
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["all"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--problems", required=True, help="a KernelBench tree (level1/, level2/)")
    ap.add_argument("--counter", default="")
    ap.add_argument("--kjdc-dir", default="")
    ap.add_argument("--logdir", default="")
    ap.add_argument("--configs", default="1:0 1:1 2:0 2:1 4:0 4:1", help="workers:pool ...")
    ap.add_argument("--rounds", type=int, default=1, help="rounds over the configs, every other one reversed")
    ap.add_argument("--samples", type=int, default=12, help="jobs per problem in the batch")
    ap.add_argument("--problem-count", type=int, default=len(PROBLEMS))
    ap.add_argument("--inflight", type=int, default=8, help="jobs in flight over the node (candidate processes)")
    ap.add_argument("--cache-fraction", type=float, default=0.3, help="each worker's (kjudged's default)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--deadline", type=float, default=0.0, help="unix time: no configuration starts after "
                    "deadline - config-budget")
    ap.add_argument("--config-budget", type=float, default=45.0)
    ap.add_argument("--config-timeout", type=float, default=120.0, help="a configuration's workers killed after")
    ap.add_argument("--tiny", action="store_true")
    return main_all(ap.parse_args(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
