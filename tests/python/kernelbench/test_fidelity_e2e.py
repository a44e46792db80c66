"""Fidelity end to end on the CPU backend (kjudge eval, real sandboxes and builds): honest kernels
that rely on their problem's input contract are OK, a wrong output that is trivially explained is
INCORRECT (never a replay), and a reference with nothing to judge against is INVALID_JOB (in
compat mode, a reference whose output KernelBench's own draws never move is judged as KernelBench
judges it, and said)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from eval_workspace import eval_workspace

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
TASKS = ROOT / "tests/kernelbench/tasks"
CASES = Path(__file__).resolve().parent / "fidelity_cases"


@pytest.fixture(scope="module")
def workspace():
    with eval_workspace("kjudge-fid.") as (_, _, cfg):
        yield cfg


def judge(cfg, reference, candidate, *extra):
    p = subprocess.run([str(BUILD / "bin/kjudge"), "eval", "-c", str(cfg), "--kb-reference", str(reference),
                        "--kb-candidate", str(candidate), "--backend", "cpu", "--json", "--trials", "12", *extra],
                       capture_output=True, text=True, timeout=900)
    assert p.stdout, p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.mark.parametrize("task", ["structured_triu_matmul", "structured_symmetric_matmul"])
def test_honest_kernels_that_rely_on_the_input_structure_are_ok(workspace, task):
    for _ in range(2):  # two runs: two sets of secret seeds, spike positions and perturbations
        r = judge(workspace, TASKS / task / "reference.py", TASKS / task / "cpu_ok.py")
        assert r["status"] == "OK", (r.get("message"), r.get("feedback"))
        assert [s["name"] for s in r["correctness"]] == ["declared", "declared-2", "signed", "large", "spike"]
        assert all(s.get("variant", "").startswith("fresh draw") for s in r["correctness"])


def test_probability_rows_are_kept_as_drawn_and_recorded(workspace):
    r = judge(workspace, CASES / "kl_div_probabilities_reference.py", CASES / "kl_div_probabilities.py")
    assert r["status"] == "OK", (r.get("message"), r.get("feedback"))
    for name in ("signed", "large", "spike"):
        variant = next(s for s in r["correctness"] if s["name"] == name)["variant"]
        assert "input 0 has rows on the probability simplex: kept as drawn" in variant, variant
        assert "input 1 has rows on the probability simplex: kept as drawn" in variant, variant


def test_zeros_near_a_near_zero_answer_are_incorrect_not_a_replay(workspace):
    r = judge(workspace, TASKS / "softmax_rows/reference.py", CASES / "softmax_zeros.py", "--size", "DIM=1048576",
              "--size", "BATCH=2")
    assert r["status"] == "INCORRECT", (r.get("message"), r.get("legality"))
    assert "output_of_earlier_set" not in r.get("legality", {}).get("flags", [])


@pytest.mark.parametrize("reference,words", [("zero_weights_reference.py", "does not depend"),
                                             ("nan_reference.py", "NaN/Inf")])
def test_a_meaningless_reference_is_the_jobs_fault(workspace, reference, words):
    r = judge(workspace, CASES / reference, CASES / "zeros_candidate.py")
    assert r["status"] == "INVALID_JOB", (r.get("message"), r.get("feedback"))
    assert words in r["message"]


def test_compat_judges_a_reference_constant_on_kernelbench_draws_as_kernelbench_does_and_says_so(workspace):
    zeros, ref = CASES / "zeros_candidate.py", CASES / "shifted_relu_reference.py"
    compat = judge(workspace, ref, zeros, "--compat")
    assert compat["status"] == "OK", (compat.get("message"), compat.get("feedback"))
    assert "reference_output_constant_on_kernelbench_inputs" in compat["legality"]["flags"]
    strict = judge(workspace, ref, zeros)  # strict's x8 variant reaches the shift: zeros are wrong there
    assert strict["status"] == "INCORRECT", (strict.get("message"), strict.get("feedback"))
    assert "'large'" in strict["message"]
