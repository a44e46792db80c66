"""The comparator's one pass over an output as one CUDA kernel: each element read once in its own
dtype and judged in float64 in registers, where the torch path (compare.py) makes some 35 float64
temporaries per chunk (bench/results/compare-cost-20261128-h200: 27x one read of both tensors).
Compiled from source by NVRTC (the library torch's wheels ship) and loaded through the driver, as
the launch cover is (kjudge_protocol/launch_cover.py): no build step, no compiler process, so it
works in the worker's sandbox. Every function returns None where it cannot run (no CUDA tensor, a
dtype it does not read, no NVRTC, a driver that refuses the PTX): the caller then takes the torch
path. compare.py checks the two paths agree on every (device, dtype) before this one is used."""
import ctypes
import glob
import os
import sys

import torch

from kjudge_protocol import ptx_module

THREADS = 256
PER_THREAD = 16
ITEMS = THREADS * PER_THREAD  # elements per block: a block's partial row covers these
KINDS = {torch.float32: ("float", "f32"), torch.float64: ("double", "f64"),
         torch.float16: ("kj_h16", "f16"), torch.bfloat16: ("kj_b16", "bf16")}

SOURCE = r"""
struct kj_h16 { unsigned short b; };
struct kj_b16 { unsigned short b; };
__device__ __forceinline__ double kj_ld(const float* p, long long i) { return (double)p[i]; }
__device__ __forceinline__ double kj_ld(const double* p, long long i) { return p[i]; }
__device__ __forceinline__ double kj_ld(const kj_h16* p, long long i) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i].b)); return (double)f;
}
__device__ __forceinline__ double kj_ld(const kj_b16* p, long long i) {
  return (double)__uint_as_float(((unsigned)p[i].b) << 16);
}
__device__ __forceinline__ double kj_warp_sum(double v) {
  for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double kj_warp_max(double v) {
  for (int o = 16; o; o >>= 1) v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}
// the block's partial row: [wrong, NaN given where wrong, Inf given where wrong, max finite |a - e|,
// max finite |a - e| / |e| (e != 0), wrong where either side is not finite] (compare.py's tallies)
template <int K>
__device__ void kj_store(double (&v)[K], double* out, const bool* is_max) {
  __shared__ double part[K][THREADS / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = 0; k < K; ++k) {
    const double r = is_max[k] ? kj_warp_max(v[k]) : kj_warp_sum(v[k]);
    if (lane == 0) part[k][warp] = r;
  }
  __syncthreads();
  if (threadIdx.x < K) {
    double r = 0.0;
    for (int w = 0; w < THREADS / 32; ++w)
      r = is_max[threadIdx.x] ? fmax(r, part[threadIdx.x][w]) : r + part[threadIdx.x][w];
    out[(long long)blockIdx.x * K + threadIdx.x] = r;
  }
}
template <typename T>
__device__ void kj_tally(const T* e, const T* a, long long n, double floor, double rtol, int nan_equal, double* out) {
  double v[6] = {0, 0, 0, 0, 0, 0};
  const long long base = (long long)blockIdx.x * (THREADS * PER_THREAD) + threadIdx.x;
  for (int j = 0; j < PER_THREAD; ++j) {
    const long long i = base + (long long)j * THREADS;
    if (i >= n) break;
    const double x = kj_ld(e, i), y = kj_ld(a, i);
    const bool fin = isfinite(x) && isfinite(y);
    bool ok = isinf(x) && y == x;
    if (nan_equal) ok = ok || (isnan(x) && isnan(y));
    const double d = fabs(y - x);
    const double lim = __dadd_rn(__dmul_rn(fabs(x), rtol), floor);  // rounded as torch's mul_ then add_
    ok = ok || (fin && d <= lim);
    if (!ok) { v[0] += 1; v[1] += isnan(y); v[2] += isinf(y); v[5] += !fin; }
    if (fin) { v[3] = fmax(v[3], d); if (x != 0) v[4] = fmax(v[4], d / fabs(x)); }
  }
  const bool is_max[6] = {false, false, false, true, true, false};
  kj_store<6>(v, out, is_max);
}
template <typename T>
__device__ void kj_absmax(const T* e, long long n, double* out) {
  double v[1] = {0};
  const long long base = (long long)blockIdx.x * (THREADS * PER_THREAD) + threadIdx.x;
  for (int j = 0; j < PER_THREAD; ++j) {
    const long long i = base + (long long)j * THREADS;
    if (i >= n) break;
    const double x = kj_ld(e, i);
    if (isfinite(x)) v[0] = fmax(v[0], fabs(x));
  }
  const bool is_max[1] = {true};
  kj_store<1>(v, out, is_max);
}
"""

