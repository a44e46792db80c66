"""kjudge's header shortcuts never change which programs compile (issue 53). Each program of
tests/build_corpus/programs (model-style load_inline sources across levels 1-3, and the hazard
classes light_headers.py's docstring argues about) is built by kjudge's path
(light_headers.build, with the node's precompiled headers) and compared with plain load_inline,
whose result each program.json records as measured (bench/results/build-corpus-20261205-cpu).

It runs in the GPU nodes' torch (2.11, a venv: KJUDGE_TORCH2_PYTHON, else the one scripts/setup
makes); a missing interpreter is a failure, never a skip. Compiling needs nvcc, not a GPU. CPU is
spent only where a build can differ (tests/build_corpus/driver.py): CI builds SUBSET, one of each
class (KJUDGE_BUILD_CORPUS=all: every program; the whole corpus is bench/build_bench/corpus.py's)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from kjudge_harness import light_headers  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "build_corpus"
DEFAULT_TORCH2 = Path.home() / ".cache" / "kjudge" / "torch-2.11.0" / "bin" / "python"
# one of each class: a minimal .cu; Tensor::index (issue 53's case, the light .cu); a shortcut
# that fails and is redone with the full headers (torch::nn); pybind11 in the .cu (main.cpp light
# only); a hazard the full headers refuse that a light header alone would take (<cxxabi.h>'s abi,
# the minimal try then the full one); and hazards no shortcut is tried for (the decision only)
SUBSET = ["l1_elementwise_add", "l1_index_batch_channel", "l2_softmax_nn_functional", "l1_tanh_pybind_in_cu",
          "hazard_global_named_abi", "hazard_using_namespace_torch_own_relu"]


def torch2_python():
    """The torch 2.11 interpreter: CI's scripts/setup makes it, so missing is a failure."""
    path = os.environ.get("KJUDGE_TORCH2_PYTHON") or str(DEFAULT_TORCH2)
    if not os.access(path, os.X_OK):
        pytest.fail(f"no torch 2.11 interpreter at {path}: scripts/setup makes it, or set KJUDGE_TORCH2_PYTHON")
    return path


def driver_env():
    """nvcc's libraries for the import of a built module, the nodes' arch, two compiles at a time."""
    env = dict(os.environ, MAX_JOBS="2", PYTHONPATH=str(ROOT / "python"))
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (f"{cuda}/lib64", os.environ.get("LD_LIBRARY_PATH")) if p)
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    return env


def run_json(*args, timeout):
    done = subprocess.run([torch2_python(), *map(str, args)], capture_output=True, text=True, env=driver_env(),
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def program_meta(name):
    return json.loads((CORPUS / "programs" / name / "program.json").read_text())


def all_programs():
    return sorted(p.parent.name for p in (CORPUS / "programs").glob("*/program.json"))


def test_every_program_records_what_plain_load_inline_made_of_it():
    """Measured by bench/build_bench/corpus.py --record-programs (bench/results/build-corpus-20261207-cpu:
    all 42). A new program needs its measured value (never a guess) before it joins the corpus."""
    names = all_programs()
    assert len(names) >= 30 and set(SUBSET) <= set(names)
    unmeasured = [name for name in names if program_meta(name).get("plain_load_inline") not in ("compiles", "fails")]
    assert not unmeasured, f"no measured plain_load_inline (run bench/build_bench/corpus.py): {unmeasured}"


def test_the_scan_gives_no_hazard_a_shortcut_it_could_misread():
    """program.json's scan_allows: the shortcuts the scan may choose for a hazard (the build then
    shows the result is plain's); every other program may take any."""
    rows = run_json(CORPUS / "driver.py", "--scan-only", timeout=300)
    scans = {r["program"]: r["scan"] for r in rows if "program" in r}
    assert sorted(scans) == all_programs()
    wrong = {name: scans[name] for name in scans
             if any(scans[name][part] not in allowed for part, allowed in program_meta(name).get("scan_allows", {}).items())}
    assert not wrong, wrong


def test_the_light_headers_declare_every_header_and_macro_the_full_one_does_or_the_scan_keeps_away():
    """The exactness argument's premise, on this torch: no system header only the full headers read
    (std's names, <cxxabi.h>'s abi), and every macro only they define is one the scan refuses
    (reserved names, _X and __x, are not a candidate's)."""
    [found] = run_json(CORPUS / "closures.py", timeout=900)
    full_only = light_headers.FULL_ONLY_NAMES
    for shortcut, diff in found.items():
        assert diff["headers"] == [], (shortcut, diff["headers"])
        unguarded = [m for m in diff["macros"] if not m.startswith("_") and not full_only.fullmatch(m)
                     and not (shortcut.startswith("cu") and m.startswith("PYBIND11"))]
        assert unguarded == [], (shortcut, unguarded)


def test_kjudge_builds_the_corpus_as_plain_load_inline():
    programs = all_programs() if os.environ.get("KJUDGE_BUILD_CORPUS") == "all" else SUBSET
    rows = run_json(CORPUS / "driver.py", *programs, timeout=3000)
    assert rows[0]["torch"].startswith("2.11."), rows[0]
    built = {r["program"]: r for r in rows if "program" in r}
    assert sorted(built) == sorted(programs)
    differ = {}
    for name, row in built.items():
        recorded = program_meta(name).get("plain_load_inline")
        if "unchanged_call" in row:  # no shortcut: kjudge's call is plain's, unchanged
            if not row["unchanged_call"]:
                differ[name] = "no shortcut, yet load_inline was not called once with plain's arguments"
            continue
        if row["kjudge"] != row["plain"] or recorded not in (None, row["plain"]):
            differ[name] = {k: row.get(k) for k in ("scan", "kjudge", "kjudge_mode", "plain", "plain_how",
                                                    "kjudge_error", "plain_error")} | {"recorded": recorded}
    assert not differ, json.dumps(differ, indent=1)
