"""End to end: a real redis-server, a real kjudged, every bundled example submitted through the
kjudge CLI, every verdict asserted. Also: invalid jobs become INVALID_JOB results and the daemon
keeps serving; SIGTERM stops it cleanly.

Needs a build (scripts/test does it); KJUDGE_BUILD_DIR names it (default: build-test).
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from eval_workspace import SUITE_PCH_VARIANTS
from kjudge import keys
from kjudge.client import Client, QueueError
from kjudge.v1 import job_pb2, result_pb2, verdict_pb2

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
KB_CACHE = BUILD / "kb-cache"  # torch extension builds and precompiled headers, shared with the suite
BIN = BUILD / "bin"
EXAMPLES = ROOT / "examples" / "native"
MAX_JOB_BYTES = 256 * 1024


# `kjudge eval` / `kjudge wait` exit by verdict class (src/cli/exit_code.h)
EXIT_CODES = {"OK": 0, "COMPILE_ERROR": 10, "RUNTIME_ERROR": 11, "CUDA_FAULT": 11, "TIMEOUT": 11, "MEMORY_LIMIT": 11,
              "OUTPUT_LIMIT": 11, "INCORRECT": 11, "FALLBACK": 12, "DECOY": 12, "CHEAT": 12, "SUSPICIOUS": 12,
              "UNVERIFIABLE": 12, "INVALID_JOB": 13, "CANCELLED": 13, "EXPIRED": 13, "INFRA_ERROR": 14}


def cli(redis_url, *args, check=True, timeout=300):
    p = subprocess.run([str(BIN / "kjudge"), "--redis", redis_url, *args], capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"kjudge {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


@pytest.fixture
def daemon(redis_url, tmp_path):
    assert (BIN / "kjudged").exists(), f"no build in {BUILD}: run scripts/test (or scripts/build test)"
    # job dirs are bound into sandboxes as an unprivileged uid: the state dir must be searchable
    state = Path(tempfile.mkdtemp(prefix="kjudge-e2e-state."))
    state.chmod(0o711)
    cfg = tmp_path / "kjudged.toml"
    cfg.write_text(f"""
