"""The kernel recorder: libkjudge_kernel_trace.so (src/kernel_trace/) through ctypes. It names
every kernel launch from CUPTI's API callbacks, in this process, without the profiler's start-up
(activity buffers, kineto). kjudged binds the library read-only into the candidate's sandbox and
names its path in the request; without it, or where it cannot start, the trace uses
torch.profiler as before (trace.py)."""
import ctypes
import glob
import os
import sys

ERR_BYTES = 512


class Recorder:
    """One loaded library. start() and stop() bracket a recording; names() reads it after stop."""

    def __init__(self, lib):
        self._lib = lib
        lib.kjt_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.kjt_start.restype = ctypes.c_int
        lib.kjt_stop.restype = ctypes.c_int
        lib.kjt_count.restype = ctypes.c_int
        lib.kjt_name.argtypes = [ctypes.c_int]
        lib.kjt_name.restype = ctypes.c_char_p
        lib.kjt_unattributed.restype = ctypes.c_int
        lib.kjt_cupti_path.restype = ctypes.c_char_p

    def start(self):
        """Returns "" when recording, else why not."""
        err = ctypes.create_string_buffer(ERR_BYTES)
        hint = cupti_hint()
        if self._lib.kjt_start(hint.encode() if hint else None, err, ERR_BYTES) == 0:
            return ""
        return err.value.decode(errors="replace") or "kjt_start failed"

    def stop(self):
        return self._lib.kjt_stop() == 0

    def count(self):
        return self._lib.kjt_count()

    def unattributed(self):
        return self._lib.kjt_unattributed()

    def names(self, begin=0, end=None):
        end = self.count() if end is None else end
        out = []
        for i in range(begin, end):
            name = self._lib.kjt_name(i)
            out.append(name.decode(errors="replace") if name is not None else "")
        return out

    def cupti_path(self):
        return (self._lib.kjt_cupti_path() or b"").decode(errors="replace")


def load(path):
    """The recorder at path, or (None, why) where it cannot be loaded."""
    if not path:
        return None, "no kernel recorder library was given"
    try:
        return Recorder(ctypes.CDLL(path)), ""
    except (OSError, AttributeError) as exc:
        return None, f"cannot load the kernel recorder {path}: {exc}"


def cupti_hint():
    """A libcupti to load when torch has not loaded one: the one its wheel ships (nvidia/*/lib),
    which is not on the loader's search path. None if there is none; the library then tries the
    loader's path by name."""
    for base in sys.path:
        if not base or not os.path.isdir(os.path.join(base, "nvidia")):
            continue
        found = sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", "libcupti.so.*")))
        if found:
            return found[-1]
    return None
