"""Issue 56's target: the reward overhead per step beyond the judge's own time, for a step of N
(default 256) completions, through each trainer integration, against a real redis-server and a
real kjudged (cpu backend) started here.

  trl         KjudgeReward(...)(prompts=, completions=, reference=, ...)   one judge_many call
  verl-batch  kjudge.integrations.verl.compute_score_batch                  one judge_many call
  verl-async  N x kjudge.integrations.verl.compute_score_async, gathered    per sample, JudgePool
  openrlhf    N concurrent POSTs (one query each, as OpenRLHF 0.11 sends)   the reward server
              (python -m kjudge.integrations.openrlhf, its own process) over JudgePool
  openrlhf-alt    the openrlhf path served by another version of the server (--openrlhf-alt FILE,
              e.g. `git show REV:python/kjudge/integrations/openrlhf.py > FILE`), interleaved
  openrlhf-floor  the same posting to a server that only answers (openrlhf_client_floor.py
              --serve, its own process): when the first request reached it and when all
              replies were back, under the same load; no overhead (nothing is judged)

For each step: wall = the trainer's call, from its start to its return; the judge's own time =
the first job's start on the judge (Result.started_at) to the last verdict (Result.finished_at),
the daemon's stamps; overhead = wall - the judge's time = the part of the step the judge was not
working on a job of it (building and submitting before the first job starts, waking, reading and
scoring after the last verdict; the queue's pick-up latency of the first job counts against us).
The openrlhf path splits its overhead: first_request_at_server_ms (the step's start to the server
having read the first request's head: the client's posting, its reply's received_at) and the rest
(overhead_after_first_request_ms: the server's look-up, submission, the first job's pick-up, and
the replies after the last verdict). Every run salts its texts anew (the build cache outlives a run). Also: the client's own CPU work
for N completions, each step alone (building jobs, scoring results), an upper bound were nothing
overlapped with judging.

Mixes: fast (every completion without code: COMPILE_ERROR, the judge's time is its queue path
alone, so the overhead is most of the step) and real (a quarter each honest, wrong, cheating and
no-code completions of activation_relu, trials=5).

Usage: overhead.py [--n 256] [--reps 5] [--mix fast|real] [--paths trl,verl-batch,verl-async,openrlhf,openrlhf-floor]
                   [--build-dir build-test] [--workers 2] [--out DIR] [--openrlhf-alt FILE]
Runs in a trainer venv (the openrlhf one has aiohttp; without it the openrlhf path posts from threads)."""

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from kjudge import keys  # noqa: E402
from kjudge.client import Client  # noqa: E402
from kjudge.integrations import verl as kverl  # noqa: E402
from kjudge.integrations.dataset import problem_rows  # noqa: E402
from kjudge.integrations.trl import KjudgeReward  # noqa: E402
from kjudge.jobs import build_job, new_job_id  # noqa: E402
from kjudge.reward import score_result  # noqa: E402

try:  # imported before any step, as a trainer has it loaded (the first step used to pay for it)
    import aiohttp
except ImportError:
    aiohttp = None

TASK = ROOT / "tests" / "kernelbench" / "tasks" / "activation_relu"
NO_CODE = (ROOT / "tests" / "kernelbench" / "completions" / "activation_sigmoid_no_code.md").read_text()
TOKEN = "kjt_bench_overhead_" + "0" * 32


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def fenced(path):
    return "Here is my kernel.\n```python\n%s```\n" % path.read_text()


def completions(mix, n, salt=""):
    """N distinct completions (salt: so no two steps send the same text)."""
    if mix == "fast":
        return [NO_CODE + "\n(sample %s%d)" % (salt, i) for i in range(n)]
    kinds = [fenced(TASK / "cpu_ok.py"), fenced(TASK / "cpu_cheat_identity.py"),
             fenced(TASK / "cpu_cheat_channel_probe.py"), NO_CODE]
    return [kinds[i % 4] + "\n# sample %s%d\n" % (salt, i) for i in range(n)]


# -- the judge ---------------------------------------------------------------------------------