[daemon]
node = "e2e-node"
state_dir = "{state}"
workers = 2
[limits]
max_job_bytes = {MAX_JOB_BYTES}
[kernelbench]
cache_dir = "{KB_CACHE}"
harness_dir = "{ROOT / 'python'}"
{SUITE_PCH_VARIANTS}""")
    log = open(tmp_path / "kjudged.log", "w")
    proc = subprocess.Popen([str(BIN / "kjudged"), "--config", str(cfg), "--redis", redis_url],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:  # ready once its heartbeat is visible
        st = cli(redis_url, "status", "--json", check=False)
        if st.returncode == 0 and any(n["node"] == "e2e-node" for n in json.loads(st.stdout)["nodes"]):
            break
        assert proc.poll() is None, (tmp_path / "kjudged.log").read_text()
        assert time.monotonic() < deadline, "kjudged did not come up"
        time.sleep(0.1)
    yield proc
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=60)
    log.close()
    lines = [json.loads(l) for l in (tmp_path / "kjudged.log").read_text().splitlines() if l.startswith("{")]
    assert rc == 0, "kjudged did not exit cleanly on SIGTERM"
    assert any(l["event"] == "daemon.stopped" for l in lines)
    assert all(l["level"] in ("trace", "debug", "info", "warning", "error") for l in lines), lines[:3]
    shutil.rmtree(state, ignore_errors=True)


def test_kernelbench_job_through_the_queue_strict_and_compat(redis_url, daemon, tmp_path):
    """A KernelBench-format job (CPU backend) submitted with the CLI, judged by kjudged; the same
    job in compat mode read back as KernelBench's own result JSON."""
    task = ROOT / "tests/kernelbench/tasks/activation_relu"
    common = ["--kb-reference", str(task / "reference.py"), "--kb-candidate", str(task / "cpu_ok.py"),
              "--backend", "cpu", "--trials", "20"]
    cli(redis_url, "submit", *common, "--job-id", "kb-strict", "--meta", "sample_id=0")
    cli(redis_url, "submit", *common, "--job-id", "kb-compat", "--compat", "--meta", "sample_id=1")
    # the first KernelBench job on a cache also builds the precompiled torch header (~1.5 min)
    r = json.loads(cli(redis_url, "wait", "kb-strict", "--json", "--timeout", "900", timeout=960, check=False).stdout)
    assert r["status"] == "OK", r.get("message")
    assert [s["name"] for s in r["correctness"]] == ["declared", "declared-2", "signed", "large", "spike"]
    assert r["legality"]["customKernels"] >= 1 and r["performance"]["audits"] >= 1
    # every candidate's reference is timed beside it, in the same GPU-lock hold (docs/timing.md)
    assert r["performance"].get("baselineAdjacent") is True and r["performance"]["speedup"] > 0
    assert r["performance"]["speedupCiLow"] <= r["performance"]["speedup"] <= r["performance"]["speedupCiHigh"]
    # the job's other reference loop (made with the sets): their distance widens the interval
    assert r["performance"].get("baselineLoopShift", 0) > 0
    # the candidate's wait for the judge, split by request: its sets handed over and its outputs
    # compared (docs/gpu-worker.md), adding up to the whole wait
    phases = r["phaseSeconds"]
    assert phases["judge_wait.inputs"] > 0 and phases["judge_wait.output"] > 0, phases
    by_request = sum(v for k, v in phases.items() if k.startswith("judge_wait.") and k != "judge_wait.heavy_set_wait")
    assert by_request == pytest.approx(phases["judge_wait"], rel=1e-3, abs=1e-3)
    # and the worker's time on the job by step (making sets, comparing outputs, ...)
    assert "worker.make_set" in phases and "worker.compare" in phases, phases
    # the operator's view of the loops per input set of the pool (the candidate's and the reference's)
    by_set = wait_for_log_event(tmp_path / "kjudged.log", "kernelbench.timing_by_set", "kb-strict")
    assert len(by_set["candidate_ms"]) == 5 and set(by_set["reference_ms"]) == set(by_set["candidate_ms"]), by_set
    cli(redis_url, "submit", *common, "--job-id", "kb-strict-again")
    again = json.loads(cli(redis_url, "wait", "kb-strict-again", "--json", "--timeout", "300", timeout=360, check=False).stdout)
    assert again["status"] == "OK", again.get("message")
    assert again["performance"].get("baselineAdjacent") is True and not again["performance"].get("baselineCached")
    kb = json.loads(cli(redis_url, "wait", "kb-compat", "--kernelbench-json", "--timeout", "900", timeout=960, check=False).stdout)
    assert set(kb) == {"compiled", "correctness", "metadata", "runtime", "runtime_stats", "ref_runtime",
                       "ref_runtime_stats"}
    assert kb["compiled"] and kb["correctness"], kb["metadata"]
    assert kb["metadata"]["correctness_trials"] == "(5 / 5)"
    assert kb["runtime"] > 0 and kb["runtime_stats"]["num_trials"] == 100  # 101 trials, the first discarded
    assert kb["ref_runtime"] > 0
    # a batch in KernelBench's eval_results.json layout: samples grouped under the task's problem id
    batch = json.loads(cli(redis_url, "kernelbench-results", "kb-strict", "kb-compat").stdout)
    assert list(batch) == ["activation_relu"]
    assert [s["sample_id"] for s in batch["activation_relu"]] == [0, 1]
    assert set(batch["activation_relu"][1]) == {"sample_id", "compiled", "correctness", "metadata", "runtime",
                                               "runtime_stats"}
    assert batch["activation_relu"][1]["runtime"] == kb["runtime"]
    missing = cli(redis_url, "kernelbench-results", "kb-strict", "no-such-job", check=False)
    assert missing.returncode == 3 and "no-such-job" in missing.stderr


def test_the_tenants_worker_starts_with_the_build_not_after_it(redis_url, daemon, tmp_path):
    """A cold trusted worker imports torch and warms up (kjudge_worker/warm_up.py) while the job's
    candidate builds: kjudged starts it when the job starts, so even a candidate that never builds
    has started its tenant's worker (before, the worker started at the reference's prepare)."""
    task = ROOT / "tests/kernelbench/tasks/activation_relu"
    broken = tmp_path / "broken.py"
    broken.write_text((task / "cpu_ok.py").read_text().replace("torch::Tensor relu_fwd(", "torch::Tensor relu_fwd( +", 1))
    cli(redis_url, "submit", "--kb-reference", str(task / "reference.py"), "--kb-candidate", str(broken),
        "--backend", "cpu", "--job-id", "kb-never-builds")
    r = json.loads(cli(redis_url, "wait", "kb-never-builds", "--json", "--timeout", "900", timeout=960,
                       check=False).stdout)
    assert r["status"] == "COMPILE_ERROR", r.get("message")
    starts = [json.loads(line) for line in (tmp_path / "kjudged.log").read_text().splitlines()
              if line.startswith("{") and '"worker.start"' in line]
    assert len(starts) == 1 and starts[0]["gpu"] is False, starts


def wait_for_log_event(path, event, job_id, seconds=10):
    deadline = time.monotonic() + seconds
    while True:
        for line in path.read_text().splitlines():
            if line.startswith("{") and event in line:
                entry = json.loads(line)
                if entry.get("job_id") == job_id:
                    return entry
        assert time.monotonic() < deadline, f"no {event} for {job_id} in the daemon's log"
        time.sleep(0.2)


