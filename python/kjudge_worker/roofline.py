"""The roofline figure of a KernelBench problem: the least work one call must do (bytes it must
move: its inputs, the model's parameters and buffers, its output; FLOPs of the reference's
matmuls, convolutions and attention, counted by torch's own FlopCounterMode where the installed
torch has it) and the device's peaks, measured once per worker on this very device: the copy
bandwidth of a large device-to-device copy and the FLOP/s cuBLAS reaches on a large square matmul
in the problem's dtype. The daemon divides: roofline floor = max(bytes / bandwidth, FLOPs / FLOP/s),
and the candidate's fraction of peak = floor / its median. A measured peak, not a datasheet one: a
candidate using tensor cores the fp32 reference may not (TF32) can pass 1."""
import time

import torch

from .gpu_lock import GpuLock
from .problems import nbytes
from .waits import CountedLock

COPY_BYTES = 1 << 30  # large against any L2 (50 MiB on an H100)
MATMUL_N = 8192
REPEATS = 5


def work_of(model, values, out):
    """{"bytes": ..., "flops": ... or None} of one call of the reference on `values`."""
    moved = nbytes([*model.parameters(), *model.buffers(), *values, out])
    return {"bytes": int(moved), "flops": count_flops(model, values)}


def count_flops(model, values):
    try:
        from torch.utils.flop_counter import FlopCounterMode  # torch >= 2.1
    except ImportError:
        return None
    counter = FlopCounterMode(display=False)
    try:
        with counter, torch.no_grad():
            model(*values)
    except Exception:  # noqa: BLE001 - an op the counter cannot follow: no FLOP estimate, never a failed job
        return None
    return int(counter.get_total_flops())


class DevicePeaks:
    """Bandwidth and matmul FLOP/s of the worker's device, measured the first time a dtype is
    asked for (under the node's exclusive GPU lock, as any timed loop) and kept."""

    def __init__(self, device, lock_path):
        self.device, self.lock_path = device, lock_path
        self.gbps = None
        self.tflops = {}
        self.lock = CountedLock("device_peaks")  # a job's first figures measured while the others wait

    def get(self, dtype):
        """{"peak_gbps", "peak_tflops"}; None while the device has no room to measure (asked again later)."""
        with self.lock:
            try:
                if self.gbps is None or dtype not in self.tflops:
                    with GpuLock(self.lock_path):
                        if self.gbps is None:
                            self.gbps = self._copy_gbps()
                        self.tflops[dtype] = self._matmul_tflops(dtype)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                return None
            return {"peak_gbps": self.gbps, "peak_tflops": self.tflops[dtype]}

    def _best_seconds(self, fn):
        fn()
        torch.cuda.synchronize(self.device)
        best = float("inf")
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize(self.device)
            best = min(best, time.perf_counter() - t0)
        return best

    def _copy_gbps(self):
        src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=self.device)
        dst = torch.empty_like(src)
        secs = self._best_seconds(lambda: dst.copy_(src))
        del src, dst
        return 2 * COPY_BYTES / secs / 1e9  # read and write

    def _matmul_tflops(self, dtype):
        if not dtype.is_floating_point:
            return None
        # a generator of its own: torch's global one belongs to the sets' seeded draws (other
        # threads'), and a draw in between would make a set that is not its seed's
        gen = torch.Generator(device=self.device).manual_seed(0)
        a = torch.randn(MATMUL_N, MATMUL_N, device=self.device, generator=gen).to(dtype)
        b = torch.randn(MATMUL_N, MATMUL_N, device=self.device, generator=gen).to(dtype)
        secs = self._best_seconds(lambda: torch.mm(a, b))
        del a, b
        return 2 * MATMUL_N ** 3 / secs / 1e12
