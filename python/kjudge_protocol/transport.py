"""Tensors between the trusted worker and a candidate's process without a host copy or a file.

GPU: a CUDA VMM allocation (cuMemCreate with a POSIX-fd handle) exported as a file descriptor and
passed over the job's unix socket (SCM_RIGHTS). The importer maps it with the access it asks for:
the candidate maps the worker's input copies read-only, so a plain write faults
(CUDA_ERROR_ILLEGAL_ADDRESS); the driver lets an importer raise its own access to read-write
(bench/results/gpu_worker_probe), so every candidate gets fresh copies and the worker checks them
against its pristine sets after each call. The worker maps a candidate's outputs read-only.
CPU: a sealed memfd (no writes, no resizes), mapped copy-on-write by the candidate (its writes
stay private; the candidate's harness reports them as today) and read-only by the worker."""
import ctypes
import fcntl
import mmap
import os
import threading

import torch

_DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8,
    "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def dtype_of(name):
    if name not in _DTYPES:
        raise ValueError(f"dtype {name!r} is not supported")
    return _DTYPES[name]


def describe(t):
    return {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "nbytes": t.numel() * t.element_size()}


# --- CUDA driver VMM, through ctypes (libcuda is in every GPU sandbox) ---------------------------

class _Prop(ctypes.Structure):
    class _Loc(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]

    class _Flags(ctypes.Structure):
        _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                    ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]

    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Loc),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _Flags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Prop._Loc), ("flags", ctypes.c_int)]


_PINNED, _DEVICE, _POSIX_FD = 1, 1, 1
PROT_READ, PROT_READWRITE = 1, 3


class VmmError(RuntimeError):
    pass


