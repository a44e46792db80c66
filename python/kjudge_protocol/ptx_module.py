"""PTX loaded through the CUDA driver (ctypes): kernels that need no build step and no compiler
process (the launch cover, the worker's comparator kernel). Each module is loaded once per process
and device, into the device's primary context, the one torch uses."""
import ctypes
import threading

import torch

_loaded = {}  # (module name, device index) -> (libcuda, {function name: handle}) or None
_loading = threading.Lock()


def functions(name, device, make_ptx, entries):
    """(libcuda, {entry: function handle}) of the module `name` on `device`, made by make_ptx()
    (PTX bytes, or None) on the first call; None where it cannot be made or loaded."""
    with _loading:
        key = (name, device.index)
        if key not in _loaded:
            _loaded[key] = _load(device, make_ptx, entries)
        return _loaded[key]


def _load(device, make_ptx, entries):
    try:
        ptx = make_ptx()
        if ptx is None:
            return None
        cuda = ctypes.CDLL("libcuda.so.1")
        module, fns = ctypes.c_void_p(), {}
        with torch.cuda.device(device):
            torch.cuda.synchronize(device)  # a runtime call: the primary context current on this thread
            if cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx)) != 0:
                return None
            for entry in entries:
                fn = ctypes.c_void_p()
                if cuda.cuModuleGetFunction(ctypes.byref(fn), module, entry.encode()) != 0:
                    return None
                fns[entry] = fn
        return cuda, fns
    except (OSError, AttributeError, RuntimeError):
        return None
