"""The worker's pool of hand-over buffers (kjudge_protocol.transport.BufferPool, HandOvers), on the
CPU with stand-in buffers: what a job reuses, what goes to the worker's pool and when, what is
closed. The VMM buffers themselves and the driver calls saved are measured on a GPU
(bench/driver_calls)."""
import os
import sys
import threading
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
from kjudge_protocol import transport  # noqa: E402
from kjudge_protocol.transport import BufferPool, HandOvers  # noqa: E402


class Buf:
    made = 0

    def __init__(self, size):
        Buf.made += 1
        self.size, self.closed, self.n = size, False, Buf.made

    def close(self):
        assert not self.closed, "closed twice"
        self.closed = True


def test_a_job_reuses_the_buffers_its_earlier_sets_were_handed_in():
    job = HandOvers(BufferPool(1 << 30))
    assert job.take(4096) is None  # nothing idle yet: the caller makes one
    a = Buf(4096)
    job.give(a)  # the candidate is done with set 0
    assert job.take(8192) is None  # only the exact size serves
    assert job.take(4096) is a and not a.closed
    assert job.counts() == {"made": 0, "reused": 1}


def test_a_retired_jobs_buffers_serve_the_next_job_only_once_its_candidate_is_gone():
    pool = BufferPool(1 << 30)
    first, second = HandOvers(pool), HandOvers(pool)
    a, b = Buf(4096), Buf(4096)
    first.give(a)
    assert second.take(4096) is None  # another job's candidate may still map it
    first.retire(candidate_gone=True)
    assert pool.bytes == 4096 and not a.closed
    assert second.take(4096) is a and pool.bytes == 0
    # a job forgotten with its candidate possibly alive: its buffers are closed, never pooled
    third = HandOvers(pool)
    third.give(b)
    third.retire(candidate_gone=False)
    assert b.closed and pool.bytes == 0


def test_buffers_given_back_after_the_job_retired_are_closed():
    pool = BufferPool(1 << 30)
    job = HandOvers(pool)
    job.retire(candidate_gone=True)
    late = Buf(4096)  # still handed when the job ended (a channel left open), freed afterwards
    job.give(late)
    assert late.closed and pool.bytes == 0
    assert job.take(4096) is None


def test_the_pool_keeps_at_most_its_capacity_and_drops_the_oldest_first():
    pool = BufferPool(10000)
    a, b, c = Buf(4096), Buf(4096), Buf(4096)
    for x in (a, b):
        pool.give(x)
    assert pool.bytes == 8192
    pool.give(c)  # no room for three: the oldest goes
    assert a.closed and not b.closed and not c.closed and pool.bytes == 8192
    big = Buf(20000)
    pool.give(big)  # over the whole capacity: closed, the pool untouched
    assert big.closed and pool.bytes == 8192
    pool.drain()  # the device is short (transport.release_cached): every idle buffer goes
    assert b.closed and c.closed and pool.bytes == 0 and pool.take(4096) is None


def test_no_pool_means_every_buffer_is_closed_when_given_back():
    job = HandOvers(None)  # the pool off (the default), or a CPU worker
    assert job.take(4096) is None
    a = Buf(4096)
    job.give(a)
    assert a.closed
    job.retire(candidate_gone=True)


def test_the_pool_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv("KJUDGE_VMM_POOL", raising=False)
    assert not transport.pool_enabled() and transport.hand_over_pool(torch.device("cuda")) is None
    monkeypatch.setenv("KJUDGE_VMM_POOL", "0")
    assert transport.hand_over_pool(torch.device("cuda")) is None
    monkeypatch.setenv("KJUDGE_VMM_POOL", "1")
    assert transport.hand_over_pool(torch.device("cpu")) is None  # host buffers are memfds, never pooled


def test_concurrent_jobs_never_get_the_same_buffer():
    pool = BufferPool(1 << 40)
    for _ in range(64):
        pool.give(Buf(4096))
    got, lock = [], threading.Lock()

    def worker():
        job = HandOvers(pool)
        mine = [job.take(4096) for _ in range(8)]
        with lock:
            got.extend(m for m in mine if m is not None)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 64 and len({id(b) for b in got}) == 64


def test_a_pooled_buffer_exports_once_and_hands_over_duplicates(monkeypatch):
    """VmmBuffer.export_fd: the driver's export once per buffer, a dup of it per hand-over (the
    caller closes each), the exported descriptor closed with the buffer."""
    calls = []

    class Lib:
        def cuMemExportToShareableHandle(self, fd_ref, handle, kind, flags):
            r, w = os.pipe()
            os.close(w)
            fd_ref._obj.value = r
            calls.append(r)
            return 0

        def cuMemUnmap(self, *a):
            return 0

        cuMemAddressFree = cuMemRelease = cuMemUnmap

    class Driver:
        lib = Lib()

        def check(self, result, what):
            assert result == 0, what

    monkeypatch.setattr(transport, "driver", lambda: Driver())
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda d=None: None)
    buf = transport.VmmBuffer(object(), 0, 2 << 20, 0)
    fds = [buf.export_fd() for _ in range(3)]
    assert len(calls) == 1 and len(set(fds)) == 3 and calls[0] not in fds
    for fd in fds:
        os.close(fd)
    master = buf.fd
    buf.close()
    assert buf.fd is None and buf.handle is None
    with pytest.raises(OSError):
        os.fstat(master)


def test_a_job_retires_its_buffers_to_the_pool_only_once_its_channel_has_ended():
    """Job.retire: `results` (the candidate's sandbox gone) pools the job's idle buffers if the
    channel has ended; a channel still open (its serve thread may still hand buffers) closes them."""
    from kjudge_worker.job import Job

    for channel_ended, pooled in ((True, True), (False, False)):
        pool = BufferPool(1 << 30)
        job = Job.__new__(Job)
        job.hand_overs = HandOvers(pool)
        job.done = threading.Event()
        if channel_ended:
            job.done.set()
        a = Buf(4096)
        job.hand_overs.give(a)
        job.retire(candidate_gone=True)
        assert (pool.bytes == 4096 and not a.closed) if pooled else (pool.bytes == 0 and a.closed)


def test_results_retire_the_job_as_gone_and_forget_as_possibly_alive(tmp_path):
    """The worker's control requests: `results` comes once the candidate's sandbox has ended
    (kernelbench/pipeline.cpp: run_harness, then candidate_end), so its buffers may serve others;
    `forget` may come with the candidate unaccounted for, so they are closed."""
    from kjudge_worker.server import Worker

    worker = Worker(str(tmp_path), "cpu", "", 0.3, 30)
    retired = []

    class FakeJob:
        def __init__(self, name):
            self.name = name

        def wait_results(self, timeout):
            return {"sets": {}}

        def retire(self, candidate_gone):
            retired.append((self.name, candidate_gone))

    worker.jobs = {"a": FakeJob("a"), "b": FakeJob("b")}
    assert worker.handle({"op": "results", "job_id": "a"})["ok"]
    assert worker.handle({"op": "forget", "job_id": "b"}) == {"ok": True}
    assert retired == [("a", True), ("b", False)]
