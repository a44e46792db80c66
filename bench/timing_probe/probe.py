"""Where a strict timed loop's time goes, for small kernels: KernelBench problems' references timed
in one process by KernelBench's loop (compat), the strict loop as it is, the strict loop with the
flush waited for before the start event (the method until run 18), on one input set instead of
the rotating pool, with the per-call perturbation, on sets in VMM buffers shared as the worker
shares them with a candidate (exported, imported as the candidate's own timing copies), and with
the daemon's clock marks sent around each call (a datagram socket this process drains), before
the flush as now and after it as until run 19, and with the launching thread on the GPU's own NUMA
node's CPUs or on another's, and with a launch 60 us slower (as a sandboxed candidate's) after the
flush as it is (at least 256 MB), after the 2x-L2 flush until run 20, and in compat. Each method R times, in rotating order, every repetition on freshly
drawn inputs (another placement).

Usage (the device tool): PYTHONPATH=python python3 bench/timing_probe/probe.py --out $OUT/probe.json
"""
import argparse
import glob
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

import torch

from kjudge_protocol import inputs as kin
from kjudge_protocol import timing
from kjudge_protocol import transport
from kjudge_protocol.module_loader import load_module

HERE = os.path.dirname(os.path.abspath(__file__))
PROBLEMS = ["level1/12_", "level1/95_", "level1/88_", "level1/40_", "level1/19_"]


class WaitForFlush(timing.DeviceTimer):
    """The strict loop's method until run 18: the flush waited for before the start event."""

    def before_call(self, mark=None):
        events = super().before_call(mark)
        self.sync()
        return events


class MarkAfterFlush(timing.DeviceTimer):
    """The order until run 19: the flush queued, then the daemon's mark and the call's events made
    (host work between the flush and the start event)."""

    def before_call(self, mark=None):
        super().before_call()
        if mark is not None:
            mark()
        return None  # call() makes its events after the flush


class TwoL2Flush(timing.DeviceTimer):
    """The flush until run 20: twice the L2 (100 MB on an H100, ~33 us), not at least 256 MB."""

    def __init__(self, device, l2_flush):
        super().__init__(device, l2_flush)
        if self.flush_buf is not None:
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (50 << 20)
            self.flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device=device)


SLOW_LAUNCH_US = 60  # what a sandboxed candidate's launch took beyond the worker's (fidelity run 20)


def slow_launch(model):
    """The model called after SLOW_LAUNCH_US of host work, as a candidate's harness adds."""
    def call(*args):
        end = time.perf_counter_ns() + SLOW_LAUNCH_US * 1000
        while time.perf_counter_ns() < end:
            pass
        return model(*args)
    return call


def strict(model, pool, device, seed=0, timer=None, clock_path=None):
    cfg = {"warmup": 3, "min_trials": 10, "max_trials": 100, "target_rel_ci": 0.01, "perturb_seed": seed}
    old = timing.DeviceTimer
    if timer is not None:
        timing.DeviceTimer = timer
    try:
        return statistics.median(timing.strict_loop(model, pool, cfg, device, clock_path=clock_path)["trial_ms"])
    finally:
        timing.DeviceTimer = old


def shared_pool(pool, device):
    """Each tensor of each set as a candidate's timing copy: exported by this process as the worker
    exports it and imported again as the candidate imports its own writable copies."""
    keep, out = [], []
    for args in pool:
        row = []
        for t in args:
            if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
                row.append(t)
                continue
            fd, holder = transport.export(t)
            view, buf = transport.open_shared(fd, transport.describe(t), device, "own")
            keep += [holder, buf]
            row.append(view)
        out.append(row)
    return out, keep


def strict_shared(model, pool, device):
    shared, keep = shared_pool(pool, device)
    try:
        return strict(model, shared, device)
    finally:
        del shared
        for b in keep:
            b.close()


def parse_cpulist(text):
    """sysfs's "0-31,64-95" as a set of CPU numbers."""
    cpus = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def gpu_local_cpus(device):
    """The CPUs of the GPU's own NUMA node (its PCI device's local_cpulist), or None."""
    if device.type != "cuda":
        return None
    p = torch.cuda.get_device_properties(device)
    try:
        bus = "%04x:%02x:%02x.0" % (getattr(p, "pci_domain_id", 0), p.pci_bus_id, p.pci_device_id)
        with open(f"/sys/bus/pci/devices/{bus}/local_cpulist") as f:
            return parse_cpulist(f.read())
    except (OSError, AttributeError, ValueError):
        return None


