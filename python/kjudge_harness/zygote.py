"""The harness zygote: python3 -s -m kjudge_harness.zygote, started by kjudged (one per node) as
a resume zygote of libkjsandbox (sandbox/include/kjsandbox/sandbox.h).

It imports torch and every harness role once, never initialises CUDA, then serves launches.
Each launch is a fresh process that libkjsandbox clones into its own sandbox exactly as it would
for an exec'd interpreter (namespaces, root view, ids, rlimits, no_new_privs, seccomp, the job's
cgroup); instead of exec'ing `python3 -s -m kjudge_harness <role> <request> <report>`, that
process comes back here and runs the role with the job's argv and environment. What each
candidate saves is the interpreter start and the torch import (~4.6 s on the GPU node).

This process holds nothing of any job or tenant: every sandbox starts as a copy of it."""
import ctypes
import os
import signal
import sys
import threading
import traceback

from . import phases

IN_SANDBOX = "/opt/kjudge/python"  # where kjudged binds the harness (harness_step.h)
ROLE_PREFIX = ["-s", "-m", "kjudge_harness"]  # argv[1:4] of every role kjudged launches


def preload():
    """Everything a role imports, so a resumed role imports nothing of its own (the harness is
    at another path inside the sandbox) and little of torch's; and the first use of the
    dispatch-mode recorder, which costs seconds of lazy imports in every candidate otherwise."""
    import torch
    # cpp_extension asks torch.cuda.is_available() at import (only to warn when CUDA_HOME has no
    # runtime): that initialises the CUDA driver, which no process forked from here could use.
    is_available = torch.cuda.is_available
    torch.cuda.is_available = lambda: True
    try:
        import torch.utils.cpp_extension  # noqa: F401 - the build roles
    finally:
        torch.cuda.is_available = is_available
    from . import __main__, build, candidate, diagnosis, pch, trace  # noqa: F401
    with torch.no_grad(), trace.OpRecorder():
        trace._sentinel()
        (torch.ones(4) * 2 + 1).relu().sum()


def other_threads():
    """Names of this process's threads but the calling one."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != threading.get_native_id():
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    names.append(f.read().strip())
            except OSError:
                names.append(tid)
    return names


def main():
    log = os.environ.get("KJUDGE_ZYGOTE_LOG")
    if log:  # its stdio is /dev/null: why it did not serve goes to the node's state dir
        os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
    preload()
    extra = other_threads()
    if extra:
        # a clone copies one thread: a lock another thread holds would stay held in every job
        sys.exit(f"kjudge_harness.zygote: threads started at import ({', '.join(extra)}); not serving")
    lib = ctypes.PyDLL(os.environ["KJUDGE_RESUME_LIB"])  # PyDLL: the GIL stays held
    lib.kjsbx_resumed_item.restype = ctypes.c_char_p
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if lib.kjsbx_resume_serve() != 1:
        sys.exit("kjudge_harness.zygote: not started as a zygote")
    status = 1
    try:
        status = resumed(lib)
    except BaseException:  # noqa: BLE001 - a resumed role never unwinds into the zygote's code
        traceback.print_exc()
    finally:
        os._exit(status)


def resumed(lib):
    """In a sandboxed command: becomes the role kjudged asked for; returns its exit status."""
    ctypes.pythonapi.PyOS_AfterFork_Child()
    argv = [lib.kjsbx_resumed_item(0, i).decode() for i in range(lib.kjsbx_resumed_count(0))]
    env = [lib.kjsbx_resumed_item(1, i).decode() for i in range(lib.kjsbx_resumed_count(1))]
    host_dir = os.environ.get("KJUDGE_HARNESS_HOST_DIR", "")
    os.environ.clear()
    os.environ.update(kv.split("=", 1) for kv in env if "=" in kv)
    sys.path[:] = [IN_SANDBOX if p == host_dir else p for p in sys.path]
    # packages imported from the host path find their submodules through __path__, not sys.path
    for module in list(sys.modules.values()):
        paths = getattr(module, "__path__", None)
        if host_dir and isinstance(paths, list):
            paths[:] = [IN_SANDBOX + p[len(host_dir):] if p.startswith(host_dir + "/") else p for p in paths]
    # what an interpreter's own start-up sets (the sandbox reset every handler to the default)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if argv[1:4] != ROLE_PREFIX or len(argv) != 7:
        print(f"kjudge_harness.zygote: not a harness role: {argv!r}", file=sys.stderr)
        return 127
    sys.argv = ["kjudge_harness"] + argv[4:]
    phases.restart()
    from .__main__ import main as role_main
    try:
        return role_main(sys.argv)
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()


if __name__ == "__main__":
    main()
