"""nvcc with the host and device halves side by side (python/kjudge_harness/nvcc_steps.py), against
the real nvcc: the same object, the same messages and exit status, nvcc's own result whenever the
side-by-side run cannot stand for it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
from kjudge_harness import nvcc_steps  # noqa: E402
from kjudge_harness.build import nvcc_environment  # noqa: E402

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
pytestmark = pytest.mark.skipif(not os.path.exists(NVCC), reason="no nvcc on this machine")
ARCHS = ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90a,code=sm_90a"]
FLAGS = ARCHS + ["-std=c++17", "-O3", "--compiler-options", "-fPIC", "-DSCALE=3"]

KERNEL = r"""
#include "scale.h"
#include <map>
#include <regex>  // front-end work enough for the halves' overlap to show (a torch .cu has far more)
__global__ void scale(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= SCALE_OF(SCALE); }
void launch(float* a, int n) { scale<<<(n + 255) / 256, 256>>>(a, n); }
"""
ERRORS = {
    "host": "__global__ void k(float* a) { a[0] = 1 }\nvoid f() { int x = \"s\"; }\n",
    "device": "int hostonly() { return 3; }\n__global__ void k(float* a) { a[0] = hostonly(); }\n",
    "ptxas": "__global__ void k(float* a) { __shared__ float big[200000]; big[threadIdx.x] = a[0]; a[1] = big[5]; }\n",
}


@pytest.fixture
def src(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE_OF(x) ((float)(x))\n")
    (tmp_path / "k.cu").write_text(KERNEL)
    return tmp_path


def steps(cwd, args, monkeypatch, log=None):
    """nvcc_steps.main in this process (so a test can replace one of its parts), in `cwd`."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("KJUDGE_REAL_NVCC", NVCC)
    if log:
        monkeypatch.setenv("KJUDGE_NVCC_STEP_LOG", str(log))
    return nvcc_steps.main(["nvcc"] + args)


def nvcc_keep(cwd, args):
    """nvcc itself with its intermediates kept under the names the side-by-side run gives them."""
    keep = cwd / "keep"
    keep.mkdir()
    subprocess.run([NVCC] + args + ["--keep", "--keep-dir", str(keep)], cwd=cwd, check=True)