def examples():
    return json.loads((EXAMPLES / "examples.json").read_text())


def test_every_example_gets_its_verdict_through_the_cli(redis_url, daemon):
    ids = []
    for i, ex in enumerate(examples()):
        job_id = f"e2e-{i}"
        out = cli(redis_url, "submit", "--task", str(EXAMPLES / ex["task"]), "--candidate",
                  str(EXAMPLES / ex["candidate"]), "--job-id", job_id, "--run-wall-ms", "4000", "--trials", "3")
        assert out.stdout.strip() == job_id
        ids.append(job_id)
    for job_id, ex in zip(ids, examples()):
        out = cli(redis_url, "wait", job_id, "--json", "--timeout", "300", check=False)
        r = json.loads(out.stdout)
        assert r["status"] == ex["expect"], f"{ex['candidate']}: {r.get('message')} {r.get('feedback')}"
        assert out.returncode == EXIT_CODES[ex["expect"]], (ex["candidate"], out.returncode)
        assert r["jobId"] == job_id and r["tenant"] == "dev"
        assert r["feedback"]
        if ex["expect"] == "OK":
            assert r["performance"]["candidate"]["trials"] == 3
            assert r["performance"]["speedup"] > 0
            assert r["reward"]["value"] >= 0
        else:
            assert r["reward"]["value"] < 0
    # the text view is one summary line per job with the verdict in column 2
    text = cli(redis_url, "wait", ids[0], check=False).stdout.splitlines()[0].split()
    assert text[:2] == [ids[0], examples()[0]["expect"]]
    # duplicates are idempotent: same id → same stored result, no second run
    cli(redis_url, "submit", "--task", str(EXAMPLES / examples()[0]["task"]), "--candidate",
        str(EXAMPLES / examples()[1]["candidate"]), "--job-id", ids[0])
    again = json.loads(cli(redis_url, "wait", ids[0], "--json", check=False).stdout)
    assert again["status"] == examples()[0]["expect"]


def stored_result(client, tenant, job_id, timeout=60):
    r = client.wait(tenant, job_id, timeout)
    assert r is not None, f"no result for {job_id}"
    return r


def test_invalid_jobs_become_invalid_job_results_and_the_daemon_keeps_running(redis_url, daemon, tmp_path):
    client = Client(redis_url)
    # 1. not protobuf at all
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\xff\x00this is not a job\x00" * 10)
    cli(redis_url, "submit", "--raw-payload", str(garbage), "--job-id", "bad-garbage")
    # 2. valid protobuf missing required fields (no task)
    job = job_pb2.Job(job_id="bad-notask", tenant="dev")
    client.submit(job)
    # 3. oversized: kj_submit refuses it (kjudged published its max_job_bytes); put on the stream
    #    by hand, kjudged makes it INVALID_JOB
    r = redis.Redis(unix_socket_path=redis_url[len("unix://"):])
    big = job_pb2.Job(job_id="bad-big", tenant="dev")
    big.native.candidate.text = "x" * (MAX_JOB_BYTES + 1)
    with pytest.raises(QueueError, match="over the"):
        client.submit(big)
    r.xadd(keys.jobs(0, "dev"), {"id": "bad-big", "job": big.SerializeToString()})
    # 4. tenant in the job differs from the stream it came in on
    other = job_pb2.Job(job_id="bad-tenant", tenant="someone-else")
    r.fcall("kj_submit", 3, keys.jobs(0, "dev"), keys.job_marker(0, "dev", "bad-tenant"), keys.tenants(0),
            "bad-tenant", other.SerializeToString(), "dev")
    # 5. a hand-made stream entry with no job field at all
    r.xadd(keys.jobs(0, "dev"), {"id": "bad-nofield"})
    # 6. timestamps out of protobuf's range (its time arithmetic aborts the process on them),
    #    for a pipeline job and a trivial one
    for job_id, field in (("bad-submitted", "submitted_at"), ("bad-deadline", "deadline")):
        ts = job_pb2.Job(job_id=job_id, tenant="dev")
        ts.native.language = 1
        getattr(ts, field).seconds = 2**40
        client.submit(ts)
    trivial_ts = job_pb2.Job(job_id="bad-trivial-ts", tenant="dev")
    trivial_ts.trivial.argv.append("/bin/true")
    trivial_ts.submitted_at.seconds = -(2**40)
    client.submit(trivial_ts)

    expect = {"bad-garbage": "not a valid", "bad-notask": "no task", "bad-big": "over the",
              "bad-tenant": "does not match", "bad-nofield": "no 'job' field",
              "bad-submitted": "submitted_at", "bad-deadline": "deadline", "bad-trivial-ts": "submitted_at"}
    for job_id, words in expect.items():
        res = stored_result(client, "dev", job_id)
        assert res.status == verdict_pb2.INVALID_JOB, job_id
        assert words in res.message, (job_id, res.message)
        assert res.reward.policy_version == "none"  # never scored

    assert daemon.poll() is None, "kjudged died on bad input"
    # and it still judges good work afterwards
    ex = examples()[0]
    cli(redis_url, "submit", "--task", str(EXAMPLES / ex["task"]), "--candidate", str(EXAMPLES / ex["candidate"]),
        "--job-id", "good-after-bad", "--trials", "2")
    assert stored_result(client, "dev", "good-after-bad", 120).status == verdict_pb2.OK
    # nothing left pending: every entry was acknowledged after its result was stored
    assert r.xpending(keys.jobs(0, "dev"), "kjudged")["pending"] == 0


