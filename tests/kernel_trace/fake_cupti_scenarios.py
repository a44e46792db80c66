"""Runs libkjudge_kernel_trace.so against fake_cupti.so in a fresh process (a libcupti already
loaded would be taken first) and checks what it records. Usage: fake_cupti_scenarios.py
<recorder.so> <fake_cupti.so>; exits non-zero with the failed check. Run by
tests/python/harness/test_kernel_trace_lib.py."""
import ctypes
import sys

DRIVER, RUNTIME = 1, 2
ENTER, EXIT = 0, 1
CU_LAUNCH_KERNEL, CU_LAUNCH_KERNEL_EX, CU_GRAPH_LAUNCH, CU_MULTI_DEVICE = 307, 652, 514, 480
CUDA_LAUNCH_KERNEL, CUDA_GRAPH_LAUNCH = 211, 311

lib = ctypes.CDLL(sys.argv[1])
fake = ctypes.CDLL(sys.argv[2])
lib.kjt_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
lib.kjt_name.restype = ctypes.c_char_p
lib.kjt_cupti_path.restype = ctypes.c_char_p
fake.fake_fire.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_uint64)]


def start():
    err = ctypes.create_string_buffer(256)
    rc = lib.kjt_start(sys.argv[2].encode(), err, 256)
    return rc, err.value.decode()


def fire(domain, cbid, site, symbol, params=None, corr=None):
    return fake.fake_fire(domain, cbid, site, symbol, params, ctypes.byref(corr if corr is not None else ctypes.c_uint64(0)))


def names():
    return [lib.kjt_name(i).decode() for i in range(lib.kjt_count())]


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


rc, err = start()
check(rc == 0, f"start with the fake: {err}")
check(lib.kjt_cupti_path().decode().endswith("fake_cupti.so"), "the hint was used")
check(start()[0] == -1 and "already started" in start()[1], "a second start is refused")
check(lib.kjt_name(0) is None, "no names while recording")

fire(DRIVER, CU_LAUNCH_KERNEL, ENTER, b"_Z6kernelPf")           # a driver launch
fire(DRIVER, CU_LAUNCH_KERNEL, EXIT, b"_Z6kernelPf")            # exits record nothing
corr = ctypes.c_uint64(0)
fire(RUNTIME, CUDA_LAUNCH_KERNEL, ENTER, b"_Z3fooi", corr=corr)  # a runtime launch ...
fire(DRIVER, CU_LAUNCH_KERNEL, ENTER, b"_Z3fooi")               # ... and the driver call beneath it
fire(RUNTIME, CUDA_LAUNCH_KERNEL, EXIT, b"_Z3fooi", corr=corr)
corr = ctypes.c_uint64(0)
fire(RUNTIME, CUDA_LAUNCH_KERNEL, ENTER, None, corr=corr)       # a runtime launch without a name:
fire(DRIVER, CU_LAUNCH_KERNEL_EX, ENTER, b"triton_poi_fused_add_0")  # the driver names it
fire(RUNTIME, CUDA_LAUNCH_KERNEL, EXIT, None, corr=corr)
fire(DRIVER, CU_LAUNCH_KERNEL, ENTER, None)                     # no name, no cuFuncGetName: unnamed
check(lib.kjt_count() == 3 and lib.kjt_unattributed() == 1, f"counts {lib.kjt_count()} {lib.kjt_unattributed()}")
fire(DRIVER, CU_GRAPH_LAUNCH, ENTER, None)                      # a graph launch: unnamed
corr = ctypes.c_uint64(0)
fire(RUNTIME, CUDA_GRAPH_LAUNCH, ENTER, None, corr=corr)         # once for the runtime's and the driver's
fire(DRIVER, CU_GRAPH_LAUNCH, ENTER, None)
fire(RUNTIME, CUDA_GRAPH_LAUNCH, EXIT, None, corr=corr)
check(lib.kjt_unattributed() == 3, f"graph launches: {lib.kjt_unattributed()}")
check(lib.kjt_stop() == 0, "stop")
check(names() == ["kernel(float*)", "foo(int)", "triton_poi_fused_add_0"], f"names {names()}")
check(fire(DRIVER, CU_LAUNCH_KERNEL, ENTER, b"_Z1gv") == 0, "unsubscribed at stop")
check(lib.kjt_stop() == -1, "a second stop is refused")

check(start()[0] == 0, "a new session")
check(lib.kjt_count() == 0 and lib.kjt_unattributed() == 0, "a new session starts empty")


class LaunchParams(ctypes.Structure):  # CUDA_LAUNCH_PARAMS
    _fields_ = [("function", ctypes.c_void_p), ("dims", ctypes.c_uint * 7), ("stream", ctypes.c_void_p),
                ("kernel_params", ctypes.c_void_p)]


class MultiDevice(ctypes.Structure):  # cuLaunchCooperativeKernelMultiDevice_params
    _fields_ = [("list", ctypes.POINTER(LaunchParams)), ("num", ctypes.c_uint), ("flags", ctypes.c_uint)]


launches = (LaunchParams * 2)(LaunchParams(0x1000), LaunchParams(0x2000))
multi = MultiDevice(launches, 2, 0)
fire(DRIVER, CU_MULTI_DEVICE, ENTER, b"_Z1kv", ctypes.addressof(multi))  # functions without names here
check(lib.kjt_count() == 0 and lib.kjt_unattributed() == 2, "multi-device: one unnamed launch per device")
corr = ctypes.c_uint64(0)
fire(RUNTIME, CUDA_LAUNCH_KERNEL, ENTER, None, corr=corr)       # nameless, and no driver callback beneath
fire(RUNTIME, CUDA_LAUNCH_KERNEL, EXIT, None, corr=corr)
check(lib.kjt_count() == 0 and lib.kjt_unattributed() == 3, "a runtime launch nobody named is unattributed")
corr = ctypes.c_uint64(0)
fire(RUNTIME, CUDA_LAUNCH_KERNEL, ENTER, b"_Z1av", corr=corr)   # left open when the session ends
lib.kjt_stop()
check(start()[0] == 0, "a third session")
fire(DRIVER, CU_LAUNCH_KERNEL, ENTER, b"_Z1bv")                 # not skipped: the open call was the last session's
lib.kjt_stop()
check(names() == ["b()"], f"per-session runtime depth: {names()}")

fake.fake_set_subscribe_result(39)
rc, err = start()
check(rc == -1 and "MULTIPLE_SUBSCRIBERS" in err, f"another subscriber: {err}")
print("ok")