class Judge:
    def __init__(self, build_dir, workers):
        self.dir = Path(tempfile.mkdtemp(prefix="kjbench."))
        self.dir.chmod(0o711)
        sock = self.dir / "redis.sock"
        self.redis = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", str(sock), "--unixsocketperm",
                                       "700", "--dir", str(self.dir), "--save", "", "--appendonly", "no"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = "unix://" + str(sock)
        for _ in range(200):
            if sock.exists():
                break
            time.sleep(0.05)
        cfg = self.dir / "kjudged.toml"
        cfg.write_text('[daemon]\nnode = "bench-node"\nstate_dir = "%s"\nworkers = %d\n[kernelbench]\ncache_dir = "%s"\n'
                       'harness_dir = "%s"\npch_variants = ["O0", "O2"]\n'
                       % (self.dir / "state", workers, Path(build_dir) / "kb-cache", ROOT / "python"))
        (self.dir / "state").mkdir(mode=0o711)
        self.bin = Path(build_dir) / "bin"
        self.log = open(self.dir / "kjudged.log", "w")
        self.daemon = subprocess.Popen([str(self.bin / "kjudged"), "--config", str(cfg), "--redis", self.url],
                                       stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            st = subprocess.run([str(self.bin / "kjudge"), "--redis", self.url, "status", "--json"], capture_output=True,
                                text=True)
            if st.returncode == 0 and any(n["node"] == "bench-node" for n in json.loads(st.stdout)["nodes"]):
                break
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("kjudged did not come up: " + (self.dir / "kjudged.log").read_text()[-2000:])
            time.sleep(0.2)
        self.client = Client(self.url)
        self.client.redis.hset(keys.tokens(0), hashlib.sha256(TOKEN.encode()).hexdigest(), "dev")

    def close(self):
        self.daemon.terminate()
        try:
            self.daemon.wait(60)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
        self.redis.kill()
        self.redis.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# -- the paths ---------------------------------------------------------------------------------

def run_trl(judge, texts, reference, opts):
    reward = KjudgeReward(redis_url=judge.url, deadline_s=900, **opts)
    rewards = reward(prompts=["p"] * len(texts), completions=texts, reference=[reference] * len(texts),
                     problem_id=["activation_relu"] * len(texts))
    details, _report = reward.last
    return [d["job_id"] for d in details], rewards


def run_verl_batch(judge, texts, reference, opts):
    prefix = new_job_id("vb")
    extras = [{"job_id": "%s-%d" % (prefix, i), "problem_id": "activation_relu"} for i in range(len(texts))]
    out = kverl.compute_score_batch(["kernelbench"] * len(texts), texts, [reference] * len(texts), extras,
                                    redis_url=judge.url, timeout_s=900, **opts)
    return [e["job_id"] for e in extras], [o["score"] for o in out]


def run_verl_async(judge, texts, reference, opts):
    prefix = new_job_id("va")
    extras = [{"job_id": "%s-%d" % (prefix, i), "problem_id": "activation_relu"} for i in range(len(texts))]

    async def step():
        return await asyncio.gather(*[kverl.compute_score_async("kernelbench", t, reference, e, redis_url=judge.url,
                                                                timeout_s=900, **opts) for t, e in zip(texts, extras)])
    out = asyncio.run(step())
    return [e["job_id"] for e in extras], [o["score"] for o in out]


class OpenRLHFServer:
    def __init__(self, judge, opts, source=None):
        """source: a file to run instead of `-m kjudge.integrations.openrlhf` (another version of it)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        cmd = [sys.executable] + ([str(source)] if source else ["-m", "kjudge.integrations.openrlhf"]) + [
            "--port", str(self.port), "--redis", judge.url, "--backend", "cpu", "--deadline-s", "900"]
        if opts.get("trials"):
            cmd += ["--trials", str(opts["trials"])]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        self.proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/livez" % self.port, timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        self.url = "http://127.0.0.1:%d/reward" % self.port

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


class FloorServer(OpenRLHFServer):
    """openrlhf_client_floor.py's answer server (asyncio, answers at once, judges nothing), its own
    process as the reward server is: the openrlhf path's posting alone, under the same load."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "trainers" / "openrlhf_client_floor.py"),
                                      "--serve", str(self.port)], stderr=subprocess.DEVNULL)
        self.url = "http://127.0.0.1:%d/reward" % self.port
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)


