"""Outputs written after forward returned: work a call left running (a detached native thread, a
callback, a host thread that launches later) that fills the output once the call looks done. Each
correctness output is copied byte for byte when forward returns (after the device sync) and
compared again before the next call starts and after the last, a window in which no code of the
candidate is called: any change there is deferred work (CHEAT, deferred). The thread count after
the run misses such work once it has finished; this does not.

Outputs are also kept alive until the correctness stage ends (up to KEEP_BYTES), so a later set's
output never lands in an earlier set's freed buffer and shows that set's stale answer (which the
worker would otherwise read as an answer replayed for other inputs). An output with no room for
its copy (device memory, or over HOST_COPY_MAX on the host) is left to the thread count."""
import torch

from .snapshot import TensorSnapshot, has_room

KEEP_BYTES = 256 << 20
HOST_COPY_MAX = 1 << 30  # a larger host output is left to the thread count (its copy could hit the memory limit)
_type = type  # bound before candidate code runs


class LateWrites:
    def __init__(self, device):
        self.device = device
        self.pending = []  # (set name, output, snapshot) not checked yet
        self.kept, self.kept_bytes = [], 0
        self.changed = []  # set names whose output changed after forward returned

    def returned(self, name, out, keep):
        """Right after forward returned `out` for set `name` (and the device synced)."""
        if _type(out) is not torch.Tensor:
            return
        nbytes = out.numel() * out.element_size()
        # The copy must be cheap: on the device only with room for it, on the host up to a bound.
        if has_room([out]) and (out.device.type == "cuda" or nbytes <= HOST_COPY_MAX):
            self.pending.append((name, out, TensorSnapshot([out])))
        if keep and self.kept_bytes + nbytes <= KEEP_BYTES:
            self.kept.append(out)
            self.kept_bytes += nbytes

    def check(self):
        """Before the next call and after the last: nothing of the candidate was called since."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        for name, out, snap in self.pending:
            if snap.changed([out]):
                self.changed.append(name)
        self.pending = []

    def release(self):
        self.check()
        self.kept, self.kept_bytes = [], 0
