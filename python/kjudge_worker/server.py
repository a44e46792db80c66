"""The worker's control socket: kjudged connects, sends one JSON line, reads one JSON line back.
Requests: ping (the caches, the jobs, the start's warm-up: warm_up.py), prepare (a job's sets, its
baseline when asked, its candidate channel), results (what the candidate's channel saw; the job is
then forgotten), forget, judge_seconds (a candidate's waits for the judge so far), prepare_waited
(a prepare's waits for other jobs so far: waits.py), stacks (every thread's stack, logged before a
worker that overran is killed), lend and repay (the preparations' idle part of the device for a
candidate beyond the candidates' capacity: candidate_loans.py). Each connection is served by its
own thread, so the jobs of several slots overlap (only timed loops take the GPU lock)."""
import contextlib
import json
import os
import socket
import sys
import threading
import time
import traceback

import torch

from kjudge_protocol import inputs, node_identity, numerics, transport, wire

from . import candidate_share, lock_order, prepare_budget, problems, roofline, waits
from .candidate_loans import CandidateLoans
from .heavy_sections import HeavySections
from .single_flight import SingleFlight
from .sm_clock import SmClock
from .job import Heavy, Job, JobError, over_kept
from .warm_up import GPU_MODULES, WarmUp


STACKS_MAX_CHARS = 60000


def thread_stacks():
    """Every thread's stack, innermost frame last, for the log of a worker killed for overrunning:
    a stall says where it waited (a lock, the device, a reference's own loop)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = [f"thread {names.get(ident, ident)}:\n" + "".join(traceback.format_stack(frame)[-12:])
             for ident, frame in sys._current_frames().items()]
    return "\n".join(parts)[-STACKS_MAX_CHARS:]


class DeviceUnavailable(RuntimeError):
    """The worker's GPU could not be set up (no context): the node's fault, not the reference's."""