class _Driver:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.granularity = {}

    def check(self, result, what):
        if result != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise VmmError(f"{what}: {(name.value or b'?').decode()}")

    def prop(self, device):
        p = _Prop()
        p.type, p.requestedHandleTypes = _PINNED, _POSIX_FD
        p.location.type, p.location.id = _DEVICE, device
        return p

    def round_up(self, nbytes, device):
        if device not in self.granularity:
            g = ctypes.c_size_t()
            self.check(self.lib.cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(self.prop(device)), 0),
                       "cuMemGetAllocationGranularity")
            self.granularity[device] = g.value
        g = self.granularity[device]
        return max(g, (nbytes + g - 1) // g * g)


_driver = None


def driver():
    global _driver
    if _driver is None:
        torch.cuda.init()  # the primary context torch uses is current for the driver calls below
        _driver = _Driver()
    return _driver


class VmmBuffer:
    """One mapped VMM allocation. create() makes a new exportable one; open() imports an fd."""

    def __init__(self, handle, ptr, size, device):
        self.handle, self.ptr, self.size, self.device = handle, ptr, size, device
        self.fd = None  # its shareable handle, exported once (export_fd)

    @classmethod
    def create(cls, nbytes, device):
        d = driver()
        torch.cuda.set_device(device)  # the driver calls below need torch's context current in this thread
        size = d.round_up(nbytes, device)
        handle = ctypes.c_ulonglong()
        args = (ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(d.prop(device)), ctypes.c_ulonglong(0))
        if d.lib.cuMemCreate(*args) != 0:
            # torch's caching allocator keeps what it freed, the hand-over pool its idle buffers;
            # VMM allocations come from outside both
            release_cached(torch.device("cuda", device))
            d.check(d.lib.cuMemCreate(*args), "cuMemCreate")
        return cls._mapped(handle, size, device, PROT_READWRITE)

    @classmethod
    def open(cls, fd, nbytes, device, access):
        d = driver()
        torch.cuda.set_device(device)
        size = d.round_up(nbytes, device)
        handle = ctypes.c_ulonglong()
        d.check(d.lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD),
                "cuMemImportFromShareableHandle")
        return cls._mapped(handle, size, device, access)

    @classmethod
    def _mapped(cls, handle, size, device, access):
        d = driver()
        ptr = ctypes.c_ulonglong()
        try:
            d.check(d.lib.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                              ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
            d.check(d.lib.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0)),
                    "cuMemMap (is the allocation smaller than its description?)")
            acc = _Access()
            acc.location.type, acc.location.id, acc.flags = _DEVICE, device, access
            d.check(d.lib.cuMemSetAccess(ptr, ctypes.c_size_t(size), ctypes.byref(acc), ctypes.c_size_t(1)),
                    "cuMemSetAccess")
        except VmmError:
            d.lib.cuMemRelease(handle)
            raise
        return cls(handle, ptr.value, size, device)

    def export_fd(self):
        """A new descriptor of the allocation (the caller closes it): exported from the driver
        once, duplicated for each later hand-over of a pooled buffer."""
        if self.fd is None:
            fd = ctypes.c_int(-1)
            d = driver()
            d.check(d.lib.cuMemExportToShareableHandle(ctypes.byref(fd), self.handle, _POSIX_FD,
                                                       ctypes.c_ulonglong(0)), "cuMemExportToShareableHandle")
            self.fd = fd.value
        return os.dup(self.fd)

    def tensor(self, dtype, shape):
        """A tensor over the mapping (no copy); valid while this buffer is open."""
        numel = 1
        for s in shape:
            numel *= s
        iface = {"shape": (numel,), "typestr": "|u1", "data": (self.ptr, False), "version": 3, "strides": None}
        holder = type("VmmView", (), {"__cuda_array_interface__": {**iface, "shape": (self.size,)}})()
        raw = torch.as_tensor(holder, device=f"cuda:{self.device}")
        esize = torch.empty((), dtype=dtype).element_size()
        return raw[: numel * esize].view(dtype).view(shape)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.handle is None:
            return
        d = driver()
        torch.cuda.set_device(self.device)
        torch.cuda.synchronize(self.device)
        d.lib.cuMemUnmap(ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
        d.lib.cuMemAddressFree(ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
        d.lib.cuMemRelease(self.handle)
        self.handle = None


# --- the worker's hand-over buffers, pooled ------------------------------------------------------
#
# Every input the worker hands a candidate was a fresh VMM allocation (cuMemCreate, reserve, map,
# set access, export), unmapped and released again once the candidate was done with it: seven
# driver calls and a device synchronisation per tensor and set, work the driver does under its
# own locks. Pooled, a job's later sets reuse the buffers its earlier ones were handed in (the
# candidate's own process mapped them already), and once its candidate is gone a job's buffers
# serve the next jobs. Never another job's while its candidate may still run: an importer can
# raise its access to read-write (bench/results/gpu_worker_probe), so a buffer still mapped by a
# live candidate handed to another job would let the one write the other's inputs.

POOL_SHARE = 0.02  # of the device's memory: idle hand-over buffers the worker keeps (drained when short)


def pool_enabled():
    """Off unless KJUDGE_VMM_POOL=1: the pool has not yet run on a GPU (bench/driver_calls measures
    it first); off, every hand-over makes and releases its buffer."""
    return os.environ.get("KJUDGE_VMM_POOL", "0") == "1"


class BufferPool:
    """Idle buffers (anything with `size` and `close()`) by exact size, at most `capacity` bytes
    together; the least recently given back go first when a new one needs the room."""

    def __init__(self, capacity):
        self.capacity = int(capacity)
        self.idle = []  # oldest first
        self.bytes = 0
        self.lock = threading.Lock()
        self.made = self.reused = 0

    def take(self, size):
        with self.lock:
            for i in range(len(self.idle) - 1, -1, -1):
                if self.idle[i].size == size:
                    self.bytes -= size
                    self.reused += 1
                    return self.idle.pop(i)
        return None

    def give(self, buf):
        closing = [buf]
        with self.lock:
            if buf.size <= self.capacity:
                closing = []
                while self.idle and self.bytes + buf.size > self.capacity:
                    old = self.idle.pop(0)
                    self.bytes -= old.size
                    closing.append(old)
                self.idle.append(buf)
                self.bytes += buf.size
        for b in closing:
            b.close()

    def drain(self):
        with self.lock:
            idle, self.idle, self.bytes = self.idle, [], 0
        for b in idle:
            b.close()


class HandOvers:
    """The buffers one job hands its candidate: reused for the job's later sets, then (`retire`)
    given to the worker's pool if the candidate's process is gone, else closed. `pool` None: no
    pooling (each buffer closed when given back)."""

    def __init__(self, pool):
        self.pool = pool
        self.idle = []
        self.open = pool is not None
        self.lock = threading.Lock()
        self.made = self.reused = 0

    def take(self, size):
        if not self.open:
            return None
        with self.lock:
            for i in range(len(self.idle) - 1, -1, -1):
                if self.idle[i].size == size:
                    self.reused += 1
                    return self.idle.pop(i)
        buf = self.pool.take(size)
        if buf is not None:
            self.reused += 1
        return buf

    def give(self, buf):
        with self.lock:
            if self.open:
                self.idle.append(buf)
                return
        buf.close()

    def retire(self, candidate_gone):
        """The job is over: its idle buffers to the worker's pool where no process of its candidate
        can still map them (kjudged asks for `results` once the candidate's sandbox is gone), else
        closed; buffers given back later are closed."""
        with self.lock:
            idle, self.idle, self.open = self.idle, [], False
        for b in idle:
            if candidate_gone and self.pool is not None:
                self.pool.give(b)
            else:
                b.close()

    def counts(self):
        return {"made": self.made, "reused": self.reused}


_pool = None
_pool_lock = threading.Lock()


def hand_over_pool(device):
    """The process's pool of idle hand-over buffers for `device` (None: off, or not a GPU)."""
    global _pool
    if device.type != "cuda" or not pool_enabled():
        return None
    with _pool_lock:
        if _pool is None:
            total = torch.cuda.get_device_properties(device).total_memory
            _pool = BufferPool(int(os.environ.get("KJUDGE_VMM_POOL_BYTES", POOL_SHARE * total)))
        return _pool


# --- host: sealed memfd -------------------------------------------------------------------------

class HostBuffer:
    def __init__(self, mm, size):
        self.mm, self.size = mm, size

    @staticmethod
    def create_fd(t):
        """A sealed memfd holding t's bytes."""
        data = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
        fd = os.memfd_create("kjudge-tensor", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.write(fd, memoryview(data)) if data.nbytes else None
            written = data.nbytes
            while written < data.nbytes:  # pragma: no cover - os.write of a large buffer may be partial
                written += os.write(fd, memoryview(data)[written:])
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW |
                        fcntl.F_SEAL_SEAL)
        except OSError:
            os.close(fd)
            raise
        return fd

    @classmethod
    def open(cls, fd, nbytes, private):
        size = os.fstat(fd).st_size
        if size < nbytes:
            raise ValueError(f"the shared buffer has {size} bytes, its description says {nbytes}")
        if nbytes == 0:
            return cls(None, 0)
        prot = mmap.PROT_READ | mmap.PROT_WRITE if private else mmap.PROT_READ
        flags = mmap.MAP_PRIVATE if private else mmap.MAP_SHARED
        return cls(mmap.mmap(fd, nbytes, flags=flags, prot=prot), nbytes)

    def tensor(self, dtype, shape):
        if self.mm is None:
            return torch.empty(shape, dtype=dtype)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # frombuffer warns on a read-only buffer; the worker never writes it
            return torch.frombuffer(self.mm, dtype=dtype).view(shape)

    def close(self):
        self.mm = None  # the mapping goes with its last tensor


def release_cached(device):
    """Give torch's cached free blocks and the pool's idle hand-over buffers back to the device
    (the worker's VMM copies and the candidates' processes allocate outside this process's cache)."""
    if device.type == "cuda":
        if _pool is not None:
            _pool.drain()
        torch.cuda.empty_cache()


def export(t, hand_overs=None):
    """(fd, holder) for a shared copy of t; holder must stay open until the peer is done.
    hand_overs (the worker's HandOvers of the job): a buffer of the right size from the job's or
    the worker's idle ones if there is one (the holder then goes back through hand_overs.give)."""
    if t.device.type == "cuda":
        nbytes = t.numel() * t.element_size()
        device = t.device.index or 0
        buf = None
        if hand_overs is not None:
            buf = hand_overs.take(driver().round_up(nbytes, device))
        if buf is None:
            buf = VmmBuffer.create(nbytes, device)
            if hand_overs is not None:
                hand_overs.made += 1
        buf.tensor(t.dtype, t.shape).copy_(t)
        torch.cuda.synchronize(t.device)  # the peer reads it as soon as it has the fd
        return buf.export_fd(), buf
    return HostBuffer.create_fd(t), None


def open_shared(fd, desc, device, mode):
    """The peer's tensor behind fd (closes fd). mode: "read" (the worker reading a candidate's
    output: read-only), "input" (a candidate's correctness inputs: read-only on the GPU,
    copy-on-write on the host), "own" (a candidate's timing copies: its own, writable)."""
    dtype, shape = dtype_of(desc["dtype"]), [int(s) for s in desc["shape"]]
    nbytes = torch.empty((), dtype=dtype).element_size()
    for s in shape:
        nbytes *= s
    try:
        if device.type == "cuda":
            buf = VmmBuffer.open(fd, nbytes, device.index or 0, PROT_READWRITE if mode == "own" else PROT_READ)
        else:
            buf = HostBuffer.open(fd, nbytes, private=mode != "read")
    finally:
        os.close(fd)
    return buf.tensor(dtype, shape), buf
