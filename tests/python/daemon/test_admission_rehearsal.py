"""kjudged's device-memory admission and the trusted worker's loans of its preparation budget
(kernelbench.candidate_borrow_share), end to end without a GPU: a real kjudged, a real redis-server
and a real cpu worker that admits as if its device had 16 GiB (kernelbench.cpu_rehearsal_device_gib).
The candidates' capacity is set to 1.12 GiB, so one candidate of 1 GiB and more fits at a time
unless the others borrow. The GPU run of the same path: bench/rlstep/run with B_GPUS="1%1"."""
import json
import socket
import time
from pathlib import Path

from kjudge.jobs import build_job
from kjudge.v1 import verdict_pb2

from test_e2e import KB_CACHE, ROOT
from eval_workspace import SUITE_PCH_VARIANTS
from test_fault import Daemon, RedisProc, client_for, daemons, workdir  # noqa: F401 (fixtures)

RELU = ROOT / "tests" / "kernelbench" / "tasks" / "activation_relu"
JOBS = 6


def judge_batch(workdir, daemons, tag, borrow_share):  # noqa: F811
    """The batch's results by job id, and the node that judged them."""
    r = RedisProc(workdir)
    c = client_for(r)
    node = Daemon(r.url, workdir, f"admit-{tag}", workers=4, extra=f"""
[kernelbench]
cache_dir = "{KB_CACHE}"
harness_dir = "{ROOT / 'python'}"
{SUITE_PCH_VARIANTS}cpu_rehearsal_device_gib = 16
candidate_device_share = 0.07
candidate_borrow_share = {borrow_share}
""")
    daemons.append(node)
    jobs = [build_job((RELU / "reference.py").read_text(), candidate=(RELU / "cpu_ok.py").read_text(), backend="cpu",
                      tenant="t", job_id=f"{tag}-{i}", trials=3) for i in range(JOBS)]
    c.submit_many(jobs)
    got = c.wait_many("t", [j.job_id for j in jobs], 600)
    assert all(res is not None for res in got.values()), node.log_tail()[-3000:]
    verdicts = {j: verdict_pb2.Verdict.Name(res.status) for j, res in got.items()}
    assert set(verdicts.values()) == {"OK"}, (verdicts, [res.message for res in got.values()])
    return got, node


def worker_ping(node):
    [sock] = Path(node.state, "workers").glob("*/control.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(sock))
        s.sendall(b'{"op": "ping"}\n')
        data = b""
        while not data.endswith(b"\n"):
            data += s.recv(65536)
    return json.loads(data)


def test_without_loans_the_candidates_wait_for_each_other(workdir, daemons):  # noqa: F811
    got, _ = judge_batch(workdir, daemons, "strict", 0)
    phases = [dict(res.phase_seconds) for res in got.values()]
    assert not any(p.get("device_memory_borrowed") for p in phases)
    assert sum(p.get("device_memory_wait", 0) > 0.05 for p in phases) >= 1, phases


def test_the_candidates_borrow_the_workers_idle_preparation_budget_and_repay_it(workdir, daemons):  # noqa: F811
    got, node = judge_batch(workdir, daemons, "borrow", 1)
    borrowed = [j for j, res in got.items() if res.phase_seconds.get("device_memory_borrowed")]
    assert borrowed, [dict(res.phase_seconds) for res in got.values()]
    deadline = time.monotonic() + 10  # each hold's loan goes back as its job ends
    while worker_ping(node)["lent_bytes"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_ping(node)["lent_bytes"] == 0
    assert not node.events("kernelbench.repay_failed")
