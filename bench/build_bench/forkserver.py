"""The build benchmark's stand-in for kjudged's harness zygote: imports torch and every harness
role once (kjudge_harness.zygote.preload, the zygote's own preload), then runs each role it is
sent in a forked child, as a resumed role does, without the sandbox.

Protocol, one JSON object per line: in {"id", "argv": [role, request, report], "env", "log"}; out
{"id", "wall", "cpu", "rc"} when that child ends (wall from fork to exit, CPU from wait4's rusage
of the child and everything it ran). Children run concurrently."""
import json
import os
import sys
import threading
import time

from kjudge_harness import __main__ as harness_main
from kjudge_harness import phases, zygote

_lock = threading.Lock()


def reply(msg):
    with _lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def child(job):
    # another thread may hold the server's stdout at the fork: the child gets its own
    out = os.open(job.get("log", os.devnull), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    sys.stdout = sys.stderr = os.fdopen(1, "w", buffering=1, closefd=False)
    os.environ.clear()
    os.environ.update(job["env"])
    phases.restart()  # as a resumed role: its clock starts now
    try:
        rc = harness_main.main(["kjudge_harness"] + job["argv"])
    except BaseException:  # noqa: BLE001 - a child never returns into the server's loop
        rc = 1
    sys.stdout.flush()
    os._exit(rc or 0)


def wait(job, pid, t0):
    _, status, ru = os.wait4(pid, 0)
    reply({"id": job["id"], "wall": time.perf_counter() - t0, "cpu": ru.ru_utime + ru.ru_stime,
           "rc": os.waitstatus_to_exitcode(status)})


def main():
    zygote.preload()
    reply({"ready": True})
    for line in sys.stdin:
        if line.strip():
            job = json.loads(line)
            t0 = time.perf_counter()
            pid = os.fork()  # in the main thread; the others only wait for children
            if pid == 0:
                child(job)
            threading.Thread(target=wait, args=(job, pid, t0), daemon=True).start()


if __name__ == "__main__":
    main()
