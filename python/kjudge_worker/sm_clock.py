"""The device's SM clock, read by the trusted worker through NVML around every timed loop, and
brought up before a candidate's loop.

Fidelity run 17 (bench/results/fidelity-20261127-h100x4) saw a candidate's strict loop run 12-19 %
slow for a whole job (flat, its CI tight) while the reference, timed right after it in the same
lock hold on the same buffers, was not; the candidate's loop is the first GPU work after the job
waited for the lock. A device that has been idle runs at a lower clock until its boost catches up,
so the worker keeps the device busy (every SM, a few ms at a time) until the SM clock stops
rising or reaches its maximum, bounded by SETTLE_MAX_MS, before it lets the candidate time: the
way nvbench waits out throttling before a measurement. The clock at the start and end of each
loop goes into the result, so a speedup taken at two clocks can be seen."""
import ctypes
import time

import torch

NVML_CLOCK_SM = 1
SETTLE_MIN_MS = 10.0    # busy at least this long before a flat reading counts as settled
SETTLE_MAX_MS = 100.0   # and never longer: the exclusive lock is every job's
SETTLE_STEP_ELEMENTS = 16 << 20  # float32: 64 MB read and written per step, every SM busy
NEAR_MAX = 0.98


class SmClock:
    """NVML's view of one CUDA device (the worker's, CUDA_VISIBLE_DEVICES respected through its PCI
    bus id); every reading None where NVML is not there (CPU, a sandbox without it)."""

    def __init__(self, device):
        self.device, self.lib, self.handle, self.max_mhz = device, None, None, 0
        self.buf = None
        if device.type != "cuda":
            return
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id(device.index or 0), ctypes.byref(handle)) != 0:
                return
            top = ctypes.c_uint()
            if lib.nvmlDeviceGetMaxClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(top)) != 0:
                return
            self.lib, self.handle, self.max_mhz = lib, handle, top.value
        except (OSError, AttributeError):
            self.lib = None

    def mhz(self):
        if self.lib is None:
            return None
        now = ctypes.c_uint()
        return now.value if self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(now)) == 0 else None

    def settle(self):
        """Busy the device until its SM clock stops rising (or is at its maximum); the caller holds
        the GPU lock exclusively. Returns (clock MHz after, ms spent), (None, 0) without NVML."""
        if self.lib is None:
            return None, 0.0
        t0 = time.perf_counter()
        best = self.mhz() or 0
        while True:
            try:
                self.busy()
            except torch.cuda.OutOfMemoryError:  # a full device: timed as it is, never the job's failure
                return self.mhz(), (time.perf_counter() - t0) * 1e3
            spent = (time.perf_counter() - t0) * 1e3
            now = self.mhz() or 0
            if now >= NEAR_MAX * self.max_mhz or spent >= SETTLE_MAX_MS or (now <= best and spent >= SETTLE_MIN_MS):
                return now, spent
            best = max(best, now)

    def busy(self):
        """A few ms of work on every SM (64 MB read and written 8 times), finished."""
        if self.buf is None:
            self.buf = torch.zeros(SETTLE_STEP_ELEMENTS, dtype=torch.float32, device=self.device)
        for _ in range(8):
            self.buf.add_(1.0)
        torch.cuda.synchronize(self.device)


def pci_bus_id(ordinal):
    """The PCI bus id of CUDA device `ordinal` as this process numbers it (after CUDA_VISIBLE_DEVICES)."""
    lib = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    if lib.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
        raise OSError("cuDeviceGet failed")
    buf = ctypes.create_string_buffer(32)
    if lib.cuDeviceGetPCIBusId(buf, len(buf), dev) != 0:
        raise OSError("cuDeviceGetPCIBusId failed")
    return buf.value