def test_the_object_is_nvccs_own_and_both_halves_ran_at_once(src, monkeypatch):
    nvcc_keep(src, FLAGS + ["-c", "k.cu", "-o", "nvcc.o"])
    log = src / "steps.jsonl"
    args = FLAGS + ["--generate-dependencies-with-compile", "--dependency-output", "steps.o.d", "-c", "k.cu", "-o", "steps.o"]
    assert steps(src, args, monkeypatch, log) == 0
    assert (src / "steps.o").read_bytes() == (src / "nvcc.o").read_bytes()
    deps = (src / "steps.o.d").read_text()
    assert deps.startswith("steps.o:") and "scale.h" in deps  # what ninja's deps = gcc reads
    rec = json.loads(log.read_text())
    tools = [s[0] for s in rec["steps"]]
    assert tools.count("cicc") == 2 and tools.count("cudafe++") == 1 and not rec["device_half_again"]
    # the device half started before the host half's cudafe++ ended: the halves overlapped
    cicc = next(s for s in rec["steps"] if s[0] == "cicc")
    cudafe = next(s for s in rec["steps"] if s[0] == "cudafe++")
    assert cicc[4] < cudafe[4] + cudafe[1]
    assert not [p for p in os.listdir(src) if p.startswith(".nvcc-steps.")]  # intermediates removed


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_a_failed_compile_says_what_nvcc_says_with_its_exit_status(src, kind, monkeypatch, capfd):
    (src / "bad.cu").write_text(ERRORS[kind])
    args = ARCHS[1:] + ["-std=c++17", "-c", "bad.cu", "-o", "bad.o"]
    want = subprocess.run([NVCC] + args, cwd=src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert want.returncode != 0
    got = steps(src, args, monkeypatch)
    assert got == want.returncode
    assert capfd.readouterr().err == want.stdout  # once each, in nvcc's order: never both halves' copies


def test_ids_that_differ_rerun_the_device_half_with_cudafes_id(src, monkeypatch):
    nvcc_keep(src, FLAGS + ["-c", "k.cu", "-o", "nvcc.o"])
    monkeypatch.setattr(nvcc_steps, "same_ids", lambda plan: False)
    log = src / "steps.jsonl"
    assert steps(src, FLAGS + ["-c", "k.cu", "-o", "steps.o"], monkeypatch, log) == 0
    assert json.loads(log.read_text())["device_half_again"] == "module_id"
    assert (src / "steps.o").read_bytes() == (src / "nvcc.o").read_bytes()


def test_near_the_builds_memory_limit_the_device_half_waits_for_the_host_half(src, monkeypatch):
    nvcc_keep(src, FLAGS + ["-c", "k.cu", "-o", "nvcc.o"])
    log = src / "steps.jsonl"
    # a limit whose margin leaves 1 MiB: the processes it sees (this test's among them) are over it
    # at the first look, so the guard stops the device half, which runs again after cudafe++
    monkeypatch.setenv("KJUDGE_BUILD_MEMORY_BYTES", str((512 + 1) << 20))
    assert steps(src, FLAGS + ["-c", "k.cu", "-o", "steps.o"], monkeypatch, log) == 0
    rec = json.loads(log.read_text())
    assert rec["device_half_again"] == "memory"
    cudafe = next(s for s in rec["steps"] if s[0] == "cudafe++")
    assert all(s[4] >= cudafe[4] + cudafe[1] for s in rec["steps"] if s[0] == "cicc")  # one front end at a time
    assert (src / "steps.o").read_bytes() == (src / "nvcc.o").read_bytes()


def test_with_room_under_the_limit_the_halves_still_overlap(src, monkeypatch):
    log = src / "steps.jsonl"
    monkeypatch.setenv("KJUDGE_BUILD_MEMORY_BYTES", str(1 << 50))
    assert steps(src, FLAGS + ["-c", "k.cu", "-o", "steps.o"], monkeypatch, log) == 0
    rec = json.loads(log.read_text())
    cicc = next(s for s in rec["steps"] if s[0] == "cicc")
    cudafe = next(s for s in rec["steps"] if s[0] == "cudafe++")
    assert not rec["device_half_again"] and cicc[4] < cudafe[4] + cudafe[1]


def test_a_step_killed_side_by_side_leaves_the_compile_to_nvcc(src, monkeypatch):
    real_run = nvcc_steps.Step.run

    def killed_cicc(step, env):
        if step.tool != "cicc":
            return real_run(step, env)
        step.rc = -9  # as the build's memory limit would kill it with two front ends at once
        return False

    monkeypatch.setattr(nvcc_steps.Step, "run", killed_cicc)
    assert steps(src, FLAGS + ["-c", "k.cu", "-o", "steps.o"], monkeypatch) == 0
    assert (src / "steps.o").stat().st_size > 0


def test_a_fault_of_its_own_leaves_the_compile_to_nvcc(src, monkeypatch):
    def broken(plan):
        raise KeyError("a bug in the scheduler")

    monkeypatch.setattr(nvcc_steps, "execute", broken)
    assert steps(src, FLAGS + ["-c", "k.cu", "-o", "steps.o"], monkeypatch) == 0
    assert (src / "steps.o").stat().st_size > 0


def test_what_is_not_a_one_object_compile_is_nvccs(src, monkeypatch, capfd):
    assert steps(src, ["--version"], monkeypatch) == 0
    assert "Cuda compilation tools" in capfd.readouterr().out
    assert steps(src, ARCHS[1:] + ["-E", "k.cu", "-o", "k.ii"], monkeypatch) == 0  # no -c: nvcc itself
    assert "scale" in (src / "k.ii").read_text()


def test_load_inline_is_pointed_at_it_unless_switched_off_or_the_candidate_chose_an_nvcc(monkeypatch):
    monkeypatch.delenv("PYTORCH_NVCC", raising=False)
    monkeypatch.delenv("KJUDGE_NVCC_STEPS", raising=False)
    env = nvcc_steps.environment("/usr/local/cuda", sys.executable)
    assert env["KJUDGE_REAL_NVCC"] == "/usr/local/cuda/bin/nvcc"
    assert env["PYTORCH_NVCC"].endswith("kjudge_harness/nvcc_steps.py")
    assert nvcc_steps.environment(None, sys.executable) == {}
    monkeypatch.setenv("PYTORCH_NVCC", "ccache nvcc")
    assert nvcc_steps.environment("/usr/local/cuda", sys.executable) == {}
    monkeypatch.delenv("PYTORCH_NVCC")
    monkeypatch.setenv("KJUDGE_NVCC_STEPS", "0")
    assert nvcc_steps.environment("/usr/local/cuda", sys.executable) == {}


def test_the_daemons_request_reaches_nvcc_steps():
    # what kernelbench/build.cpp puts in every build request: the limit, and nvcc_halves
    assert nvcc_environment({"memory_limit_bytes": 4 << 30, "nvcc_halves": True}) == \
        {"KJUDGE_BUILD_MEMORY_BYTES": str(4 << 30)}
    assert nvcc_environment({"memory_limit_bytes": 4 << 30, "nvcc_halves": False}) == \
        {"KJUDGE_NVCC_STEPS": "0", "KJUDGE_BUILD_MEMORY_BYTES": str(4 << 30)}
    assert nvcc_environment({}) == {}
