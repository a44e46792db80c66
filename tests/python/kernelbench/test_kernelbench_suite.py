"""The KernelBench-format problem set (tests/kernelbench) judged end to end on the CPU backend:
real sandboxes, real load_inline builds, the daemon's comparator and verdicts. Every honest
candidate must be OK and every cheat must get its expected verdict and cheat class; the
tasks x verdicts table goes to <build>/kernelbench-suite.txt (scripts/test prints it)."""
import os
import subprocess
import shutil
import sys
import tempfile
from pathlib import Path

from eval_workspace import SUITE_PCH_VARIANTS

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))


# CI judges every cheat (each cheat file once) and one honest task per category; KJUDGE_KB_FULL=1 judges every task.
FULL = os.environ.get("KJUDGE_KB_FULL") == "1"


def test_kernelbench_cpu_suite(tmp_path):
    cache = BUILD / "kb-cache"  # builds and precompiled headers survive between runs of scripts/test
    cache.mkdir(mode=0o755, exist_ok=True)
    config = tmp_path / "kb.toml"
    config.write_text(f'[kernelbench]\ncache_dir = "{cache}"\nharness_dir = "{ROOT / "python"}"\n{SUITE_PCH_VARIANTS}')
    # job dirs are bound into sandboxes as an unprivileged uid: state dirs must be searchable
    state = Path(tempfile.mkdtemp(prefix="kjudge-kb-state."))
    state.chmod(0o711)
    out = BUILD / "kernelbench-suite.txt"
    proc = subprocess.run([sys.executable, str(ROOT / "tests/kernelbench/run_suite.py"), "--kjudge",
                           str(BUILD / "bin/kjudge"), "--config", str(config), "--backend", "cpu", "--trials", "10",
                           "--jobs", "2", "--out", str(out), "--state-base", str(state)] + ([] if FULL else ["--subset"]),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=2400)
    shutil.rmtree(state, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "verdicts as expected" in proc.stdout
