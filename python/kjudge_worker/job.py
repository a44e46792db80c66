"""One job in the worker: its sets (made, or taken from the cache), the baseline when asked for,
and the candidate's channel. The channel hands the candidate fresh shared copies of its inputs and
takes its outputs, which are compared here, on the device; the candidate never gets an expected
output, a comparison result or another job's data. The daemon reads the facts with `results`."""
import contextlib
import json
import os
import socket
import threading
import time

import torch

from kjudge_protocol import inputs as kin
from kjudge_protocol import numerics, timing, transport, wire
from kjudge_protocol import input_contract as contract

from . import compare, roofline
from .gpu_lock import GpuLock
from .meaning import Meaning, fingerprint
from .prepare_budget import TRANSIENTS_PER_INPUT_BYTE
from .problems import finite, nbytes
from .sm_clock import SmClock
from .steps import Steps
from .waits import WaitClock

AUDIT_MEMORY_SHARE = 0.1  # audited outputs a candidate may keep, as a share of device memory
POOL_MEMORY_SHARE = 0.1   # the timing pool's inputs, as a share of device memory (at least one set)
# Both shares stop below an 80 GB H100's tenth (7.9 GiB): a larger device times a problem the same
# way (its pool, its audits) instead of handing each candidate more copies. On an H200 the uncapped
# tenth gave 91_cumsum_reverse's candidates a 12 GiB pool and 3 audits, 33 GiB each, so they ran
# one at a time (bench/results/rlstep-20261207-h200-backfill).
MEMORY_SHARE_CAP = 15 << 29  # 7.5 GiB
HEAVY_SET_SHARE = 0.02    # a set over this share of device memory is used within the heavy sections
CANDIDATE_SLACK = 1 << 30  # a candidate's context, its timed loop's L2 flush (timing.flush_bytes) and its kernels' temporaries
HEAVY_HEADROOM = 1 << 30   # beyond a heavy set's bytes: a comparison's chunks, a variant's temporaries


def over_kept(device, keep_bytes):
    """torch holds more of the device than it may keep cached for the worker."""
    return device.type == "cuda" and torch.cuda.memory_reserved(device) > keep_bytes


def capped_share(share, total):
    """`share` of a device of `total` bytes, at most MEMORY_SHARE_CAP."""
    return min(share * total, MEMORY_SHARE_CAP)


class Heavy:
    """A job's uses of large sets: a set over HEAVY_SET_SHARE of the device is made, copied,
    compared or timed within the worker's heavy sections (heavy_sections.py: one on the fixed
    reserve, more on bytes the preparations do not use, where the device has room), and torch's
    cached blocks go back to the device afterwards beyond the worker's own part of it
    (`give_back`), for the candidates. `sections`: the worker's; `total`: the device's memory (0 on
    the cpu backend: nothing is heavy); `keep()`: what torch may keep cached for the worker now
    (its part of the device less what its candidates borrowed of it: candidate_loans.py)."""

    def __init__(self, sections, total, device, cache=None, keep=lambda: 0):
        self.sections, self.total, self.device, self.cache = sections, total, device, cache
        self.keep = keep
        self.threshold = HEAVY_SET_SHARE * total if total else float("inf")
        self.waited = 0.0  # seconds this job's sections waited for other jobs' heavy sets
        self.steps = Steps()  # the job's (Job sets it): the time cached blocks took to go back

    @contextlib.contextmanager
    def section(self, nbytes):
        if nbytes < self.threshold:
            yield
            return
        asked = time.monotonic()
        need = self.room_needed(nbytes)
        with self.sections.section(need, self.has_room) as on_reserve:
            self.waited += time.monotonic() - asked
            if on_reserve:  # a borrowed section was admitted only where its room was free
                self.make_room(nbytes, beside=self.sections.others_in_flight(need))
            try:
                yield
            finally:
                self.give_back()

    def section_for_preparing(self, input_bytes):
        """The section a large problem's prepare makes its sets in: room for the transients the
        preparations' budget counts per input byte (prepare_budget.TRANSIENTS_PER_INPUT_BYTE:
        inputs, output, the reference's intermediates, a variant's copy), with the headroom."""
        return self.section(TRANSIENTS_PER_INPUT_BYTE * input_bytes // 2)  # room_needed doubles it

    @staticmethod
    def room_needed(nbytes):
        """A heavy set (made now if it is not cached) and as much again in transients (an audit's
        perturbed copy and the reference's output, an output's comparison), with a headroom."""
        return 2 * nbytes + HEAVY_HEADROOM

    def has_room(self, nbytes):
        """`nbytes` free for the worker now (torch's own unused blocks included)."""
        return self.device.type != "cuda" or nbytes <= self.free_bytes()

    def give_back(self):
        """torch's cached free blocks back to the device once torch holds more than the worker's
        own part of it (its cache and its preparations; kjudged admits candidates within the
        rest): below that, the next set reuses them. Emptied after every heavy set, a 4 GiB set's
        making mapped its memory anew each time: 0.68 s of emptying and 1.45 s of making per
        candidate of 91_cumsum_reverse on one H200, most of its 3.8 s on the device
        (bench/results/rlstep-20261202-h200-worker-lock), one such candidate at a time."""
        if over_kept(self.device, self.keep()):
            with self.steps("release_cached"):
                transport.release_cached(self.device)

    def free_bytes(self):
        """Free device memory as a set about to be made sees it: the driver's, and torch's own
        cached blocks, which it reuses first."""
        free, _ = torch.cuda.mem_get_info(self.device)
        return free + torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)

    def make_room(self, nbytes, beside=0):
        """A heavy set needs room on the device for itself (made now if it is not cached) and for
        as much again in transients (an audit's perturbed copy and the reference's output, an
        output's comparison): when that is not free, torch's cached blocks go back and, if still
        short, the worker's cache, an optimisation, gives way whole. Dropping only the shortfall
        was not enough on an H100 (2026-11-27): entries a running job still holds free nothing when
        dropped, and 7 GiB audits failed with the cache full. `beside`: what the other sections in
        flight asked for (their sets may not be made yet)."""
        if self.device.type != "cuda" or self.cache is None:
            return
        need = self.room_needed(nbytes) + beside
        if need <= self.free_bytes():
            return
        with self.steps("release_cached"):
            transport.release_cached(self.device)
            free, _ = torch.cuda.mem_get_info(self.device)
            if need > free and self.cache.evict(float("inf")):
                transport.release_cached(self.device)


