"""The numerics torch's own ops compute with, per mode, the same for the reference (trusted worker)
and the candidate (its process): strict compares against exact float32 (no TF32 in matmuls or
cuDNN); compat is KernelBench's single process, torch's defaults (cuDNN convolutions in TF32,
matmuls in full float32). A reference and a candidate that call the same torch op then take the
same path, as they do in KernelBench's one process."""
import contextlib
import threading

import torch

STRICT = {"matmul_tf32": False, "cudnn_tf32": False}
COMPAT = {"matmul_tf32": False, "cudnn_tf32": True}  # torch's defaults, which KernelBench keeps

_lock = threading.RLock()  # the flags are process-wide: one mode's reference at a time


def settings(compat):
    return COMPAT if compat else STRICT


def apply(compat):
    s = settings(compat)
    torch.backends.cuda.matmul.allow_tf32 = s["matmul_tf32"]
    torch.backends.cudnn.allow_tf32 = s["cudnn_tf32"]


def current():
    return {"matmul_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_tf32": bool(torch.backends.cudnn.allow_tf32)}


@contextlib.contextmanager
def scoped(compat):
    """The mode's flags around a block of the worker's (several modes' jobs share its process)."""
    with _lock:
        before = current()
        apply(compat)
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before["matmul_tf32"]
            torch.backends.cudnn.allow_tf32 = before["cudnn_tf32"]