def strict_pinned(model, pool, device, local):
    """The strict loop with this thread (the one that launches) on the GPU's own NUMA node's CPUs,
    or on the others: a process placed on the far socket pays every launch's doorbell across it.
    None where the node has one NUMA node (nothing to compare)."""
    allowed, near = os.sched_getaffinity(0), gpu_local_cpus(device)
    if not near or not allowed & near or not allowed - near:
        return None
    os.sched_setaffinity(0, allowed & near if local else allowed - near)
    try:
        return strict(model, pool, device)
    finally:
        os.sched_setaffinity(0, allowed)


def strict_marked(model, pool, device, timer=None):
    """The loop's clock marks sent to a datagram socket that a thread of this process drains."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "clock.sock")
        sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sink.bind(path)
        sink.settimeout(0.2)
        stop = threading.Event()

        def drain():
            while not stop.is_set():
                try:
                    sink.recv(64)
                except OSError:
                    pass
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            return strict(model, pool, device, timer=timer, clock_path=path)
        finally:
            stop.set()
            reader.join()
            sink.close()


METHODS = {
    "compat (KernelBench's loop)": lambda m, pool, d: statistics.mean(timing.kernelbench_loop(m, pool[0], d)["trial_ms"]),
    "strict": lambda m, pool, d: strict(m, pool, d),
    "strict, flush waited for": lambda m, pool, d: strict(m, pool, d, timer=WaitForFlush),
    "strict, one set": lambda m, pool, d: strict(m, pool[:1], d),
    "strict, perturbed calls": lambda m, pool, d: strict(m, pool, d, seed=0x5EED),
    "strict, sets in shared VMM buffers": strict_shared,
    "strict, clock marks sent": strict_marked,
    "strict, clock marks sent after the flush (until run 19)": lambda m, pool, d: strict_marked(m, pool, d, MarkAfterFlush),
    "strict, launching thread on the GPU's NUMA node": lambda m, pool, d: strict_pinned(m, pool, d, True),
    "strict, launching thread on another NUMA node": lambda m, pool, d: strict_pinned(m, pool, d, False),
    "strict, a 60 us slower launch": lambda m, pool, d: strict(slow_launch(m), pool, d),
    "strict, a 60 us slower launch, 2x-L2 flush (until run 20)": lambda m, pool, d: strict(slow_launch(m), pool, d, timer=TwoL2Flush),
    "compat, a 60 us slower launch": lambda m, pool, d: statistics.mean(
        timing.kernelbench_loop(slow_launch(m), pool[0], d)["trial_ms"]),
}


def draw_pool(module, device, n):
    return [kin.generate(module, 1000 + k, device, on_device=True) for k in range(n)]


def probe(path, device, repeats, pool_size):
    module = load_module(path, "probe_" + os.path.basename(path)[:-3])
    with kin.seeded(1):
        model = module.Model(*module.get_init_inputs()).to(device).eval()
    rows = {name: [] for name in METHODS}
    with torch.no_grad():
        for r in range(repeats):
            pool = draw_pool(module, device, pool_size)
            names = list(METHODS)
            for name in names[r % len(names):] + names[:r % len(names)]:
                rows[name].append(METHODS[name](model, pool, device))
            del pool
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default=os.path.join(HERE, "../../.kb/fidelity"))
    ap.add_argument("--problems", nargs="*", default=PROBLEMS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pool", type=int, default=5)
    ap.add_argument("--out", default="probe.json")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of the script itself")
    args = ap.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    near = gpu_local_cpus(device)
    result = {"device": name, "torch": torch.__version__, "problems": {},
              "gpu_local_cpus": len(near) if near else None, "cpus": len(os.sched_getaffinity(0))}
    for prefix in args.problems:
        paths = sorted(glob.glob(os.path.join(args.dataset, prefix + "*.py")))
        if not paths:
            print(f"{prefix}: not in {args.dataset}", file=sys.stderr)
            continue
        rows = probe(paths[0], device, args.repeats, args.pool)
        result["problems"][os.path.basename(paths[0])] = rows
        print(os.path.basename(paths[0]))
        for name, ms in rows.items():
            ms = [x for x in ms if x is not None]  # None: the method does not apply on this node
            if ms:
                print(f"  {name:30s} median {statistics.median(ms):8.4f} ms  max/min {max(ms) / min(ms):.3f}  {ms}")
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
