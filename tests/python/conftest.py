"""Shared fixtures: a real redis-server on a unix socket per test (no mocks)."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis

# The tests are grouped by concern, one folder each (tests/README.md). Every module is imported by
# its plain name from any folder, whatever order the files are collected in: the helpers here
# (eval_workspace, python_envs, hostile_clients) and the test modules whose fixtures others use
# (test_fault, test_e2e, test_gateway, ...). File names stay unique across the folders.
HERE = Path(__file__).resolve().parent
for _folder in [HERE, *sorted(d for d in HERE.iterdir() if d.is_dir() and any(d.glob("test_*.py")))]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

REDIS_SERVER = os.environ.get("KJUDGE_REDIS_SERVER", "/usr/bin/redis-server")

# The longest files (minutes each on 2 cores) run first, so that under pytest-xdist (scripts/test:
# -n 2) no worker starts one of them last while the other sits idle. Only the order changes. While
# the suite makes its precompiled header (one compile at a time), the other worker runs the files
# that keep a core busy without that header; then the files that mostly wait (on daemons, timeouts,
# restarts: a fifth of a core each), beside the suite's builds, which take what they leave; then
# the ones that build with the suite's header (eval_workspace.shared_pch), on both workers once the
# suite ends, and the short files last (fresh build dir, 2 cores: pytest 665 s instead of 702 s,
# one run each; the stage keeps both cores busy, so the order mostly trims the end).
SLOW_FIRST = ["test_kernelbench_suite.py",
              # busy, no shared header
              "test_kernelbench_pch.py", "test_eval_device_turns.py", "test_worker_memory.py", "test_minimal_cu_header.py",
              "test_build_corpus.py",
              # mostly waiting
              "test_fault.py", "test_gateway.py", "test_ops.py", "test_client.py", "test_judge_queue.py",
              "test_dev_cgroups.py", "test_cluster.py",
              # builds with the shared header
              "test_build_nodes.py", "test_capacity.py", "test_e2e.py", "test_harness_zygote.py", "test_fidelity_e2e.py",
              "test_feedback.py", "test_build_single_flight.py", "test_judge_e2e.py", "test_nvcc_steps.py",
              "test_light_headers_retry.py", "test_light_main_header.py", "test_infra_faults.py", "test_package_install.py", "test_bench_e2e.py"]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
    # a worker starts a test only once it holds the next one: the suite's worker holds the test
    # after the suite until the suite ends, so that one is a short test (the first not listed)
    quick = next((i for i, item in enumerate(items) if item.path.name not in rank), None)
    if quick is not None and items[0].path.name == SLOW_FIRST[0]:
        items.insert(1, items.pop(quick))


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScheduling

    class OneAhead(LoadScheduling):
        """xdist's load scheduling hands each worker a batch of consecutive tests at the start (a
        quarter of its share), so one worker got most of the slow files above. Here a worker holds
        the test it runs and the next one only, and takes the next pending test as it finishes one."""

        def schedule(self):
            if self.collection is None:
                if not self._check_nodes_have_same_collection():
                    self.log("**Different tests collected, aborting run**")
                    return
                self.collection = list(self.node2collection.values())[0]
                self.pending[:] = range(len(self.collection))
            for node in self.nodes:
                self.check_schedule(node)

        def check_schedule(self, node, duration=0):
            if node.shutting_down:
                return
            if not self.pending:
                node.shutdown()  # it runs what it holds, then stops
            elif len(self.node2pending[node]) < 2:
                self._send_tests(node, 2 - len(self.node2pending[node]))

    return OneAhead(config, log)


@pytest.fixture
def redis_url(tmp_path):
    # unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer
    d = str(tmp_path) if len(str(tmp_path)) < 80 else tempfile.mkdtemp(prefix="kjredis.")
    sock = os.path.join(d, "redis.sock")
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--dir", d,
         "--save", "", "--appendonly", "no", "--logfile", os.path.join(d, "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis.Redis(unix_socket_path=sock).ping():
                    break
            except redis.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start: " + open(os.path.join(d, "redis.log")).read())
            time.sleep(0.01)
        yield "unix://" + sock
    finally:
        proc.kill()
        proc.wait()
        if d != str(tmp_path):
            shutil.rmtree(d, ignore_errors=True)


