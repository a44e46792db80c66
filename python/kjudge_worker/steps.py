"""Seconds the worker spends on one job, by step (making a set, fingerprinting it, exporting it to
the candidate, importing and comparing an output, checking the handed inputs, giving torch's
cached blocks back, waiting for the GPU lock shared): kjudged reports them as the job's
`worker.<step>` phases, so that a slow `judge_wait` says where it went (docs/gpu-worker.md)."""
import contextlib
import time

from . import lock_order
from .gpu_lock import GpuLock


class Steps:
    def __init__(self, into=None):
        self.into = {} if into is None else into

    def add(self, name, seconds):
        self.into[name] = self.into.get(name, 0.0) + seconds

    @contextlib.contextmanager
    def __call__(self, name):
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - t0)

    @contextlib.contextmanager
    def shared_gpu(self, lock_path):
        """The GPU lock held shared (the worker's GPU work never overlaps a timed loop), its wait
        counted as `gpu_lock_wait_shared`; a step of a request that holds it already (Job.serve_request)
        goes on under that hold."""
        if lock_order.holds("gpu"):
            yield
            return
        lock = GpuLock(lock_path, shared=True)
        self.add("gpu_lock_wait_shared", lock.acquire())
        try:
            yield
        finally:
            lock.release()
