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

ROOT = Path(__file__).resolve().parents[2]
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
