"""kjudged's cgroup check at start-up (issue 14, finding 5): a kjudged that cannot create a job
cgroup with memory and pids limits does not report ready; it exits at once, saying why and what
fixes it, instead of failing every job with INFRA_ERROR after 5 deliveries each.

This host is cgroup v1 (CI too): the test takes the memory hierarchy away from one kjudged by
remounting it read-only in a private mount namespace (unshare -m), a real kernel refusal. The v2
paths (a shared cgroup, a subtree of its own) run on a v2 node: bench/cgroup_v2_dev/run.

Needs root (mount namespaces) and a build (KJUDGE_BUILD_DIR, default build-test).
"""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
BIN = BUILD / "bin"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory/tasks").exists(),
                                reason="needs root and a cgroup v1 memory hierarchy")


def test_dev_mode_without_job_cgroups_refuses_at_start_with_the_fix(tmp_path):
    runtime = Path(tempfile.mkdtemp(prefix="kjdevcg."))  # short: unix socket paths
    script = (f"mount -o remount,bind,ro /sys/fs/cgroup/memory && "
              f"exec {BIN / 'kjudged'} --dev --runtime-dir {runtime}")
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail("kjudged started without job cgroups (it would fail every job):\n" + out[-2000:])
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    assert proc.returncode == 1, out
    assert "cannot create job cgroups" in out and "memory" in out, out
    assert "dev.redis_started" not in out, "refused before its redis-server started"


def test_dev_mode_with_job_cgroups_probes_and_starts(tmp_path):
    runtime = Path(tempfile.mkdtemp(prefix="kjdevcg."))
    proc = subprocess.Popen([str(BIN / "kjudged"), "--dev", "--runtime-dir", str(runtime)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (runtime / "redis.sock").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.05)
        time.sleep(0.5)
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert '"sandbox.cgroups_ready"' in out and '"mode":"v1"' in out.replace(" ", ""), out
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(runtime, ignore_errors=True)


def test_eval_removes_the_job_cgroups_a_killed_eval_left(tmp_path):
    """An eval killed by a signal ends without removing its idle job cgroups (issue 55: `kjudge
    eval` left empty ones behind); the next eval removes those of processes that no longer run,
    and its own before it exits."""
    own = [line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup") if line.split(":")[1] == "pids"][0]
    base = Path("/sys/fs/cgroup/pids") / own.lstrip("/")
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = base / f"kjsbx-{dead.pid}-1"
    stale.mkdir()
    try:
        examples = ROOT / "examples/native/cpp/vector_add"
        p = subprocess.Popen([str(BIN / "kjudge"), "eval", "--task", str(examples / "task.json"),
                              "--candidate", str(examples / "compile_error.cpp")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 10, out[-2000:]  # the compile error, judged
        assert not stale.exists()
        assert not list(base.glob(f"kjsbx-{p.pid}-*")), "the eval left its own job cgroups"
    finally:
        if stale.exists():
            stale.rmdir()
