"""libkjudge_kernel_trace.so against a fake libcupti (tests/kernel_trace/fake_cupti.c): CUPTI's
callbacks need a GPU, which this machine lacks, so the fake calls the recorder's callback as the
driver and runtime would. Checks the naming, demangling, runtime/driver de-duplication, graph
launches counted as unnamed, sessions, and errors. Needs a build (KJUDGE_BUILD_DIR) and a C compiler."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
LIB = BUILD / "bin" / "libkjudge_kernel_trace.so"
HERE = ROOT / "tests" / "kernel_trace"


def test_recorder_against_a_fake_cupti(tmp_path):
    if not LIB.exists():
        pytest.skip(f"{LIB} not built")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    fake = tmp_path / "fake_cupti.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(fake), str(HERE / "fake_cupti.c")], check=True)
    # a fresh process: a libcupti loaded by an earlier test would be found first (RTLD_NOLOAD)
    r = subprocess.run([sys.executable, str(HERE / "fake_cupti_scenarios.py"), str(LIB), str(fake)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