_ENTRY = r"""
extern "C" __global__ void kj_tally_{name}(const {t}* e, const {t}* a, long long n, double floor, double rtol,
                                          int nan_equal, double* out) {{ kj_tally<{t}>(e, a, n, floor, rtol, nan_equal, out); }}
extern "C" __global__ void kj_absmax_{name}(const {t}* e, long long n, double* out) {{ kj_absmax<{t}>(e, n, out); }}
"""


def source():
    head = f"#define THREADS {THREADS}\n#define PER_THREAD {PER_THREAD}\n"
    return head + SOURCE + "".join(_ENTRY.format(t=t, name=name) for t, name in KINDS.values())


def _nvrtc():
    """NVRTC of torch's CUDA major version: already loaded by torch, on the loader's path, or in
    the nvidia wheels beside torch."""
    major = (torch.version.cuda or "0").split(".")[0]
    names = [f"libnvrtc.so.{major}", "libnvrtc.so"]
    for base in sys.path:
        names += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", f"libnvrtc.so.{major}*")))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def compile_ptx(arch, nvrtc=None):
    """PTX of source() for compute_<arch>, or None (with NVRTC's log on stderr). nvrtc: the
    library to use (default: torch's)."""
    nvrtc = nvrtc or _nvrtc()
    if nvrtc is None:
        return None
    prog = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source().encode(), b"kj_compare.cu", 0, None, None) != 0:
        return None
    try:
        opts = [f"--gpu-architecture=compute_{arch}".encode(), b"--fmad=false"]
        if nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts)) != 0:
            size = ctypes.c_size_t()
            nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetProgramLog(prog, log)
            print("compare_kernel: NVRTC failed: " + log.value.decode(errors="replace")[-2000:], file=sys.stderr)
            return None
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.value
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))


def kernels(device):
    """(libcuda, {entry: function}) of the comparator's module on `device`, or None."""
    entries = [f"kj_{k}_{name}" for _, name in KINDS.values() for k in ("tally", "absmax")]
    return ptx_module.functions("compare_kernel", device, lambda: _ptx_for(device), entries)


def _ptx_for(device):
    major, minor = torch.cuda.get_device_capability(device)
    return compile_ptx(f"{major}{minor}")


def usable(*tensors):
    return all(t.is_cuda and t.dtype in KINDS and t.is_contiguous() for t in tensors) and \
        len({(t.dtype, t.device) for t in tensors}) == 1


def _launch(entry, t, args, rows, width):
    """Runs `entry` over t's elements, one block per ITEMS, into a (rows, width) float64 tensor of
    zeros (rows >= the blocks: zeros are every tally's neutral value). None if it could not."""
    loaded = kernels(t.device)
    if loaded is None:
        return None
    cuda, fns = loaded
    with torch.cuda.device(t.device):
        out = torch.zeros(rows, width, dtype=torch.float64, device=t.device)
        blocks = -(-t.numel() // ITEMS)
        if blocks == 0:
            return out
        vals = [*args, ctypes.c_void_p(out.data_ptr())]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        stream = ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)
        if cuda.cuLaunchKernel(fns[entry], blocks, 1, 1, THREADS, 1, 1, 0, stream, params, None) != 0:
            return None
        return out


def finite_abs_max(expected):
    """Device scalar: the largest finite |expected| (0 when none), or None."""
    if not usable(expected):
        return None
    name = KINDS[expected.dtype][1]
    n = expected.numel()
    out = _launch(f"kj_absmax_{name}", expected, [ctypes.c_void_p(expected.data_ptr()), ctypes.c_longlong(n)],
                  max(1, -(-n // ITEMS)), 1)
    return None if out is None else out.max()


def chunk_tallies(expected, actual, floor, rtol, nan_equal, chunk):
    """(chunks, 6) float64 device tensor: compare.py's tallies per chunk of `chunk` elements, or
    None (also when `chunk` is not a whole number of blocks)."""
    if chunk % ITEMS or not usable(expected, actual):
        return None
    n = expected.numel()
    per_chunk, chunks = chunk // ITEMS, -(-n // chunk)
    args = [ctypes.c_void_p(expected.data_ptr()), ctypes.c_void_p(actual.data_ptr()), ctypes.c_longlong(n),
            ctypes.c_double(floor), ctypes.c_double(rtol), ctypes.c_int(1 if nan_equal else 0)]
    out = _launch(f"kj_tally_{KINDS[expected.dtype][1]}", expected, args, chunks * per_chunk, 6)
    if out is None:
        return None
    parts = out.view(chunks, per_chunk, 6)
    return torch.cat([parts[:, :, :3].sum(1), parts[:, :, 3:5].amax(1), parts[:, :, 5:].sum(1)], 1)