def test_local_eval_matches_the_daemon_verdicts():
    for ex in examples()[:5]:
        p = subprocess.run([str(BIN / "kjudge"), "eval", "--task", str(EXAMPLES / ex["task"]), "--candidate",
                            str(EXAMPLES / ex["candidate"]), "--run-wall-ms", "3000", "--trials", "2", "--json"],
                           capture_output=True, text=True, timeout=120)
        assert json.loads(p.stdout)["status"] == ex["expect"], (ex["candidate"], p.stderr)
        assert p.returncode == EXIT_CODES[ex["expect"]], (ex["candidate"], p.returncode)


def test_dev_mode_starts_its_own_redis_and_judges(tmp_path):
    runtime = Path(tempfile.mkdtemp(prefix="kjudge-dev."))  # short path: unix sockets max 107 bytes
    proc = subprocess.Popen([str(BIN / "kjudged"), "--dev", "--runtime-dir", str(runtime)],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "dev.log", "w"))
    try:
        url = f"unix://{runtime}/redis.sock"
        deadline = time.monotonic() + 30
        while cli(url, "status", check=False).returncode != 0:
            assert proc.poll() is None, (tmp_path / "dev.log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        ex = examples()[0]
        cli(url, "submit", "--task", str(EXAMPLES / ex["task"]), "--candidate", str(EXAMPLES / ex["candidate"]),
            "--job-id", "dev-1", "--trials", "2")
        r = json.loads(cli(url, "wait", "dev-1", "--json", "--timeout", "120", check=False).stdout)
        assert r["status"] == "OK", r
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not (runtime / "redis.sock").exists(), "dev redis-server not stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(runtime, ignore_errors=True)


def test_batch_and_status_say_what_a_user_needs(redis_url, daemon):
    ok = next(ex for ex in examples() if ex["expect"] == "OK" and ex["task"].startswith("cpp/"))
    cli(redis_url, "submit", "--task", str(EXAMPLES / ok["task"]), "--candidate", str(EXAMPLES / ok["candidate"]),
        "--job-id", "b-1", "--batch", "b1", "--trials", "2")
    cli(redis_url, "wait", "b-1", "--timeout", "120")
    assert "1/1 done" in cli(redis_url, "batch", "b1").stdout
    for args in (("batch", "nope"), ("batch", "b1", "--tenant", "other")):
        p = cli(redis_url, *args, check=False)
        assert p.returncode == 3 and "not found" in p.stderr, (args, p.stderr)
    # waiting jobs, not the stream's length (a done entry stays in the stream until it is trimmed)
    assert "dev: waiting 0, running 0 (completion stream: 2 events)" in cli(redis_url, "status").stdout  # result, batch
    tenant = next(t for t in json.loads(cli(redis_url, "status", "--json").stdout)["tenants"] if t["tenant"] == "dev")
    assert (tenant["waiting"], tenant["running"], tenant["stream_entries"]) == (0, 0, 1), tenant


def test_local_eval_shares_the_dev_daemons_cache():
    runtime = Path(tempfile.mkdtemp(prefix="kjudge-rt."))
    ok = next(ex for ex in examples() if ex["expect"] == "OK" and ex["task"].startswith("cpp/"))
    hits = []
    for _ in range(2):
        p = subprocess.run([str(BIN / "kjudge"), "eval", "--task", str(EXAMPLES / ok["task"]), "--candidate",
                            str(EXAMPLES / ok["candidate"]), "--trials", "2", "--json"],
                           capture_output=True, text=True, timeout=300, env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)})
        assert p.returncode == 0, p.stderr
        result = json.loads(p.stdout)
        assert result["status"] == "OK", result
        hits.append(bool(result["compile"].get("cacheHit")))
    assert hits == [False, True]  # the second eval reused the first one's build
    assert any((runtime / "kjudge" / "state" / "cache").iterdir())
    shutil.rmtree(runtime, ignore_errors=True)
