"""Infrastructure faults are INFRA_ERROR (retried, then dead-lettered), never the candidate's verdict
(issue 14, finding 2): a real redis-server, a real kjudged whose state dir is a small tmpfs that the
test fills up, a real C++ job.

Needs root (mount) and a build (KJUDGE_BUILD_DIR, default build-test).
"""

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from kjudge import keys
from kjudge.client import Client
from kjudge.v1 import verdict_pb2

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
BIN = BUILD / "bin"
EXAMPLE = ROOT / "examples" / "native" / "cpp" / "vector_add"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: needs root")


@pytest.fixture
def small_state():
    """A 256 MiB tmpfs as the daemon's state dir (a vector_add job needs about 120 MiB)."""
    d = tempfile.mkdtemp(prefix="kjinfra-state.", dir="/tmp")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,mode=0711", "kjinfra", d], check=True)
    try:
        yield Path(d)
    finally:
        subprocess.run(["umount", "-l", d], check=False)
        os.rmdir(d)


def start_daemon(redis_url, state, tmp_path, limits):
    cfg = tmp_path / "kjudged.toml"
    cfg.write_text(f"""
[daemon]
node = "infra-node"
state_dir = "{state}"
workers = 1
[queue]
max_deliveries = 2
retry_base_ms = 50
retry_max_ms = 100
[limits]
{limits}
""")
    log = open(tmp_path / "kjudged.log", "w")
    proc = subprocess.Popen([str(BIN / "kjudged"), "--config", str(cfg), "--redis", redis_url], stdout=log,
                            stderr=subprocess.STDOUT)
    log.close()
    rc = redis.Redis(unix_socket_path=redis_url[len("unix://"):])
    deadline = time.monotonic() + 30
    while not rc.get(keys.node(0, "infra-node")):
        assert proc.poll() is None, (tmp_path / "kjudged.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "kjudged did not start"
        time.sleep(0.05)
    return proc


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0


def submit(redis_url, job_id):
    subprocess.run([str(BIN / "kjudge"), "--redis", redis_url, "submit", "--task", str(EXAMPLE / "task.json"),
                    "--candidate", str(EXAMPLE / "ok.cpp"), "--job-id", job_id, "--trials", "2"],
                   check=True, capture_output=True, timeout=60)


def result(redis_url, job_id, timeout=120):
    r = Client(redis_url).wait("dev", job_id, timeout)
    assert r is not None, f"no result for {job_id}"
    return r


def fill(state, leave_bytes):
    """Fills the tmpfs but for about `leave_bytes` (enough for the job's source, not its artifact)."""
    pad = state / "pad"
    pad.write_bytes(b"\0" * leave_bytes)
    with open(state / "filler", "wb", buffering=0) as f:
        for chunk in (1 << 20, 1024):  # MiBs, then the last pages a KiB at a time
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass
    pad.unlink()


def job_events(tmp_path, event, job_id):
    out = []
    for line in (tmp_path / "kjudged.log").read_text().splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            if e.get("event") == event and e.get("job_id") == job_id:
                out.append(e)
    return out


def test_a_full_state_dir_is_infra_error_retried_not_compile_error(redis_url, small_state, tmp_path):
    # the free-space check before the job is off: what is tested is the verdict after a step failed
    proc = start_daemon(redis_url, small_state, tmp_path, "min_free_bytes = 0\nmin_free_inodes = 0")
    try:
        fill(small_state, 8192)  # the source fits, the linker's kernel.so does not
        submit(redis_url, "full-1")
        r = result(redis_url, "full-1")
        assert r.status == verdict_pb2.INFRA_ERROR, (verdict_pb2.Verdict.Name(r.status), r.message)
        assert r.attempt == 2, "retried before it was dead-lettered"
        assert "full" in r.message or "space" in r.message, r.message
        assert job_events(tmp_path, "job.retry", "full-1"), "the first delivery was retried"
        deadline = time.monotonic() + 10  # logged just after the result is stored
        while not job_events(tmp_path, "job.dead_letter", "full-1"):
            assert time.monotonic() < deadline, "dead-lettered after its last delivery"
            time.sleep(0.05)
        # the same job on the same node once there is room again: its real verdict
        (small_state / "filler").unlink()
        submit(redis_url, "full-2")
        r = result(redis_url, "full-2")
        # built and judged (OK, or SUSPICIOUS when a loaded host stretched the timed loop)
        assert r.compile.ok and r.status in (verdict_pb2.OK, verdict_pb2.SUSPICIOUS), \
            (verdict_pb2.Verdict.Name(r.status), r.message)
    finally:
        stop(proc)


def test_too_little_free_space_before_a_job_is_infra_error(redis_url, small_state, tmp_path):
    # 256 MiB of tmpfs is less than the 512 MiB asked for: refused before anything runs
    proc = start_daemon(redis_url, small_state, tmp_path, "min_free_bytes = 536870912")
    try:
        submit(redis_url, "low-1")
        r = result(redis_url, "low-1")
        assert r.status == verdict_pb2.INFRA_ERROR, (verdict_pb2.Verdict.Name(r.status), r.message)
        assert "min_free_bytes" in r.message, r.message
        assert r.attempt == 2
        assert not list((small_state / "jobs").iterdir()), "no job dir was made"
    finally:
        stop(proc)
