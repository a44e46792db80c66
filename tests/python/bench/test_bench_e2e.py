"""kjudge-bench end to end: a tiny KernelBench-style dataset and runs/ folder (cpu candidates from
tests/kernelbench), judged in both modes by a real kjudged; the numbers, KernelBench's files, the
report, and a resumed run that submits only what is missing."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from test_e2e import daemon  # noqa: F401  (the real kjudged fixture)

ROOT = Path(__file__).resolve().parents[3]
KB = ROOT / "tests" / "kernelbench"


@pytest.fixture
def layout(tmp_path):
    data, runs = tmp_path / "kernelbench", tmp_path / "runs" / "tiny"
    (data / "level1").mkdir(parents=True)
    runs.mkdir(parents=True)
    shutil.copy(KB / "tasks/activation_relu/reference.py", data / "level1" / "1_ReLU.py")
    shutil.copy(KB / "tasks/elementwise_add/reference.py", data / "level1" / "2_ElementwiseAdd.py")
    (data / "level1" / "README.txt").write_text("not a problem")
    shutil.copy(KB / "tasks/activation_relu/cpu_ok.py", runs / "level_1_problem_1_sample_0_kernel.py")
    shutil.copy(KB / "tasks/activation_relu/cpu_cheat_identity.py", runs / "level_1_problem_1_sample_1_kernel.py")
    shutil.copy(KB / "tasks/elementwise_add/cpu_ok.py", runs / "level_1_problem_2_sample_0_kernel.py")
    shutil.copy(KB / "completions/activation_sigmoid_no_code.md", runs / "level_1_problem_2_sample_1.md")
    return data, runs


def bench(redis_url, data, runs, out, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "kjudge.bench", "--dataset", str(data), "--generations", str(runs),
                           "--out", str(out), "--redis", redis_url, "--backend", "cpu", "--mode", "both",
                           "--trials", "5", "--p", "0", "1", "1.1", "--k", "1", "2", *extra],
                          capture_output=True, text=True, env=env, timeout=1500)


def result_keys(redis_url):
    r = redis.Redis(unix_socket_path=redis_url[len("unix://"):])
    return len(list(r.scan_iter("kj:{p0}:result:dev:*")))


def test_bench_both_modes_files_and_resume(redis_url, daemon, layout, tmp_path):  # noqa: F811
    data, runs = layout
    out = tmp_path / "out"
    p = bench(redis_url, data, runs, out)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "judging: 8/8" in p.stderr  # the plain progress line (tqdm is not installed here)
    summary = json.loads((out / "summary.json").read_text())
    strict, compat = summary["strict"]["overall"], summary["compat"]["overall"]
    for a in (strict, compat):
        assert a["samples"] == 4 and a["problems"] == 2 and a["compile_rate"] == 0.75
        assert a["verdicts"]["OK"] == 2 and a["verdicts"]["COMPILE_ERROR"] == 1
        assert a["geomean_speedup"] > 0
    # relu's identity "kernel" is INCORRECT in strict mode (signed inputs); KernelBench's rules
    # (torch.rand inputs) pass it, so compat counts it correct and kjudge calls it a DECOY
    assert strict["verdicts"]["INCORRECT"] == 1 and compat["verdicts"]["DECOY"] == 1
    assert strict["correct_rate"] == 0.5 and strict["fast_p"]["0"] == 0.5
    assert strict["pass_at_k"] == {"1": 0.5, "2": 1.0} and strict["avg_at_k"]["2"] == 0.5
    assert compat["correct_rate"] == 0.75 and compat["pass_at_k"] == {"1": 0.75, "2": 1.0}
    assert [(p["problem"], p["correct"], p["samples"]) for p in summary["strict"]["problems"]] == [(1, 1, 2), (2, 1, 2)]
    # KernelBench's files: compat is eval_results.json, strict its own file; ids as KernelBench's
    kb = json.loads((out / "eval_results.json").read_text())
    assert list(kb) == ["1", "2"] and [s["sample_id"] for s in kb["1"]] == [0, 1]
    assert kb["1"][0]["correctness"] and kb["1"][0]["runtime"] > 0 and kb["1"][1]["correctness"]
    assert kb["1"][1]["metadata"]["kjudge_status"] == "DECOY"
    assert not json.loads((out / "eval_results_strict.json").read_text())["1"][1]["correctness"]
    assert kb["2"][1]["compiled"] is False and "compilation_error" in kb["2"][1]["metadata"]
    assert set(kb["1"][0]) == {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}
    assert json.loads((out / "eval_results_strict.json").read_text()).keys() == kb.keys()
    base = json.loads((out / "baseline_time.json").read_text())
    assert set(base["level1"]) == {"1_ReLU.py", "2_ElementwiseAdd.py"}
    assert base["level1"]["1_ReLU.py"]["mean"] > 0 and base["level1"]["1_ReLU.py"]["device"] == "cpu"
    html = (out / "report.html").read_text()
    assert html.count("<svg") == 2 and "1_ReLU" in html
    assert not any(t in html for t in ("<script", "src=", "href=", "@import"))  # self-contained
    assert "compile rate" in p.stdout and "pass@2" in p.stdout

    # resume: nothing left -> nothing submitted; one line lost -> exactly one job submitted
    before = result_keys(redis_url)
    again = bench(redis_url, data, runs, out)
    assert again.returncode == 0 and "judging" not in again.stderr and result_keys(redis_url) == before
    lines = (out / "state.jsonl").read_text().splitlines()
    assert len(lines) == 8
    (out / "state.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    third = bench(redis_url, data, runs, out)
    assert third.returncode == 0, third.stderr
    assert "judging: 1/1" in third.stderr and result_keys(redis_url) == before + 1
    assert json.loads((out / "summary.json").read_text())["compat"]["overall"]["samples"] == 4


def test_bench_reports_what_the_state_has_without_a_queue(layout, tmp_path):
    data, runs = layout
    p = bench("unix://" + str(tmp_path / "no.sock"), data, runs, tmp_path / "out")
    assert p.returncode == 3 and "the queue failed" in p.stderr