class ChannelHold:
    """The candidate's hold of the GPU lock over its channel: none, shared or exclusive (`held`),
    since when, and the reference's inputs for its loop beside the candidate's exclusive one."""

    def __init__(self, lock_path):
        self.lock, self.shared_lock = GpuLock(lock_path), GpuLock(lock_path, shared=True)
        self.held, self.since, self.adjacent_pool = None, None, None


class JobError(Exception):
    """The reference or the request is at fault (INVALID_JOB); anything else is ours."""


class Job:
    def __init__(self, request, problem, cache, device, lock_path, heavy, peaks=None, sm_clock=None):
        self.id = request["job_id"]
        self.request, self.problem, self.cache, self.device = request, problem, cache, device
        self.lock_path, self.heavy, self.peaks = lock_path, heavy, peaks
        self.sm_clock = sm_clock or SmClock(torch.device("cpu"))  # no readings
        self.specs = []            # per set: name, index, seed, transform, timing_only, skipped
        self.handed = {}           # per set: the fingerprint of the inputs the candidate was given
        self.judge_clock = WaitClock()  # the candidate's wait for the judge: requests served and in service
        self.results = {"sets": {}, "audits": {}, "flags": [], "lock_seconds": 0.0, "lock_wait_seconds": 0.0,
                        "judge_seconds": 0.0, "judge_seconds_by_request": {}, "settle_seconds": 0.0,
                        "worker_step_seconds": {}, "protocol_errors": [], "transport_errors": [], "worker_faults": []}
        self.steps = heavy.steps = Steps(self.results["worker_step_seconds"])
        # the buffers its candidate is handed its inputs in: reused for its later sets, pooled
        # for later jobs once the candidate is gone (transport.HandOvers; KJUDGE_VMM_POOL=0: none)
        self.hand_overs = transport.HandOvers(transport.hand_over_pool(device))
        self.done = threading.Event()
        self.listener = None

    # --- prepare (the daemon waits for this, under the reference's own budget) ---------------
    def set_requests(self):
        """The job's sets as asked (compat: KernelBench's trials and its timing inputs) and its
        timing settings; the key its sets' facts are remembered under in its problem."""
        req = self.request
        sets = list(req.get("sets") or [])
        timing_cfg = dict(req.get("timing") or {})
        if self.problem.compat:
            seeds = kin.kernelbench_trial_seeds(int(req.get("compat_trials", 5)))
            sets = [{"name": f"trial{i}", "seed": s} for i, s in enumerate(seeds)]
            sets.append({"name": "timing", "seed": 42, "timing_only": True})
            timing_cfg["pool"] = [len(seeds)]
            timing_cfg["audit_calls"] = []
        key = tuple((spec["name"], int(spec["seed"]), spec.get("transform"), bool(spec.get("timing_only")))
                    for spec in sets)
        return sets, timing_cfg, key

    def sets_known(self):
        """An earlier job of this problem made these very sets (a group shares its seeds): their
        facts are known, and this job's prepare makes none of them."""
        return self.problem.sets_facts(self.set_requests()[2]) is not None

    def prepare(self):
        sets, self.timing_cfg, key = self.set_requests()
        specs, flags = self.problem.sets_facts(key) or self.problem.remember_sets(key, self.make_sets(sets))
        self.specs = [dict(e) for e in specs]
        self.results["flags"].extend(flags)
        return self.prepared_report()

    def make_sets(self, sets):
        """Each set made once (run through the reference, kept in the cache if it fits), and what
        the job needs of it afterwards: its sizes, whether the reference gave NaN/Inf on it; the
        reference's meaning over them all checked. Returns (the sets' facts, the job's flags)."""
        specs, flags = [], []
        declared_finite = True
        meaning = Meaning()
        for k, spec in enumerate(sets):
            entry = {"name": spec["name"], "index": k, "seed": int(spec["seed"]),
                     "transform": spec.get("transform"), "timing_only": bool(spec.get("timing_only"))}
            values, out = self.set_values(entry)
            if k == 0:
                declared_finite = finite(out)
                if self.peaks is not None and self.problem.work is None:  # with the declared set in hand
                    with self.steps.shared_gpu(self.lock_path), self.problem.lock:
                        self.problem.work = roofline.work_of(self.problem.model, values, out)
            elif not self.problem.compat and declared_finite and not finite(out):
                entry["skipped"] = "the reference itself gives NaN/Inf on this variant"
            if not entry["timing_only"]:
                meaning.add(values, out)
            entry["output_nbytes"] = out.numel() * out.element_size()
            entry["input_nbytes"] = nbytes(values)
            specs.append(entry)
            del values, out
        if self.problem.compat and meaning.constant() and not meaning.nonfinite():
            # KernelBench's own draws give one output (e.g. a ReLU after a shift no draw reaches):
            # KernelBench judges every candidate against it, and compat is KernelBench's verdict;
            # said in the result, and strict's variants give the problem its meaning back
            flags.append("reference_constant")
        elif meaning.problem():
            raise JobError(meaning.problem())
        return specs, flags

    def public_set(self, entry):
        """What the daemon and the candidate's harness learn of a set: never its values."""
        pub = {"name": entry["name"], "index": entry["index"], "output_nbytes": entry["output_nbytes"],
               "variant": self.variant_text(entry)}
        if "skipped" in entry:
            pub["skipped"] = entry["skipped"]
        if entry["timing_only"]:
            pub["timing_only"] = True  # compat: timed, never compared (as KernelBench)
        return pub

    def prepared_report(self):
        timing_cfg = self.timing_cfg
        total = self.heavy.total
        usable = [e["index"] for e in self.specs if "skipped" not in e]
        self.pool = self.timing_pool([k for k in timing_cfg.get("pool", usable) if k in usable] or usable[:1])
        self.audits = [int(c) for c in timing_cfg.get("audit_calls", [])]
        out_max = max((e["output_nbytes"] for e in self.specs), default=0)
        if total and len(self.audits) > 1 and 3 * out_max > capped_share(AUDIT_MEMORY_SHARE, total):
            self.audits = self.audits[:1]  # the candidate keeps each audited output until its loop ends
        timing_cfg["audit_calls"] = self.audits
        return {"sets": [self.public_set(e) for e in self.specs], "pool": self.pool, "audits": self.audits,
                "init_inputs": self.problem.init_inputs, "candidate_device_bytes": self.candidate_bytes(),
                "roofline": self.roofline()}

    def variant_text(self, entry):
        """What set `entry` is, for the result: a fresh draw, or a variant and what it kept."""
        kind = entry.get("transform") or "none"
        notes = self.problem.variant_notes.get(kind, [])
        if self.problem.compat:
            head = "KernelBench trial" if not entry["timing_only"] else "KernelBench timing inputs"
            return head + ("; " + "; ".join(notes) + " as KernelBench's evaluator does" if notes else "")
        head = "fresh draw" if kind == "none" else f"fresh draw, {kind}"
        return head + ("; " + "; ".join(notes) if notes else "")

    def roofline(self):
        """The problem's least work per call (kept with the problem) and the device's peaks, for
        the fraction-of-peak figure (roofline.py); None off a GPU."""
        if self.peaks is None or self.problem.work is None:
            return None
        peaks = self.peaks.get(self.problem.dtype)
        return {**self.problem.work, **peaks} if peaks else None

    def timing_pool(self, wanted):
        """The sets the timed loop rotates through: as many as the pool's share of device memory
        holds (the candidate gets a copy of each at once), never fewer than one."""
        pool, used = [], 0
        for k in wanted:
            used += self.specs[k]["input_nbytes"]
            if pool and self.heavy.total and used > capped_share(POOL_MEMORY_SHARE, self.heavy.total):
                break
            pool.append(k)
        return pool

    def candidate_bytes(self):
        """Device memory one candidate of this job causes at its peak (the worker's copies it is
        handed included): its model's parameters (as many bytes as the reference's: it draws them
        under the same seed), then a set's inputs, its output and the poisoned block before it, or
        the timing pool's inputs with the outputs of two calls and the audited ones it keeps.
        0 off a GPU: the cpu backend has no device memory to admit candidates by."""
        if not self.heavy.total:
            return 0
        in_max = max((e["input_nbytes"] for e in self.specs), default=0)
        out_max = max((e["output_nbytes"] for e in self.specs), default=0)
        pool_in = sum(self.specs[k]["input_nbytes"] for k in self.pool)
        correctness = in_max + 2 * out_max
        timed = pool_in + (2 + len(self.audits)) * out_max
        return int(self.problem.bytes + max(correctness, timed) + CANDIDATE_SLACK)

    def set_values(self, entry):
        """(inputs, expected) of one set: from the cache, else made now (and cached if it fits)."""
        key = (self.problem.key, entry["seed"], entry.get("transform"))
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        with self.steps("make_set"):
            values, out = self.problem.make_set(entry["seed"], entry.get("transform"),
                                                lambda: self.steps.shared_gpu(self.lock_path))
        self.cache.put(key, (values, out), nbytes(values) + out.numel() * out.element_size())
        return values, out

    def baseline_key(self):
        """What the reference's baseline depends on beyond its problem: the timing settings its
        loop runs under (timed_baseline) and the sets it rotates through."""
        pool = tuple((self.specs[k]["seed"], self.specs[k].get("transform")) for k in self.pool)
        rules = dict(self.timing_cfg, audit_calls=[])  # each job's own audit positions: not the baseline's
        return json.dumps(rules, sort_keys=True, default=str), pool

    def time_baseline(self, clock_path):
        """The reference's timed loop (eager, then torch.compile where it exists) under the GPU lock."""
        with self.section():
            return self.timed_baseline(clock_path)

    def timed_baseline(self, clock_path):
        # copies: the loop perturbs its inputs, and the cached sets are shared with other jobs
        pool = [private_copy(self.set_values(self.specs[k])[0]) for k in self.pool]
        cfg = dict(self.timing_cfg)
        cfg["audit_calls"] = []
        report = {}
        compiled = None if self.problem.compat else self.compiled_reference(pool)
        with GpuLock(self.lock_path), torch.no_grad(), numerics.scoped(self.problem.compat):
            start, _ = self.sm_clock.settle()
            if self.problem.compat:
                report["baseline"] = timing.kernelbench_loop(self.problem.model, pool[0], self.device)
            else:
                report["baseline"] = timing.strict_loop(self.problem.model, pool, cfg, self.device,
                                                        clock_path=clock_path)
                if compiled is not None:
                    report["compiled_baseline"] = timing.strict_loop(compiled, pool, cfg, self.device)
            report["baseline"]["sm_clock_mhz"] = [start, self.sm_clock.mhz()]
        return report

    def compiled_reference(self, pool):
        """The torch.compile baseline, compiled before its timed loop: its first call runs Dynamo and
        Inductor (seconds of CPU), which inside the exclusive lock held every other job's GPU work
        on the device for that long (rlstep, 4 H100s: 651 s of baseline timing over 82 jobs). The
        first call holds the lock shared, as the worker's other GPU work does. None: the reference
        does not compile (it then simply has no compiled baseline). It compiles on every set of the
        timing pool (a set that failed a guard would compile again inside the timed loop). Dynamo
        sets torch's global generators back as it found them when it ends: the worker makes that
        wait for other threads' seeded draws (inputs.guard_generator_restores)."""
        compiled = compiled_model(self.problem.model, self.device)
        if compiled is None:
            return None
        try:
            with self.steps.shared_gpu(self.lock_path), torch.no_grad(), numerics.scoped(self.problem.compat):
                for values in pool:  # Dynamo's generator restore waits for seeded draws (Worker)
                    compiled(*values)
                torch.cuda.synchronize(self.device)
        except Exception:  # noqa: BLE001 -- a failed compile costs the compiled figure, never the job
            return None
        return compiled

    def adjacent_pool(self, shared):
        """The reference's inputs for its loop beside the candidate's (None: not asked for)."""
        if not self.request.get("adjacent_baseline") or self.timing_cfg.get("skip"):
            return None
        pool = [self.timing_inputs(k, shared) for k in self.pool]
        return None if any(p is None for p in pool) else pool

    def time_adjacent_baseline(self, pool):
        """The reference's timed loop right after the candidate's, in the same hold of the GPU lock
        and on the very input buffers the candidate's loop read (its shared copies): whatever the
        device's state (clocks, other work queued before the lock), both are measured in it."""
        if not pool:
            return
        try:
            cfg = dict(self.timing_cfg, audit_calls=[])
            with torch.no_grad(), self.problem.lock, numerics.scoped(self.problem.compat):
                start = self.sm_clock.mhz()
                if self.problem.compat:
                    loop = timing.kernelbench_loop(self.problem.model, pool[0], self.device)
                else:
                    loop = timing.strict_loop(self.problem.model, pool, cfg, self.device,
                                              clock_path=self.request.get("clock_path"))
                loop["sm_clock_mhz"] = [start, self.sm_clock.mhz()]
            self.results["adjacent_baseline"] = loop
        except torch.cuda.OutOfMemoryError as exc:  # the judge's own memory: the cached baseline serves
            self.results["adjacent_baseline_error"] = f"device out of memory: {str(exc)[:200]}"
        finally:
            self.heavy.give_back()

    def timing_inputs(self, k, shared):
        """Set k's inputs for the reference's loop: the candidate's shared copies where the worker
        holds them (the same physical memory, nothing made), else private copies of the pristine
        set; None for a heavy set without them (made and copied while the job waits for the lock,
        such sets of many waiting jobs filled the device: the cached baseline serves)."""
        copies, _, _, plain = shared.get(k, ([], None, None, []))
        if self.device.type == "cuda" and copies and all(c is not None for c in copies):
            it = iter(copies)
            return [next(it) if is_tensor else v for is_tensor, v in plain]
        entry = self.specs[k]
        if entry["input_nbytes"] + entry["output_nbytes"] >= self.heavy.threshold:
            return None
        return private_copy(self.set_values(entry)[0])

    # --- the candidate's channel --------------------------------------------------------------
    def listen(self, path):
        if os.path.exists(path):
            os.unlink(path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(path)
        os.chmod(path, 0o666)
        self.listener.listen(1)
        threading.Thread(target=self.serve, name=f"channel-{self.id}", daemon=True).start()

    def serve(self):
        """The candidate's channel, one request after another until the candidate's process is gone;
        then whatever it still held (the GPU lock, its sets' shared copies) given back."""
        hold = ChannelHold(self.lock_path)
        try:
            conn, _ = self.listener.accept()
        except OSError:
            self.done.set()
            return
        self.listener.close()
        shared = {}  # set index -> (exported copies, holders)
        try:
            with conn:
                while self.serve_request(conn, hold, shared):
                    pass
        except Exception as exc:  # noqa: BLE001 -- ours: said in the result, never a silent close
            self.results["worker_faults"].append(f"channel: {type(exc).__name__}: {str(exc)[:300]}")
        finally:
            self.close_channel(hold, shared)

    def serve_request(self, conn, hold, shared):
        """One request of the candidate's channel, answered; False once the channel is done."""
        try:
            msg, fds = wire.recv(conn)
        except ValueError as exc:  # a malformed message: never the harness's
            self.results["protocol_errors"].append(str(exc))
            return False
        except OSError:  # the candidate's process is gone (crashed, killed, timed out)
            return False
        if msg is None:
            return False
        op = msg.get("op")
        faults, heavy_before = len(self.results["worker_faults"]), self.heavy.waited
        self.judge_clock.begin()
        try:
            if hold.since is not None and op in ("inputs", "output", "audit"):
                # the worker's GPU work waits for timed loops: asked inside one, it never starts
                raise ValueError(f"{op} while holding the GPU lock")
            if op == "inputs":
                with self.section(msg.get("set")), self.request_gpu_hold():
                    self.send_inputs(conn, msg, shared)
            elif op in ("output", "audit"):
                with self.section(msg.get("set") if op == "output" else None), self.request_gpu_hold():
                    self.take_output(op, msg, fds, shared)
                fds = []
                wire.send(conn, {"ok": True})
            elif op == "lock":
                self.take_gpu_lock(hold, msg, shared)
                wire.send(conn, {"ok": True})
            elif op == "unlock":
                self.give_gpu_lock(hold)
                wire.send(conn, {"ok": True})
            else:
                raise ValueError(f"unknown channel op {op!r}")
        except (ValueError, KeyError, TypeError) as exc:  # refused: not a request the harness makes
            self.results["protocol_errors"].append(f"{op}: {exc}")
            reply_error(conn, str(exc))
        except transport.VmmError as exc:  # shared memory that did not map: the candidate sees it
            if "OUT_OF_MEMORY" in str(exc):  # the worker's own copy found no room: ours
                self.note_out_of_memory(op, exc)
            else:
                self.results["transport_errors"].append(f"{op}: {exc}")
            reply_error(conn, str(exc))
        except torch.cuda.OutOfMemoryError as exc:  # ours: the worker's own memory
            self.note_out_of_memory(op, exc)
            reply_error(conn, "the judge's worker ran out of device memory")
        except ConnectionError:  # the candidate's process is gone mid-request
            return False
        except Exception as exc:  # noqa: BLE001 -- ours (a CUDA error, a bug): said, never a closed channel
            self.results["worker_faults"].append(f"{op}: {type(exc).__name__}: {str(exc)[:300]}")
            reply_error(conn, "the judge's worker failed serving this request")
        finally:
            # the candidate waited for the judge (sets, comparisons, GPU lock, the
            # reference's loop beside its own): time of its limit that is not its own
            spent = self.judge_clock.end()
            self.results["judge_seconds"] = self.judge_clock.seconds_now()
            self.note_judge_seconds(op, spent, self.heavy.waited - heavy_before)
            for fd in fds:  # those no request took (take_output takes its own)
                os.close(fd)
            if len(self.results["worker_faults"]) > faults:
                # only now, with the exception and its frames' 6 GB sets gone, can
                # torch's cache give that memory back to the device
                transport.release_cached(self.device)
        return True

    def take_gpu_lock(self, hold, msg, shared):
        """The candidate's "lock": the GPU lock shared (its correctness calls, the traced pass) or
        exclusive (its timed loop: the reference's inputs for the loop beside it made first, the
        device settled at its working clock once held)."""
        if hold.held is not None:
            raise ValueError("lock while holding the GPU lock")
        hold.held = hold.shared_lock if msg.get("shared") else hold.lock
        if hold.held is hold.lock:  # before the lock: making a set needs the GPU lock shared
            hold.adjacent_pool = self.adjacent_pool(shared)
        self.results["lock_wait_seconds"] += hold.held.acquire()
        hold.since = time.monotonic()
        if hold.held is hold.lock:  # the candidate times on a device at its working clock
            self.settle_for_candidate()

    def give_gpu_lock(self, hold):
        """The candidate's "unlock": after its timed loop, the reference's loop in the same hold."""
        if hold.held is hold.lock:  # the timed loop's exclusive hold
            self.results["candidate_sm_clock_mhz"].append(self.sm_clock.mhz())
            self.time_adjacent_baseline(hold.adjacent_pool)
            hold.adjacent_pool = None
            self.results["lock_seconds"] += time.monotonic() - hold.since
        if hold.held is not None:
            hold.held.release()
        hold.held, hold.since = None, None

    def close_channel(self, hold, shared):
        """The channel is done: the GPU lock given back if the candidate still held it, each set's
        shared copies checked and freed, the job marked done."""
        if hold.held is hold.lock:
            self.results["lock_seconds"] += time.monotonic() - hold.since
        if hold.held is not None:
            hold.held.release()
        for k in list(shared):  # each set's copies freed, whatever the check of another did
            try:
                with self.section(k), self.request_gpu_hold():
                    self.check_and_free(k, shared)
            except (torch.cuda.OutOfMemoryError, transport.VmmError) as exc:
                self.note_out_of_memory("input check", exc)
        self.heavy.give_back()  # what a failed check held, with its exception gone
        self.done.set()

    def settle_for_candidate(self):
        """Under the exclusive lock, before the candidate's loop: the device busied until its SM
        clock stops rising (sm_clock.py); the clock it starts at is kept for the result."""
        mhz, ms = self.sm_clock.settle()
        self.results["settle_seconds"] += ms / 1e3
        self.results["candidate_sm_clock_mhz"] = [mhz]

    def note_out_of_memory(self, op, exc):
        """The worker's own device memory ran out: its fault. The caller gives torch's cached
        blocks back once the exception is gone (its frames hold the tensors that filled the device)."""
        self.results["worker_faults"].append(f"{op}: device out of memory: {str(exc)[:300]}")

    def judge_seconds_now(self):
        """The candidate's wait for the judge so far, the request in service included: the daemon
        gives it back to the candidate's wall limit (the node's time, not the candidate's)."""
        return self.judge_clock.seconds_now()

    def note_judge_seconds(self, op, seconds, heavy_wait):
        """Where the candidate's wait for the judge went, per request kind, and how much of it was
        spent queued behind other jobs' heavy sets (the worker does those one at a time)."""
        by = self.results["judge_seconds_by_request"]
        key = op if op in ("inputs", "output", "audit", "lock", "unlock") else "other"
        by[key] = by.get(key, 0.0) + seconds
        if heavy_wait:
            by["heavy_set_wait"] = by.get("heavy_set_wait", 0.0) + heavy_wait

    def request_gpu_hold(self):
        """The GPU lock shared once for a whole request, its steps (make, fingerprint, export;
        import, check, compare) under it: no timed loop comes in between a request's steps, with
        the heavy-set lock held all the while. (Each step taking it on its own waited little more:
        a median 1.8 s against 1.7 s of shared-lock waits per job with 16 jobs on one H200,
        bench/results/rlstep-20261202-h200-worker-lock.) Not where a set may be drawn on the host
        beside a GPU (compat's small sets): a timed loop never waits for a host-side draw."""
        if self.problem.host_draw and self.device.type == "cuda":
            return contextlib.nullcontext()
        return self.steps.shared_gpu(self.lock_path)

    def section(self, k=None):
        """The heavy-set section for set k (None: the job's largest set)."""
        sized = [e for e in self.specs if k is None or e["index"] == k]
        return self.heavy.section(max((e["input_nbytes"] + e["output_nbytes"] for e in sized), default=0))

    def spec(self, k):
        if not isinstance(k, int) or not 0 <= k < len(self.specs) or "skipped" in self.specs[k]:
            raise ValueError(f"no set {k!r}")
        return self.specs[k]

    def send_inputs(self, conn, msg, shared):
        k = msg.get("set")
        entry = self.spec(k)
        if k in shared:
            self.check_and_free(k, shared)
        values, _ = self.set_values(entry)
        self.same_as_handed(k, values)
        descs, fds, holders, copies = [], [], [], []
        try:
            with self.steps.shared_gpu(self.lock_path), self.steps("export"):
                exported = [transport.export(v, self.hand_overs) if isinstance(v, torch.Tensor) else None
                            for v in values]
            for v, ex in zip(values, exported):
                if ex is not None:
                    fd, holder = ex
                    fds.append(fd)
                    holders.append(holder)
                    copies.append(holder.tensor(v.dtype, v.shape) if holder is not None else None)
                    descs.append({"tensor": transport.describe(v)})
                else:
                    descs.append({"value": v})
            wire.send(conn, {"ok": True, "values": descs}, fds)
        finally:
            for fd in fds:
                os.close(fd)
        plain = [(False, v) if not isinstance(v, torch.Tensor) else (True, None) for v in values]
        shared[k] = (copies, holders, bool(msg.get("writable")), plain)

    def same_as_handed(self, k, values):
        """A set made again (evicted from the cache, or too large for it) must be the one the
        candidate was given: otherwise its expected output belongs to other inputs, and a right
        answer would be called wrong. That is the judge's fault (a draw that is not its seed's),
        never the candidate's verdict: raised as a worker fault (INFRA_ERROR, retried)."""
        with self.steps.shared_gpu(self.lock_path), self.steps("fingerprint"):
            now = fingerprint(values)
        was = self.handed.setdefault(k, now)
        if now != was:
            raise RuntimeError(f"set '{self.specs[k]['name']}' was made again with other values than the "
                               "candidate was given")

    def check_and_free(self, k, shared, values=None):
        """After the candidate is done with a set: its shared copies against the pristine set
        (`values`: the set's inputs when the caller has them)."""
        copies, holders, timing_copy, _ = shared.pop(k)
        try:
            if any(c is not None for c in copies):
                # the timed loop's copies too: its harness restores every perturbation it makes
                if values is None:
                    values = self.set_values(self.specs[k])[0]
                tensors = [v for v in values if isinstance(v, torch.Tensor)]
                with self.steps.shared_gpu(self.lock_path), self.steps("check_inputs"):
                    changed = any(c is not None and not compare.identical(c, v) for c, v in zip(copies, tensors))
                if changed:
                    self.results["flags"].append("inputs_mutated_during_timing" if timing_copy
                                                 else f"inputs_mutated:{self.specs[k]['name']}")
        finally:  # the exported memory is not torch's: a check that failed must not keep it
            del copies
            for h in holders:
                if h is not None:
                    self.hand_overs.give(h)
            self.heavy.give_back()

    def take_output(self, op, msg, fds, shared):
        desc = msg.get("desc") or {}
        if op == "output":
            k = msg.get("set")
            entry = self.spec(k)
            slot, key = self.results["sets"], str(k)
        else:
            call = msg.get("call")
            if call not in self.audits or not self.pool:
                raise ValueError(f"call {call!r} is not audited")
            entry = self.specs[self.pool[call % len(self.pool)]]
            slot, key = self.results["audits"], str(call)
        if key in slot:
            raise ValueError(f"{op} {key} was already given")
        if len(fds) != 1:
            slot[key] = {"arg": "output", "passed": False, "problem": "no output tensor was shared"}
            return
        with self.steps("import"):
            actual, holder = transport.open_shared(fds.pop(), desc, self.device, "read")  # it closes the fd
        try:
            values, expected = self.set_values(entry)
            self.same_as_handed(entry["index"], values)
            if op == "output" and k in shared:  # with the set in hand: a 6 GB set is made once per output
                self.check_and_free(k, shared, values)
            with self.steps.shared_gpu(self.lock_path), self.steps("compare"):
                if op == "audit":
                    expected = self.problem.perturbed_output(values, int(self.timing_cfg.get("perturb_seed", 0)),
                                                             call)
                del values  # before the comparison's temporaries
                slot[key] = compare.described(expected, actual, desc, self.request["tolerance"])
            if op == "output" and not slot[key].get("passed"):
                self.note_earlier_output(entry, actual, desc)
            elif op == "audit" and not slot[key].get("passed"):
                self.note_audit_replay(call, actual, desc)
        finally:
            del actual
            if holder is not None:
                holder.close()

    def note_earlier_output(self, entry, actual, desc):
        """A wrong output that is an earlier set's expected output: the candidate replayed what it
        returned before for different inputs (memoization, whatever it keys on). Only on positive
        evidence: an output a plain wrong kernel also gives (a constant, zeros near a near-zero
        answer) proves no replay."""
        if trivially_wrong(actual):
            return
        for earlier in self.specs[:entry["index"]]:
            if "skipped" in earlier or earlier["timing_only"]:
                continue
            expected = self.set_values(earlier)[1]  # one set at a time: a 6 GB set's inputs go at once
            replayed = self.replays(expected, actual, desc)
            del expected
            if replayed:
                self.results["flags"].append(f"output_of_earlier_set:{entry['name']}:{earlier['name']}")
                return

    def replays(self, expected, actual, desc):
        """actual passes as `expected` (another input's answer), which is not itself near zero."""
        tol = self.request["tolerance"]
        with self.steps.shared_gpu(self.lock_path):
            if near_zero(expected, tol):
                return False
            return bool(compare.described(expected, actual, desc, tol).get("passed"))

    def note_audit_replay(self, call, actual, desc):
        """A wrong audited call: whose answer did it return? The set's own unperturbed inputs (the
        warm-up's), the first or the previous call on the same buffers, or the call just before.
        A match is the evidence for memoization; no match leaves it a wrong output."""
        if trivially_wrong(actual):
            return
        seed, pool = int(self.timing_cfg.get("perturb_seed", 0)), len(self.pool)
        # (words, pool position, the call whose perturbation to replay; None: unperturbed). Call i
        # reads pool position i % pool, so the first call on a call's buffers is call % pool.
        sources = [("its inputs before perturbation", call % pool, None),
                   ("timed call 0 on its buffers", call % pool, call % pool),
                   ("the previous call on its buffers", call % pool, call - pool),
                   ("the call before it", (call - 1) % pool, call - 1)]
        for words, k, other in sources:
            if other is not None and (other < 0 or other == call or not seed):
                continue
            values, expected = self.set_values(self.specs[self.pool[k]])
            if other is not None:
                with self.steps.shared_gpu(self.lock_path):
                    expected = self.problem.perturbed_output(values, seed, other)
            if self.replays(expected, actual, desc):
                self.results["flags"].append(f"audit_replayed:{call}:{words}")
                return

    def wait_results(self, timeout):
        if self.listener is not None and not self.done.wait(timeout):
            self.listener.close()
            self.results["channel_left_open"] = True  # not the candidate's doing: its sandbox is gone
        self.results["hand_over_buffers"] = self.hand_overs.counts()
        return self.results

    def retire(self, candidate_gone):
        """The job is forgotten: its idle hand-over buffers to the worker's pool where its
        candidate's process is gone and the channel has ended (kjudged asks for `results` after
        the candidate's sandbox, every process in it, has ended), else closed."""
        self.hand_overs.retire(candidate_gone and self.done.is_set())


def reply_error(conn, text):
    """Tell the candidate its request failed; a candidate that is gone meanwhile hears nothing."""
    try:
        wire.send(conn, {"ok": False, "error": text})
    except OSError:
        pass


def trivially_wrong(t):
    """An output a kernel that computed nothing gives (every element equal: zeros, a constant):
    never evidence of a replay."""
    flat = t.detach().reshape(-1)
    if flat.numel() == 0:
        return True
    first = flat[0]
    return contract.every(flat, lambda part: part == first)


def near_zero(expected, tol):
    """An answer that zeros pass (e.g. softmax over a long row): matching it proves nothing."""
    flat = expected.detach().reshape(-1)
    zeros = torch.zeros((), dtype=flat.dtype, device=flat.device).expand(flat.numel())  # no 6 GB of zeros
    return bool(compare.compare(flat, zeros, tol["atol"], tol["rtol"],
                                tol.get("scale_aware", True), tol.get("nan_equal", True))["passed"])


def private_copy(values):
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def compiled_model(model, device):
    """The torch.compile baseline: only on a GPU, where torch has it."""
    if device.type != "cuda" or not hasattr(torch, "compile"):
        return None
    try:
        return torch.compile(model)
    except Exception:  # noqa: BLE001 - a reference that does not compile simply has no compiled baseline
        return None
