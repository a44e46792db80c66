"""The shape of `message` (one line, the cause) and `feedback` (the repair text) per verdict kind,
through real `kjudge eval` runs on the cpu backend (issue 15 part 1). Every case shares one cache
dir; the C++ cases share one extension, so the file builds twice in all (with the suite's precompiled
header, eval_workspace.shared_pch)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from eval_workspace import shared_pch

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
TASK = ROOT / "tests" / "kernelbench" / "tasks" / "elementwise_add"
CASES = Path(__file__).resolve().parent / "feedback_cases"
NO_CODE = ROOT / "tests" / "kernelbench" / "completions" / "activation_sigmoid_no_code.md"
SIGMOID = ROOT / "tests" / "kernelbench" / "tasks" / "activation_sigmoid" / "reference.py"
# text that belongs to the judge, never to a candidate's feedback
JUDGE_TEXT = ("/opt/kjudge", "kjudge_harness", "kjudge_worker", "Traceback", "/job/", "ninja", "CUDA_HOME")


@pytest.fixture(scope="module")
def judge():
    base = Path(tempfile.mkdtemp(prefix="kjudge-feedback."))
    base.chmod(0o711)
    cache = base / "cache"
    cache.mkdir(mode=0o755)
    shared_pch(cache)
    config = base / "kjudge.toml"
    config.write_text(f'[daemon]\nstate_dir = "{base / "state"}"\n\n[kernelbench]\ncache_dir = "{cache}"\n'
                      f'harness_dir = "{ROOT / "python"}"\n')

    def run(*args):
        cmd = [str(BUILD / "bin/kjudge"), "eval", "-c", str(config), "--backend", "cpu", "--json", "--trials", "3",
               *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert p.stdout.strip(), p.stderr[-3000:]
        return json.loads(p.stdout)

    yield run
    shutil.rmtree(base, ignore_errors=True)


def candidate(judge, name):
    return judge("--kb-reference", str(TASK / "reference.py"), "--kb-candidate", str(CASES / name))


def line_of(name, text):
    """1-based line of the candidate file holding `text`: what the feedback must point at."""
    lines = (CASES / name).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def check_shape(r, verdict):
    assert r["status"] == verdict, r
    message, feedback = r["message"], r["feedback"]
    assert message and "\n" not in message and len(message) < 500, message
    assert feedback, r
    for text in JUDGE_TEXT:
        assert text not in message and text not in feedback, (text, message, feedback)
    return message, feedback


def test_syntax_error_points_at_the_line_with_a_caret(judge):
    message, feedback = check_shape(candidate(judge, "syntax_error.py"), "COMPILE_ERROR")
    line = line_of("syntax_error.py", "def forward(self, a, b)")
    assert f"line {line}" in message
    assert f"SyntaxError: expected ':' (candidate.py, line {line})" in feedback
    assert "def forward(self, a, b)" in feedback and feedback.rstrip().endswith("^")


def test_cpp_error_is_the_first_compiler_error_at_the_candidates_line(judge):
    r = candidate(judge, "cpp_error.py")
    message, feedback = check_shape(r, "COMPILE_ERROR")
    line = line_of("cpp_error.py", "undeclared_thing(po);")
    assert f"candidate.py:{line}" in message and "undeclared_thing" in message
    assert re.search(rf"^candidate\.py:{line}:\d+: error: .*undeclared_thing", feedback, re.M), feedback
    assert re.search(rf"^\s*{line} \|\s+undeclared_thing\(po\);", feedback, re.M), feedback  # g++'s excerpt
    assert "main.cpp" not in feedback
    assert "/job/" not in r["compile"]["log"] and "error:" in r["compile"]["log"]


def test_runtime_error_is_the_exception_and_the_candidates_frame(judge):
    message, feedback = check_shape(candidate(judge, "runtime_error.py"), "RUNTIME_ERROR")
    assert "TypeError: sub(): incompatible function arguments" in message
    line = line_of("runtime_error.py", "return _ext.sub(a, b, 1.0)")
    assert f"at candidate.py:{line} in forward: return _ext.sub(a, b, 1.0)" in feedback
    assert "tensor([" not in feedback and "tensor(...)" in feedback  # the inputs' printout is cut


def test_nan_outputs_are_counted_not_reported_as_error_zero(judge):
    r = candidate(judge, "nan_output.py")
    message, feedback = check_shape(r, "INCORRECT")
    elements = r["correctness"][0]["outputs"][0]["elements"]
    assert isinstance(elements, int)  # `--json` prints 64-bit counts as numbers, not protobuf's strings
    assert f"{elements} NaN" in message
    assert f"{elements} elements are NaN in your output" in feedback
    assert "max abs error" not in feedback
    assert re.search(r"^  \[0, 0\] got nan, expected (a positive number|a negative number|zero)$", feedback, re.M)


def test_wrong_values_name_positions_and_classes_never_expected_values(judge):
    r = candidate(judge, "wrong_values.py")
    message, feedback = check_shape(r, "INCORRECT")
    out = r["correctness"][0]["outputs"][0]
    worst = out["worst"]
    assert len(worst) == 3 and all(re.fullmatch(r"\[\d+, \d+\]", w["position"]) for w in worst), worst
    assert {w["expected"] for w in worst} <= {"a positive number", "a negative number", "zero"}
    for w in worst:
        assert f"{w['position']} got {w['got']}, expected {w['expected']}" in feedback
    # beside the worst elements' values, the max error would give an expected value away
    assert "max abs error" not in feedback and "NaN" not in feedback
    assert f"{out['mismatches']} of {out['elements']} elements wrong" in message


def test_completion_without_code_says_so(judge):
    r = judge("--kb-reference", str(SIGMOID), "--kb-completion", str(NO_CODE))
    message, feedback = check_shape(r, "COMPILE_ERROR")
    assert "no code block found in the completion" in message
    assert "```python" in feedback and "ModelNew" in feedback
