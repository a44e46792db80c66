"""One build per distinct build input on a node (issue 24; docs/kernelbench-format.md, *The build
memo*): a real kjudged with two slots on a real redis-server judges two KernelBench-format cpu
jobs with the same candidate source at once. The build key is the build's inputs (tenant, source,
reference and sizes, policy overrides, backend, arch, toolchain), not the job's mode, so both jobs
share it: one slot runs the build role (`build.build` in its phases), the other waits for it
(`build.flight_wait`) and replays it (`build.replayed`), and the node logs one
`kernelbench.build`. No shared store: the single flight is the node's own.

The same across processes sharing a cache dir (parallel `kjudge eval`s, as bench/kernelbench/gpu_run
starts them): a lock file per build key, so strict and compat started together build once. And a
build that failed by the candidate's fault is remembered: the other mode replays the failure.
"""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import redis

from kjudge.client import completion_counts
from kjudge.jobs import build_job
from kjudge.v1 import verdict_pb2

from eval_workspace import shared_pch
from test_fault import Daemon, RedisProc, client_for, daemons, workdir  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
RELU = ROOT / "tests/kernelbench/tasks/activation_relu"
SYNTAX_ERROR = """import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x) return x
"""


def judge_pair(workdir, daemons, modes):
    """Submits the task's cpu_ok candidate once per mode, together, to a fresh two-slot node with
    an empty cache; returns ({job_id: Result}, node)."""
    r = RedisProc(workdir)
    c = client_for(r)
    cache = Path(tempfile.mkdtemp(prefix="kjflight-cache.", dir="/tmp"))
    cache.chmod(0o755)
    shared_pch(cache)
    try:
        node = Daemon(r.url, workdir, "judge", workers=2, extra=f"""
[kernelbench]
cache_dir = "{cache}"
harness_dir = "{ROOT / 'python'}"
""")
        daemons.append(node)
        ref, src = (RELU / "reference.py").read_text(), (RELU / "cpu_ok.py").read_text()
        jobs = [build_job(ref, candidate=src, backend="cpu", mode=mode, tenant="t", job_id=f"kb-{i}-{mode}", trials=3)
                for i, mode in enumerate(modes)]
        c.submit_many(jobs, batch_size=len(jobs))
        got = c.wait_many("t", [j.job_id for j in jobs], 600)
        assert all(res is not None for res in got.values()), node.log_tail()[-3000:]
        assert set(completion_counts(redis.Redis(unix_socket_path=r.sock), "t").values()) == {1}
        node.stop()
        return got, node
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def assert_built_once(got, node):
    verdicts = {j: verdict_pb2.Verdict.Name(res.status) for j, res in got.items()}
    assert set(verdicts.values()) == {"OK"}, ({j: res.message for j, res in got.items()}, node.log_tail()[-3000:])
    phases = {j: dict(res.phase_seconds) for j, res in got.items()}
    built = [j for j, p in phases.items() if "build.build" in p]
    replayed = [j for j, p in phases.items() if p.get("build.replayed") == 1 and "build.build" not in p]
    assert len(built) == 1 and len(replayed) == 1, phases
    # it waited for the other slot's build (a single flight), not a memo entry left after it
    assert phases[replayed[0]].get("build.flight_wait", 0) > 0, phases
    assert got[replayed[0]].compile.ok and got[replayed[0]].compile.cache_hit
    assert len(node.events("kernelbench.build")) == 1  # one build role run on the node
    print(f"built by {built[0]} ({phases[built[0]]['build.build']:.1f} s), replayed by {replayed[0]} "
          f"after waiting {phases[replayed[0]]['build.flight_wait']:.1f} s")


def test_two_concurrent_jobs_with_the_same_source_build_once(workdir, daemons):
    assert_built_once(*judge_pair(workdir, daemons, ["strict", "strict"]))


def test_strict_and_compat_of_one_source_build_once(workdir, daemons):
    assert_built_once(*judge_pair(workdir, daemons, ["strict", "compat"]))


def start_eval(base, name, candidate, *flags):
    """A `kjudge eval` of the relu task with its own state dir and the shared cache dir under base."""
    state = base / f"state-{name}"
    state.mkdir(mode=0o711)
    cfg = state / "kjudge.toml"
    cfg.write_text(f'[daemon]\nstate_dir = "{state}"\n\n[kernelbench]\ncache_dir = "{base / "cache"}"\n'
                   f'harness_dir = "{ROOT / "python"}"\n')
    cmd = [str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--kb-reference", str(RELU / "reference.py"),
           "--kb-candidate", str(candidate), "--backend", "cpu", "--json", "--trials", "3", "--job-id", name, *flags]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc):
    stdout, stderr = proc.communicate(timeout=600)
    assert stdout.strip(), stderr[-3000:]
    return json.loads(stdout)


def eval_base():
    base = Path(tempfile.mkdtemp(prefix="kjflight-eval."))
    base.chmod(0o711)
    (base / "cache").mkdir(mode=0o755)
    shared_pch(base / "cache")
    return base


def test_parallel_evals_of_strict_and_compat_build_once():
    base = eval_base()
    try:
        procs = [start_eval(base, "strict", RELU / "cpu_ok.py"), start_eval(base, "compat", RELU / "cpu_ok.py", "--compat")]
        results = [finish(p) for p in procs]
        assert [r["status"] for r in results] == ["OK", "OK"], results
        phases = [r["phaseSeconds"] for r in results]
        built = [p for p in phases if "build.build" in p]
        replayed = [p for p in phases if p.get("build.replayed") == 1 and "build.build" not in p]
        assert len(built) == 1 and len(replayed) == 1, phases
        assert replayed[0].get("build.flight_wait", 0) > 0, phases  # it waited for the other process's build
        assert built[0].get("build.light_headers") == 1, phases  # its one extension, with the light headers
        print(f"built in {built[0]['build.build']:.1f} s ({built[0].get('build.cpu_seconds', 0):.1f} CPU-s), "
              f"the other process waited {replayed[0]['build.flight_wait']:.1f} s and replayed it")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_candidates_build_failure_is_replayed_for_the_other_mode():
    base = eval_base()
    try:
        candidate = base / "candidate.py"
        candidate.write_text(SYNTAX_ERROR)
        first = finish(start_eval(base, "strict", candidate))
        again = finish(start_eval(base, "compat", candidate, "--compat"))
        assert first["status"] == again["status"] == "COMPILE_ERROR", (first, again)
        # the first ran the build role (its static policy rejected the source), the second did not
        assert "build.static_policy" in first["phaseSeconds"], first
        assert "build.static_policy" not in again["phaseSeconds"], again
        assert again["phaseSeconds"].get("build.replayed") == 1, again
        assert again["message"] == first["message"]
        assert again.get("compile") == first.get("compile")
        assert again.get("feedback") == first.get("feedback")
    finally:
        shutil.rmtree(base, ignore_errors=True)