def run_openrlhf(server, texts, reference):
    bodies = [{"query": ["PROMPT" + t], "prompts": ["PROMPT"], "labels": [reference]} for t in texts]
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    if aiohttp is not None:  # as OpenRLHF posts: aiohttp, one session per request, all at once
        async def one(body):
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=900)) as s:
                async with s.post(server.url, json=body, headers=headers) as r:
                    r.raise_for_status()
                    return await r.json()

        async def step():
            return await asyncio.gather(*[one(b) for b in bodies])
        replies = asyncio.run(step())
    else:
        def one(body):
            req = urllib.request.Request(server.url, data=json.dumps(body).encode(), headers=headers)
            with urllib.request.urlopen(req, timeout=900) as r:
                return json.loads(r.read())
        with ThreadPoolExecutor(len(bodies)) as ex:
            replies = list(ex.map(one, bodies))
    if "arrived" in replies[0]:  # the floor's server: when the first request arrived, no jobs
        return min(r["arrived"] for r in replies)
    # when the server had read the first request's head (its reply's received_at)
    if all("received_at" in r for r in replies):  # older servers do not say
        run_openrlhf.first_received = min(r["received_at"] for r in replies)
    return [r["job_ids"][0] for r in replies], [r["rewards"][0] for r in replies]


# -- measuring ---------------------------------------------------------------------------------

def measure_floor(fn, texts):
    """The openrlhf-floor path: OpenRLHF's posting to a server that only answers."""
    t0 = time.time()
    first = fn(texts)
    t1 = time.time()
    return {"path": "openrlhf-floor", "n": len(texts), "wall_s": round(t1 - t0, 4),
            "first_request_at_server_ms": round((first - t0) * 1000, 1), "all_replies_ms": round((t1 - t0) * 1000, 1)}


def measure(judge, path, fn, texts):
    if path == "openrlhf-floor":
        return measure_floor(fn, texts)
    t0 = time.time()
    job_ids, rewards = fn(texts)
    t1 = time.time()
    results = [judge.client.get_result("dev", j) for j in job_ids]
    missing = sum(r is None for r in results)
    started = min(r.started_at.ToNanoseconds() for r in results if r is not None) / 1e9
    finished = max(r.finished_at.ToNanoseconds() for r in results if r is not None) / 1e9
    # every reward is the daemon's number for its job
    mismatched = sum(1 for r, got in zip(results, rewards)
                     if r is not None and score_result(r, on_error="none")["scored"] and got != r.reward.value)
    verdicts = {}
    for r in results:
        if r is not None:
            v = score_result(r, on_error="none")["verdict"]
            verdicts[v] = verdicts.get(v, 0) + 1
    wall, judge_s = t1 - t0, finished - started
    row = {"path": path, "n": len(texts), "wall_s": round(wall, 4), "judge_s": round(judge_s, 4),
           "overhead_ms": round((wall - judge_s) * 1000, 1), "before_first_start_ms": round((started - t0) * 1000, 1),
           "after_last_verdict_ms": round((t1 - finished) * 1000, 1), "missing": missing,
           "rewards_not_the_daemons": mismatched, "verdicts": verdicts}
    first = getattr(run_openrlhf, "first_received", None) if path.startswith("openrlhf") else None
    if first is not None:  # the overhead's split: the client's posting until the server has a request, the rest
        run_openrlhf.first_received = None
        row["first_request_at_server_ms"] = round((first - t0) * 1000, 1)
        row["overhead_after_first_request_ms"] = round(row["overhead_ms"] - row["first_request_at_server_ms"], 1)
    return row


def cpu_costs(reference, texts, results):
    """The client's own work for N completions, each step alone (no judging overlaps it)."""
    out = {}
    t = time.process_time()
    jobs = [build_job(reference, completion=c, backend="cpu", problem_id="activation_relu") for c in texts]
    out["build_jobs_cpu_ms"] = round((time.process_time() - t) * 1000, 1)
    t = time.process_time()
    for j in jobs:
        j.SerializeToString()
    out["serialize_cpu_ms"] = round((time.process_time() - t) * 1000, 1)
    t = time.process_time()
    for r in results:
        score_result(r, on_error="none")
    out["score_results_cpu_ms"] = round((time.process_time() - t) * 1000, 1)
    return out