class Worker:
    def __init__(self, root, device_kind, lock_path, cache_fraction, idle_seconds, rehearsal_bytes=0):
        """rehearsal_bytes (cpu only): admit candidates by device memory as if the device had that
        many bytes (kjudged's admission and the loans, run without a GPU); 0: admit none."""
        self.root = root
        inputs.guard_generator_restores()  # a reference's compile beside another job's seeded draws
        self.device = torch.device("cuda") if device_kind == "cuda" else torch.device("cpu")
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("the worker needs a GPU and none is visible in its sandbox")
            numerics.apply(compat=False)  # each reference runs under its own mode's (numerics.scoped)
            total = torch.cuda.get_device_properties(self.device).total_memory
        else:
            total = rehearsal_bytes or 8 << 30
        # the jobs' preparations together within a share of the device, and the large sets in use
        # (a job of large or unknown inputs prepares among them too): one on the fixed reserve,
        # more on the preparations' unused bytes
        self.preparing = prepare_budget.PrepareBudget(int(prepare_budget.PREPARE_SHARE * total))
        self.heavy = HeavySections(lender=self.preparing)
        self.cache = problems.Cache(int(total * cache_fraction))
        # the device's memory as the jobs see it (0 on the cpu backend unless it rehearses: nothing
        # is heavy, nothing to admit candidates by), and what the running candidates may hold of it together
        self.gpu_bytes = total if self.device.type == "cuda" else rehearsal_bytes
        self.candidate_capacity = candidate_share.candidate_capacity(self.gpu_bytes, self.cache.budget,
                                                                     self.preparing.capacity)
        kept = candidate_share.worker_kept_bytes(self.gpu_bytes, self.cache.budget, self.preparing.capacity)
        self.loans = CandidateLoans(self.preparing, kept, self.release_cached_beyond, self.device_free)
        self.lock_path = lock_path if self.device.type == "cuda" else ""
        self.peaks = roofline.DevicePeaks(self.device, self.lock_path) if self.device.type == "cuda" else None
        self.sm_clock = SmClock(self.device)
        self.jobs = {}
        self.loading = SingleFlight()  # problems being loaded (problem_for)
        self.prepare_clocks = {}  # job id -> its prepare's waits for other jobs (waits.py)
        self.jobs_lock = threading.Lock()
        self.idle_seconds = idle_seconds
        self.last_request = time.monotonic()
        self.identity = node_identity.node_identity(self.device)
        self.device_ready = False
        # while kjudged builds the first candidate and this worker waits for its first prepare
        self.warm_up = WarmUp(GPU_MODULES if self.device.type == "cuda" else ()).start()

    def handle(self, req):
        op = req.get("op")
        if op == "ping":
            return {"ok": True, "device": str(self.device), "cache_bytes": self.cache.used(),
                    "cache_hits": self.cache.hits, "cache_misses": self.cache.misses, "jobs": len(self.jobs),
                    "warm_up": self.warm_up.report(), "lent_bytes": self.loans.lent()}
        if op == "prepare":
            return self.prepare_counted(req)
        if op == "prepare_waited":  # the daemon, at the reference's deadline: how much of it was others'
            with self.jobs_lock:
                clock = self.prepare_clocks.get(req.get("job_id"))
            return {"ok": True, "waited_seconds": clock.seconds_now() if clock is not None else 0.0}
        if op == "results":  # asked once the candidate's sandbox is gone (kernelbench/pipeline.cpp)
            job = self.pop(req)
            try:
                return {"ok": True, **job.wait_results(float(req.get("timeout", 10)))}
            finally:
                job.retire(candidate_gone=True)
        if op == "judge_seconds":  # the daemon, at the candidate's deadline: how much of it was ours
            with self.jobs_lock:
                job = self.jobs.get(req.get("job_id"))
            return {"ok": True, "judge_seconds": job.judge_seconds_now() if job is not None else 0.0}
        if op == "lend":  # kjudged, for a candidate beyond the candidates' capacity (candidate_loans.py)
            return {"ok": True, "lent": self.loans.lend(int(req["loan"]), int(req.get("bytes", 0)))}
        if op == "repay":  # kjudged, once that candidate is done (or a lend it got no answer to)
            return {"ok": True, "repaid_bytes": self.loans.repay(int(req["loan"]))}
        if op == "stacks":  # the daemon, before it kills a worker that overran: where each thread was
            return {"ok": True, "stacks": thread_stacks()}
        if op == "forget":
            job = self.pop(req)
            job.wait_results(0)
            job.retire(candidate_gone=False)
            return {"ok": True}
        raise ValueError(f"unknown op {op!r}")

    def pop(self, req):
        with self.jobs_lock:
            job = self.jobs.pop(req.get("job_id"), None)
        if job is None:
            raise ValueError(f"no job {req.get('job_id')!r}")
        return job

    def release_cached_beyond(self, keep_bytes):
        """torch's cached blocks back to the device while it holds more than `keep_bytes`."""
        if over_kept(self.device, keep_bytes):
            transport.release_cached(self.device)

    def device_free(self):
        return torch.cuda.mem_get_info(self.device)[0] if self.device.type == "cuda" else float("inf")

    def set_up_device(self):
        """The worker's CUDA context, made before the first reference runs (once), so a GPU that
        cannot give one is told apart from a reference that fails."""
        if self.device.type != "cuda" or self.device_ready:
            return
        try:
            torch.ones(1, device=self.device).add_(1).item()
        except Exception as exc:  # noqa: BLE001 - any failure here is the device's
            raise DeviceUnavailable(f"the trusted worker could not set up its GPU: {exc}".splitlines()[0]) from exc
        self.device_ready = True

    def prepare_counted(self, req):
        """prepare, its waits for other jobs counted where the daemon can ask for them."""
        job_id = req.get("job_id")
        with self.jobs_lock:
            clock = self.prepare_clocks[job_id] = waits.WaitClock()
        try:
            with waits.counting(clock):
                return self.prepare(req)
        finally:
            with self.jobs_lock:
                self.prepare_clocks.pop(job_id, None)

    @contextlib.contextmanager
    def admitted_to_prepare(self, job, problem, heavy):
        """The preparation budget, or for a problem of large inputs a heavy section with room for
        its preparation's transients (prepare_budget.TRANSIENTS_PER_INPUT_BYTE times its inputs):
        the cache gives way when the device is short, as for every other use of a heavy set.
        Held in the budget too, a large job took the whole of it and every small job behind it
        waited (first come, first admitted): 4.1 s of `prepare_wait` for the first matmul jobs
        of a batch on one H200. A problem of unknown size prepares alone, in both. Nothing to
        wait for where an earlier job of the group made the job's sets (Job.sets_known)."""
        if job.sets_known():
            yield
            return
        size = problem.input_bytes
        if size is not None and size >= heavy.threshold:
            with heavy.section_for_preparing(size):
                yield
            return
        with self.preparing.hold(prepare_budget.estimate(size, self.preparing.capacity)), \
                heavy.section(heavy.threshold if size is None else size):
            yield

    def problem_for(self, req, path, source):
        """The job's problem: from the cache, else loaded once for all the jobs that ask for it
        meanwhile (a batch's first jobs of one problem arrive together: each loaded the reference
        and made its model on the device, and each timed its own baseline on it)."""
        key = problems.problem_key(req, source)
        problem = self.cache.get(("problem", key))
        if problem is not None:
            return problem

        def load():
            made = problems.Problem(key, path, req.get("size_overrides"), req.get("precision", "fp32"),
                                    req.get("mode"), req["weight_seed"], self.device)
            self.cache.put(("problem", key), made, made.bytes)
            return made

        return self.loading.once(key, load)[0]

    def candidate_alone(self, req, report):
        """The job's candidate holds the device alone: a retry (kjudged's `device_alone`) or an
        estimate over the candidates' whole capacity and what kjudged may borrow beyond it
        (`candidate_borrow_share` of the preparations' budget: a loan shrinks torch's kept cache
        by itself, candidate_loans.py). torch's cached blocks, kept for the worker up to its part
        of the device (56 GiB of an H200), then go back after each of the job's uses of the
        device, so the candidate finds the memory it was given the device for."""
        limit = self.candidate_capacity + float(req.get("candidate_borrow_share") or 0) * self.preparing.capacity
        over = self.candidate_capacity and report.get("candidate_device_bytes", 0) > limit
        return bool(req.get("device_alone") or over)

    def prepare(self, req):
        self.set_up_device()
        t0 = time.perf_counter()
        phases = {}
        path = os.path.join(self.root, req["reference_path"])
        with open(path) as f:
            source = f.read()
        problem = self.problem_for(req, path, source)
        phases["reference_init"] = time.perf_counter() - t0
        heavy = Heavy(self.heavy, self.gpu_bytes, self.device, self.cache, self.loans.kept_bytes)
        job = Job(req, problem, self.cache, self.device, self.lock_path, heavy, self.peaks, self.sm_clock)
        t1 = time.perf_counter()
        with self.admitted_to_prepare(job, problem, heavy):
            phases["prepare_wait"] = time.perf_counter() - t1
            try:
                report = job.prepare()
                if self.candidate_alone(req, report):
                    heavy.keep = lambda: 0  # its candidate has the device to itself, up to torch's cache
            finally:  # out of memory too: the blocks go back for the other jobs and the canary
                heavy.give_back()
        report["device_total_bytes"] = self.gpu_bytes
        report["candidate_capacity_bytes"] = self.candidate_capacity
        report["candidate_lendable_bytes"] = self.preparing.capacity if self.gpu_bytes else 0
        phases["sets"] = time.perf_counter() - t0 - phases["reference_init"] - phases["prepare_wait"]
        report.update({"ok": True, "node_identity": self.identity, "torch_version": torch.__version__,
                       "device_name": torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"})
        cached_on = req.get("baseline_unless_identity") or ""
        if cached_on and cached_on == self.identity:
            report["baseline_skipped"] = True
        elif req.get("time_baseline") and not job.timing_cfg.get("skip"):
            t1 = time.perf_counter()
            baseline, shared = problem.baseline_once(job.baseline_key(),
                                                     lambda: job.time_baseline(req.get("clock_path")))
            report.update(baseline)
            phases["baseline"] = time.perf_counter() - t1
            if shared:  # another job of the problem timed it (Problem.baseline_once)
                phases["baseline_shared"] = 1.0
        job.listen(os.path.join(self.root, req["channel_path"]))
        with self.jobs_lock:
            self.jobs[job.id] = job
        report["phase_seconds"] = {k: round(v, 4) for k, v in phases.items()}
        report["cache"] = {"hits": self.cache.hits, "misses": self.cache.misses, "bytes": self.cache.used()}
        return report

    def serve_connection(self, conn):
        with conn:
            f = conn.makefile("rwb")
            line = f.readline()
            if not line:
                return
            self.last_request = time.monotonic()
            try:
                reply = self.handle(json.loads(line))
            except JobError as exc:
                reply = {"ok": False, "error": str(exc), "fault": "reference"}
            except lock_order.LockOrderError as exc:  # the worker's own bug: ours, judged again
                reply = {"ok": False, "error": str(exc), "fault": "worker"}
            except DeviceUnavailable as exc:  # the node's GPU: kjudged retries and checks the GPU
                reply = {"ok": False, "error": str(exc)[:2000], "fault": "device"}
            except torch.cuda.OutOfMemoryError as exc:  # other jobs' memory at this moment: kjudged retries
                transport.release_cached(self.device)  # torch's cache and the idle hand-over buffers
                reply = {"ok": False, "error": str(exc)[:2000], "fault": "resources"}
            except Exception as exc:  # noqa: BLE001 - the reference's errors go back to the daemon
                reply = {"ok": False, "error": wire.error_text(exc), "error_type": type(exc).__name__,
                         "fault": "reference"}
            try:
                f.write(json.dumps(reply).encode() + b"\n")
                f.flush()
            except OSError:
                pass
            self.last_request = time.monotonic()

    def serve(self):
        path = os.path.join(self.root, "control.sock")
        for stale in (path, path + ".new"):
            if os.path.exists(stale):
                os.unlink(stale)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # bound and listening under another name first: the path appears only when a connect to it
        # succeeds (a client that waits for the file met "connection refused" in between)
        srv.bind(path + ".new")
        srv.listen(64)
        os.rename(path + ".new", path)
        srv.settimeout(1.0)
        print(json.dumps({"worker": "ready", "device": str(self.device)}), file=sys.stderr, flush=True)
        while True:
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                if not self.jobs and time.monotonic() - self.last_request > self.idle_seconds:
                    return 0  # idle: give the device memory back; kjudged starts a new one when needed
                continue
            conn.settimeout(None)
            threading.Thread(target=self.serve_connection, args=(conn,), daemon=True).start()
