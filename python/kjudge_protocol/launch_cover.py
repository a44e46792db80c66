"""The launch cover: device work queued behind the timed loop's L2 flush, so that a call's host
launch slower than the flush is still hidden from the call's events (docs/timing.md "The launch
overlaps the flush and the cover"). It fills every thread slot of every SM for a fixed time (a spin on the
global timer), so no kernel a candidate puts on a side stream can run beside it unseen (a
one-thread spin such as torch.cuda._sleep would leave the device free for that). Loaded as PTX
through the driver API: no build step, any architecture the driver can JIT for."""
import ctypes

import torch

from . import ptx_module

COVER_US = 150  # beyond the flush's ~85 us: a sandboxed launch took up to ~110 us (2026-11-28)

PTX = b"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry kj_launch_cover(.param .u64 kj_ns)
{
    .reg .pred %p;
    .reg .b64 %start, %now, %ns;
    ld.param.u64 %ns, [kj_ns];
    mov.u64 %start, %globaltimer;
SPIN:
    mov.u64 %now, %globaltimer;
    sub.u64 %now, %now, %start;
    setp.lt.u64 %p, %now, %ns;
    @%p bra SPIN;
    ret;
}
"""


def fill_every_sm(threads_per_sm, sms):
    """(grid, block): blocks of at most 1024 threads that, resident together, take every thread
    slot of every SM (the kernel's few registers let them: tests/python/harness/test_launch_cover.py)."""
    per_sm = -(-threads_per_sm // 1024)
    return sms * per_sm, threads_per_sm // per_sm


def kernel(device):
    """(libcuda, function handle) of the cover in this process's primary context of `device`,
    or None where the driver cannot load it."""
    loaded = ptx_module.functions("launch_cover", device, lambda: PTX, ["kj_launch_cover"])
    return None if loaded is None else (loaded[0], loaded[1]["kj_launch_cover"])


class LaunchCover:
    """cover(): queue the spin on the current stream. `available` is False where the driver
    cannot load or launch it (then the loop runs with the flush alone and says so)."""

    def __init__(self, device, us=COVER_US):
        self.device = torch.device(device)
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.ns = ctypes.c_uint64(int(us * 1000))
        self.params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(self.ns), ctypes.c_void_p))
        props = torch.cuda.get_device_properties(self.device)
        per_sm = getattr(props, "max_threads_per_multi_processor", 2048) or 2048
        self.grid, self.block = fill_every_sm(per_sm, props.multi_processor_count)
        self.loaded = kernel(self.device)
        self.available = self.loaded is not None and self.cover()

    def cover(self):
        cuda, fn = self.loaded
        stream = ctypes.c_void_p(torch.cuda.current_stream(self.device).cuda_stream)
        return cuda.cuLaunchKernel(fn, self.grid, 1, 1, self.block, 1, 1, 0, stream, self.params, None) == 0
