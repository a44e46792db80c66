"""A candidate's wall limit is its own time (docs/gpu-worker.md): the time it spends waiting for the
judge (sets made, outputs compared, the GPU lock) is given back to its limit as the run goes. Here
the judge is slow on purpose: the worker caches no set (every request makes its set again) and the
reference's get_inputs takes 0.5 s a draw, so an honest ReLU waits longer for the judge than its
whole run limit. It must be judged on its own code (OK), not TIMEOUT, and not INFRA_ERROR either
(the rule before: a limit that ran out while a quarter of it was judge wait was retried). A
candidate that does run out of its own time is told in which of its stages."""
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from eval_workspace import BUILD, ROOT, suite_config

TASK = ROOT / "tests" / "kernelbench" / "tasks" / "activation_relu"
RUN_WALL_MS = 8000


def with_sleep(name, dest, before, seconds):
    """The task's file `name` written to dest with time.sleep(seconds) put before the line `before`."""
    src = (TASK / name).read_text().replace("import torch\n", "import time\n\nimport torch\n", 1)
    indent = before[:len(before) - len(before.lstrip())]
    assert before in src
    Path(dest).write_text(src.replace(before, f"{indent}time.sleep({seconds})\n{before}", 1))
    return dest


def slow_drawing_reference(dest):
    return with_sleep("reference.py", dest, "    return [torch.rand(BATCH, DIM)]", 0.5)  # the judge's time


def judged(reference, candidate, run_wall_ms, kernelbench_config=""):
    """`kjudge eval` of the pair on the suite's cache (test_e2e's build of cpu_ok.py is replayed);
    `kernelbench_config`: lines added to its [kernelbench] table."""
    state = Path(tempfile.mkdtemp(prefix="kjudge-judge-wait."))
    state.chmod(0o711)
    try:
        cfg = suite_config(state)
        cfg.write_text(cfg.read_text() + kernelbench_config)
        p = subprocess.run([str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--backend", "cpu", "--json",
                            "--trials", "3", "--run-wall-ms", str(run_wall_ms), "--kb-reference", str(reference(state)),
                            "--kb-candidate", str(candidate(state))], capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    assert p.stdout.strip(), p.stderr[-3000:]
    return {**json.loads(p.stdout), "_log": p.stderr}  # _log: the daemon's log lines


def test_the_candidates_wait_for_the_judge_is_given_back_to_its_limit():
    r = judged(lambda d: slow_drawing_reference(d / "reference.py"), lambda d: TASK / "cpu_ok.py", RUN_WALL_MS,
               kernelbench_config="worker_cache_fraction = 0.000001\n")
    assert r["status"] == "OK", r.get("message")
    phases = r["phaseSeconds"]
    assert phases["judge_wait"] * 1000 > RUN_WALL_MS, phases  # the judge alone took longer than the limit
    assert r["resources"]["wallSeconds"] * 1000 > RUN_WALL_MS
    assert 0 < phases["candidate.wall_extension"] <= phases["judge_wait"] + 0.5, phases


def hanging_candidate(dest):
    return with_sleep("cpu_ok.py", dest, "        return _ext.relu_fwd(x)", 600)


def test_a_candidate_out_of_its_own_time_is_told_in_which_stage():
    r = judged(lambda d: TASK / "reference.py", lambda d: hanging_candidate(d / "hangs.py"), 5000)
    assert r["status"] == "TIMEOUT", r.get("message")
    assert "did not finish within 5000 ms (in its correctness calls, from " in r["message"], r["message"]


def test_a_reference_out_of_its_own_time_is_the_jobs_fault():
    """The reference's budget is its own time (its waits for other jobs are given back, none here):
    a reference that never returns makes the job INVALID_JOB, never the candidate's TIMEOUT."""
    r = judged(lambda d: with_sleep("reference.py", d / "reference.py", "    return [torch.rand(BATCH, DIM)]", 600),
               lambda d: TASK / "cpu_ok.py", RUN_WALL_MS, kernelbench_config="reference_wall_ms = 4000\n")
    assert r["status"] == "INVALID_JOB", r.get("message")
    assert "did not finish within its own budget of 4000 ms" in r["message"], r["message"]
    assert r["phaseSeconds"]["oracle.waited_for_others"] < 1.0, r["phaseSeconds"]
    # before the worker is killed, where its threads were goes to the log: here the reference's draw
    stacks = [json.loads(line) for line in r["_log"].splitlines() if '"worker.stacks"' in line]
    assert stacks and "in get_inputs" in stacks[0]["stacks"], r["_log"][-3000:]