def machine():
    load = os.getloadavg()
    model = ""
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host_cpus": os.cpu_count(), "cpu_model": model, "loadavg_1_5_15": [round(x, 2) for x in load],
            "python": platform.python_version(), "commit": commit, "command": " ".join(sys.argv)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mix", choices=["fast", "real"], default="fast")
    ap.add_argument("--paths", default="trl,verl-batch,verl-async,openrlhf,openrlhf-floor")
    ap.add_argument("--build-dir", default=os.environ.get("KJUDGE_BUILD_DIR", str(ROOT / "build-test")))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--openrlhf-alt", default=None, help="path openrlhf-alt: the openrlhf path with this file as "
                                                         "the server (e.g. an older kjudge/integrations/openrlhf.py)")
    a = ap.parse_args()
    reference = (TASK / "reference.py").read_text()
    opts = {"backend": "cpu"}
    if a.mix == "real":
        opts["trials"] = 5
    info = dict(machine(), n=a.n, reps=a.reps, mix=a.mix, workers=a.workers)
    log("starting redis-server and kjudged (%s)" % a.build_dir)
    judge = Judge(a.build_dir, a.workers)
    server = floor = alt = None
    rows = []
    try:
        log("warm-up: one job of each kind (the precompiled header, the sandbox pool)")
        run_trl(judge, completions("real", 4), reference, dict(opts, trials=5))
        paths = a.paths.split(",")
        # texts new to the build cache (kb-cache in the build dir outlives a run): a rerun judges as the first did
        run = new_job_id("run")
        if "openrlhf" in paths:
            server = OpenRLHFServer(judge, opts)
        if "openrlhf-floor" in paths:
            floor = FloorServer()
        if "openrlhf-alt" in paths:
            alt = OpenRLHFServer(judge, opts, source=a.openrlhf_alt)
        fns = {"trl": lambda t: run_trl(judge, t, reference, opts),
               "verl-batch": lambda t: run_verl_batch(judge, t, reference, opts),
               "verl-async": lambda t: run_verl_async(judge, t, reference, opts),
               "openrlhf": lambda t: run_openrlhf(server, t, reference),
               "openrlhf-floor": lambda t: run_openrlhf(floor, t, reference),
               "openrlhf-alt": lambda t: run_openrlhf(alt, t, reference)}
        for rep in range(a.reps):
            for path in paths:  # interleaved: each path meets the same load drift
                row = measure(judge, path, fns[path], completions(a.mix, a.n, "%s-%s-%d-" % (run, path, rep)))
                row["rep"] = rep
                row["loadavg_1"] = round(os.getloadavg()[0], 2)
                rows.append(row)
                log(json.dumps(row))
        texts = completions(a.mix, a.n, "cpu-")
        results = [judge.client.get_result("dev", j) for j in run_verl_batch(judge, texts, reference, opts)[0]]
        info["client_cpu"] = cpu_costs(reference, texts, results)
        info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        for srv in (server, floor, alt):
            if srv:
                srv.close()
        judge.close()
    summary = {}
    for path in a.paths.split(","):
        if path == "openrlhf-floor":
            mine = [r for r in rows if r["path"] == path]
            summary[path] = {k + "_median": statistics.median(r[k] for r in mine)
                             for k in ("first_request_at_server_ms", "all_replies_ms")}
            continue
        ov = [r["overhead_ms"] for r in rows if r["path"] == path]
        summary[path] = {"overhead_ms_median": statistics.median(ov), "overhead_ms_max": max(ov),
                         "judge_s_median": statistics.median(r["judge_s"] for r in rows if r["path"] == path),
                         "wall_s_median": statistics.median(r["wall_s"] for r in rows if r["path"] == path)}
        split = [r for r in rows if r["path"] == path and "first_request_at_server_ms" in r]
        for k in ("first_request_at_server_ms", "overhead_after_first_request_ms"):
            if split:
                summary[path][k + "_median"] = statistics.median(r[k] for r in split)
    info["summary"] = summary
    print(json.dumps(info, indent=1))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = "overhead-%s-n%d" % (a.mix, a.n)
        (out / (stem + ".json")).write_text(json.dumps(info, indent=1) + "\n")
        with open(out / (stem + "-steps.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
