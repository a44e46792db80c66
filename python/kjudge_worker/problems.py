"""What the worker keeps between jobs: per problem (reference source, size overrides, precision,
mode, weight seed) the reference model on the device, and per input set (seed, transform) the
inputs and the expected output. A job's sets are made one after another (generate, run the
reference, keep or free), so a problem whose sets do not fit at once is still judged; what is
kept is evicted least-recently-used when the cache's device bytes pass the worker's budget; an
entry over a quarter of the budget is never kept (a 6 GB set is remade on the device in
milliseconds, and keeping it would push out every other problem)."""
import collections
import contextlib
import copy
import hashlib
import threading

import torch

from kjudge_protocol import input_contract as contract
from kjudge_protocol import inputs as kin
from kjudge_protocol import numerics
from kjudge_protocol.module_loader import load_module

from .single_flight import SingleFlight
from .waits import CountedLock


def json_value(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    raise TypeError(f"get_init_inputs() returned a {type(v).__name__}; only numbers, strings and lists are supported")


def nbytes(values):
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


PREPARED_GROUPS_KEPT = 256  # per problem: the facts of this many groups' sets (Problem.remember_sets)
COMPAT_HOST_DRAW_MAX_BYTES = 256 << 20  # compat: inputs up to this are drawn on the host, as KernelBench


def declared_bytes(module):
    """The bytes of get_inputs()'s tensors, read off a draw on the meta device (shapes, no data);
    None where get_inputs() needs real values to run, or torch (< 2.0) has no device context."""
    if not hasattr(torch, "get_default_device"):
        return None
    try:
        # under the draws' lock: a get_inputs() that also draws on the host (an explicit cpu tensor)
        # must not move another thread's generator between its seed and its draw
        with kin.seeded(0), torch.device("meta"):
            values = list(module.get_inputs())
    except Exception:  # noqa: BLE001 -- any failure means: unknown, draw as KernelBench does
        return None
    return nbytes(values)


def finite(t):
    """Every element finite, chunk by chunk (no mask the size of a 6 GiB output)."""
    return contract.every(t.reshape(-1), torch.isfinite) if t.is_floating_point() else True


class Problem:
    def __init__(self, key, path, overrides, precision, mode, weight_seed, device):
        self.key, self.device = key, device
        self.dtype = kin.PRECISIONS[precision]
        self.compat = mode == "compat"
        self.module = load_module(path, f"reference_{key[:12]}", overrides)
        self.init_inputs = json_value(list(self.module.get_init_inputs()))
        with kin.seeded(int(weight_seed)):  # the candidate's harness draws its weights under the same seed
            model = self.module.Model(*self.init_inputs)
        model = model.to(device)
        self.model = (model.to(self.dtype) if self.dtype != torch.float32 else model).eval()
        self.lock = CountedLock("problem")  # one set at a time through the reference (its RNG, its buffers)
        self.bytes = sum(p.numel() * p.element_size() for p in self.model.parameters())
        self.variant_notes = {}  # transform -> what it kept (kin.transform's notes)
        self.work = None  # roofline.work_of, once the first job asks (it runs the reference once more)
        # per job's sets (names, seeds, transforms): their facts (Job.make_sets), made once for a
        # group: a set too large for the cache was made again by every job's prepare
        self.prepared = collections.OrderedDict()
        self.baselines = SingleFlight(kept=PREPARED_GROUPS_KEPT)  # timing key -> report (baseline_once)
        self.input_bytes = declared_bytes(self.module)  # None: unknown (the worker then prepares it alone)
        # compat draws on the host as KernelBench does, except inputs too large for that: a host
        # draw of a 6.4 GB input takes ~10 s of one core, and each set is made up to three times
        self.host_draw = device.type == "cpu" or (
            self.compat and (self.input_bytes is None or self.input_bytes <= COMPAT_HOST_DRAW_MAX_BYTES))

    def make_set(self, seed, transform, gpu_lock=contextlib.nullcontext):
        """(inputs, expected output): inputs generated under `seed` (on the device in strict mode,
        on the host in compat mode as KernelBench does unless they are large), the variant's notes
        kept for the job's report. gpu_lock(): the GPU lock shared, held only around device work:
        no timed loop waits for a host-side draw. The GPU lock is taken before the problem's own
        (the worker's lock order, gpu_lock.py): waiting for it while holding the problem's lock
        deadlocked the worker (an exclusive waiter in the turnstile, a shared holder of the same
        problem waiting for its lock; one H200, 2026-11-28, every job stalled for 5 minutes)."""
        with torch.no_grad():
            if self.host_draw:  # the draw's generator held by kin.seeded, not by the problem's lock
                values = kin.generate(self.module, int(seed), torch.device("cpu"), on_device=False)
            with gpu_lock(), self.lock:
                if not self.host_draw:
                    values = kin.generate(self.module, int(seed), self.device, on_device=True)
                values = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]
                values, notes = kin.transform(values, transform, int(seed))
                values, cast_notes = kin.cast(values, self.dtype, every_tensor=self.compat)
                self.variant_notes[transform or "none"] = notes + cast_notes
                with numerics.scoped(self.compat):
                    out = self.model(*values)
                if type(out) is not torch.Tensor:
                    raise TypeError(f"the reference's forward returned {type(out).__name__}, not one tensor")
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
            return values, out

    def sets_facts(self, key):
        """The facts of the sets `key` an earlier job made (None: none did)."""
        return self.prepared.get(key)

    def remember_sets(self, key, facts):
        """Kept for the group's later jobs; the oldest groups' go first (a problem judged for
        days sees thousands of groups)."""
        self.prepared[key] = facts
        while len(self.prepared) > PREPARED_GROUPS_KEPT:
            self.prepared.popitem(last=False)
        return facts

    def baseline_once(self, key, time_it):
        """The reference's timed baseline for `key` (its timing settings and sets): timed by the
        first job that asks (time_it()), the report taken by every job that asks meanwhile or
        later. kjudged keeps one baseline per problem and node once the first job's result is in,
        but the jobs of a group all ask before that: 17 timings of 8 problems in a batch of 64
        jobs on one H200, each an exclusive hold of the GPU and a torch.compile in the worker's
        process (bench/results/rlstep-20261202-h200-torch-cache). Returns (report, shared)."""
        report, shared = self.baselines.once(key, time_it)
        return copy.deepcopy(report), shared

    def perturbed_output(self, values, perturb_seed, call):
        """The reference on the inputs timed call `call` saw (a copy, perturbed as the loop did:
        the cached set is shared with other jobs)."""
        with self.lock, torch.no_grad(), numerics.scoped(self.compat):
            values = [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
            if perturb_seed:
                kin.perturb(values, perturb_seed, call)
            return self.model(*values)


def problem_key(request, source):
    h = hashlib.sha256(source.encode())
    for k in ("size_overrides", "precision", "mode", "weight_seed", "backend"):
        h.update(repr((k, request.get(k))).encode())
    return h.hexdigest()


class Cache:
    """Problems and sets, least-recently-used first out, bounded in device bytes."""

    def __init__(self, budget_bytes):
        self.budget = budget_bytes
        self.entries = collections.OrderedDict()  # key -> (object, bytes)
        self.lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key):
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                self.hits += 1
                return self.entries[key][0]
            self.misses += 1
            return None

    def put(self, key, obj, size):
        with self.lock:
            if size > self.budget // 4:  # remade on the device when needed: cheaper than a quarter of the cache
                return False
            self.entries[key] = (obj, size)
            self.entries.move_to_end(key)
            while sum(b for _, b in self.entries.values()) > self.budget:
                self.entries.popitem(last=False)
            return key in self.entries

    def evict(self, nbytes):
        """Drops least-recently-used entries until `nbytes` are dropped (or none is left): the
        cache gives way to a large set that needs the device. Returns the bytes dropped."""
        dropped = 0
        with self.lock:
            while self.entries and dropped < nbytes:
                dropped += self.entries.popitem(last=False)[1][1]
        return dropped

    def used(self):
        with self.lock:
            return sum(b for _, b in self.entries.values())
