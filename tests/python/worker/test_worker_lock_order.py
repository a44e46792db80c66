"""The trusted worker's lock order (gpu_lock.py): the GPU lock before a problem's own lock. A job
making a set waited for the GPU lock while holding its problem's lock; another job of the same
problem held the GPU lock shared and wanted the problem's lock; a timed loop waited in the
turnstile between them, and the worker stalled until a reference's budget ran out (one H200,
2026-11-28). Real flock files, a real reference on the CPU."""
import fcntl
import os
import threading
import time

from kjudge_worker.gpu_lock import GpuLock
from kjudge_worker.problems import Problem

REFERENCE = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)
def get_inputs():
    return [torch.rand(4, 64)]
def get_init_inputs():
    return []
'''


def someone_holds(path):
    """Someone holds the flock file `path` (an exclusive try fails)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def blocked_on(path):
    """flock requests waiting for `path` (the kernel's list, /proc/locks: "N: -> FLOCK ... MAJ:MIN:INODE")."""
    ino = os.stat(path).st_ino
    with open("/proc/locks") as f:
        return sum(1 for line in f if "->" in line.split()[1:2] and line.split()[6].endswith(f":{ino}"))


def in_turnstile(path):
    """Someone holds the turnstile (a timed loop waiting for the lock)."""
    return someone_holds(path + ".turnstile")


def wait_until(cond, seconds=10):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_making_a_set_never_holds_the_problems_lock_while_it_waits_for_the_gpu_lock(tmp_path):
    import torch
    ref = tmp_path / "ref.py"
    ref.write_text(REFERENCE)
    lock_path = str(tmp_path / "gpu.lock")
    problem = Problem("k" * 16, str(ref), None, "fp32", "strict", 1, torch.device("cpu"))

    other_job = GpuLock(lock_path, shared=True)  # another job's GPU work on this problem, started first
    other_job.acquire()
    timed_loop = threading.Thread(target=lambda: GpuLock(lock_path).__enter__().release(), daemon=True)
    timed_loop.start()
    wait_until(lambda: in_turnstile(lock_path))  # the timed loop waits for the shared holder
    made = []
    maker = threading.Thread(daemon=True, target=lambda: made.append(
        problem.make_set(7, None, lambda: GpuLock(lock_path, shared=True))))
    maker.start()
    # the maker is queued behind the timed loop: its shared hold waits at the turnstile (the kernel
    # says so; a 0.5 s sleep here could end before it got there, and the test then proved nothing)
    wait_until(lambda: blocked_on(lock_path + ".turnstile") == 1 or made)
    assert not made

    # the shared holder now needs the problem's lock (the roofline's count, an audit's replay)
    got = problem.lock.acquire(timeout=5)
    if got:
        problem.lock.release()
    other_job.release()
    timed_loop.join(10)
    maker.join(10)
    assert got, "the maker held the problem's lock while waiting for the GPU lock: a deadlock"
    assert made and made[0][1].shape == (4, 64)


def test_a_lock_taken_against_the_order_fails_before_it_waits(tmp_path):
    import threading as th

    import pytest
    from kjudge_worker.lock_order import LockOrderError
    from kjudge_worker.heavy_sections import HeavySections
    from kjudge_worker.waits import CountedLock

    problem, sections = CountedLock("problem"), HeavySections()
    heavy = lambda: sections.section(1, lambda n: True)  # noqa: E731
    gpu = GpuLock(str(tmp_path / "gpu.lock"), shared=True)
    with problem:
        with pytest.raises(LockOrderError, match="gpu lock while holding its problem lock"):
            gpu.acquire()  # the old make_set's order
    with gpu:
        with pytest.raises(LockOrderError, match="gpu lock while holding its gpu lock"):
            GpuLock(str(tmp_path / "gpu.lock"), shared=True).acquire()  # a second hold queues in the turnstile
        with pytest.raises(LockOrderError, match="heavy_set lock while holding its gpu lock"):
            with heavy():
                pass
        with problem:  # in order
            pass
    with heavy(), heavy(), gpu, problem:  # a heavy section may be entered again; each in order
        pass
    with problem:  # released in full above: nothing is left held
        pass
    other = []
    with problem:  # the order is per thread: another thread holds nothing
        t = th.Thread(target=lambda: other.append(gpu.acquire() >= 0 and gpu.release() is None))
        t.start()
        t.join(10)
    assert other == [True]


SLOW_REFERENCE = '''
import os, time
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        deadline = time.monotonic() + 60
        while os.path.exists({gate!r}) and time.monotonic() < deadline:  # a reference the test holds up
            time.sleep(0.005)
        return x * 2
def get_inputs():
    return [torch.rand(4, 64)]
def get_init_inputs():
    return []
'''


def test_a_request_takes_the_gpu_lock_once_so_a_timed_loop_queued_meanwhile_waits_for_its_end(tmp_path):
    """A candidate's request (here: a set made again, fingerprinted, handed over) holds the GPU lock
    shared from its first step to its reply. When each step took it on its own, a timed loop that
    queued during the first step went in between, and the request waited a whole loop per step."""
    import torch
    from kjudge_harness.channel import Channel
    from kjudge_worker.job import Heavy, Job
    from kjudge_worker.heavy_sections import HeavySections
    from kjudge_worker.problems import Cache

    ref = tmp_path / "ref.py"
    gate = tmp_path / "gate"
    ref.write_text(SLOW_REFERENCE.format(gate=str(gate)))
    lock_path, cpu = str(tmp_path / "gpu.lock"), torch.device("cpu")
    problem = Problem("s" * 16, str(ref), None, "fp32", "strict", 1, cpu)
    job = Job({"job_id": "j", "sets": [{"name": "declared", "seed": 11}], "timing": {"skip": True},
               "tolerance": {"atol": 1e-4, "rtol": 1e-4}},
              problem, Cache(0), cpu, lock_path, Heavy(HeavySections(), 0, cpu))
    job.prepare()  # the cache keeps nothing: the request makes its set again
    job.listen(str(tmp_path / "sock"))
    chan = Channel(str(tmp_path / "sock"), cpu)
    replied, loop_started, loop_may_end = [], [], threading.Event()

    def timed_loop():  # holds the lock until the test has its reply, or gives up
        with GpuLock(lock_path):
            loop_started.append(time.monotonic())
            loop_may_end.wait(30)

    gate.touch()  # the request's reference runs until the timed loop has queued
    asking = threading.Thread(target=lambda: replied.append((chan.inputs(0), time.monotonic())), daemon=True)
    asking.start()
    wait_until(lambda: someone_holds(lock_path))  # the request is making its set
    loop = threading.Thread(target=timed_loop, daemon=True)
    loop.start()
    wait_until(lambda: in_turnstile(lock_path))  # the timed loop waits for the request's hold
    gate.unlink()
    # Were the lock taken per step, the loop would go in between and hold it until loop_may_end,
    # which is set only after the reply: the request would never reply.
    asking.join(20)
    loop_may_end.set()
    loop.join(10)
    chan.close()
    assert replied, "the timed loop went in between the request's steps"
    assert loop_started
    (values, _), = replied
    assert torch.equal(values[0] * 2, problem.model(values[0]))
    steps = job.wait_results(10)["worker_step_seconds"]
    assert {"make_set", "fingerprint", "export"} <= set(steps), steps
