"""nvcc with the host and device halves of a .cu compiled side by side (load_inline's nvcc in
the build role, through PYTORCH_NVCC).

nvcc runs its steps one after another: host preprocess, cudafe++, device preprocess, cicc, ptxas,
fatbinary, host compile. The only link between the host half (preprocess, cudafe++) and the
device half (preprocess, cicc, ptxas, fatbinary) is the module id that cudafe++ writes and cicc
reads; cicc computes the same id itself when asked to (--gen_module_id_file). So this runs the
very commands `nvcc --dryrun` lists, the two halves at once, with cicc computing its own id, and
compares the two ids before the host compile: equal, the result is nvcc's; different, cicc runs
again with cudafe++'s id, as nvcc would have run it. A torch-heavy .cu takes the time of the
longer half plus the host compile instead of the sum (issue 13: 34 s of nvcc on the H200 node).

Output and exit status are nvcc's: the steps' messages in nvcc's order, up to the first step that
failed. Anything but a plain one-object compile (the dependency file excepted, made by the host
preprocess) is handed to nvcc itself. Standard library only: this runs as a script, without torch.

Env: KJUDGE_REAL_NVCC (the nvcc load_inline would run), KJUDGE_BUILD_MEMORY_BYTES (the build
sandbox's memory limit: MemoryGuard), KJUDGE_NVCC_STEP_LOG (optional: one JSON
line per compile: each step's tool, wall and CPU seconds, peak memory in MiB and start in
seconds after the compile's)."""
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
DEPENDENCY_FLAGS = {"--generate-dependencies-with-compile", "-MD"}
DEPENDENCY_OUTPUT = {"--dependency-output", "-MF"}


class Step:
    def __init__(self, command):
        self.command = command
        self.words = shlex.split(command)
        self.tool = os.path.basename(self.words[0]) if self.words else ""
        self.output, self.rc, self.started, self.seconds, self.cpu, self.max_rss_mb = b"", None, 0.0, 0.0, 0.0, 0.0
        self.proc, self.stopped = None, False

    def value(self, flag):
        return self.words[self.words.index(flag) + 1] if flag in self.words[:-1] else None

    def run(self, env):
        if self.stopped:
            return False
        start = self.started = time.perf_counter()
        proc = self.proc = subprocess.Popen(["/bin/sh", "-c", self.command], env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        if self.stopped:  # stop() came between the check above and the start
            self.stop()
        self.output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = self.rc = os.waitstatus_to_exitcode(status)
        self.seconds = time.perf_counter() - start
        self.cpu, self.max_rss_mb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
        return self.rc == 0

    def stop(self):
        """Kills the step (its shell and the tool) and keeps it from starting."""
        self.stopped = True
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def killed(self):
        """By a signal (the build's memory limit, say): itself, or under the shell that ran it."""
        return self.rc is not None and (self.rc < 0 or self.rc == 128 + 9)


class Plan:
    """nvcc's steps split into the host half, the device half and what follows both."""

    def __init__(self, env, host, device, final, module_id, device_ids):
        self.env, self.host, self.device, self.final = env, host, device, final
        self.module_id, self.device_ids = module_id, device_ids
        self.again_seconds = 0.0  # the device half's second run, after the host half


def without_dependency_flags(args):
    """(args, dependency file or None); None args: a dependency mode this does not handle."""
    out, depfile, skip = [], None, False
    for i, a in enumerate(args):
        if skip:
            skip = False
        elif a in DEPENDENCY_FLAGS:
            continue
        elif a in DEPENDENCY_OUTPUT and i + 1 < len(args):
            depfile, skip = args[i + 1], True
        elif a.startswith(("-M", "--generate-dependencies", "--dependency")):
            return None, None
        else:
            out.append(a)
    return out, depfile


def dry_run(nvcc, args, keep_dir):
    """(environment assignments, commands) of `nvcc --dryrun`, or None when it fails."""
    proc = subprocess.run([nvcc] + args + ["--dryrun", "--keep", "--keep-dir", keep_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        return None
    env, commands = {}, []
    for line in proc.stderr.splitlines():
        if not line.startswith("#$ "):
            continue
        text = line[3:].strip()
        m = ASSIGNMENT.match(text)
        if m and not commands:
            words = shlex.split(m.group(2)) if m.group(2).strip() else [""]
            env[m.group(1)] = words[0] if len(words) == 1 else m.group(2)
        else:
            commands.append(text)
    return env, commands


def plan(nvcc, args, keep_dir):
    """The Plan for `nvcc args`, or None when its steps are not the shape described above."""
    args, depfile = without_dependency_flags(args)
    if args is None or "-c" not in args or "-o" not in args[:-1]:
        return None
    listed = dry_run(nvcc, args, keep_dir)
    if listed is None:
        return None
    assignments, commands = listed
    steps = [Step(c) for c in commands]
    if not steps or any(s.command.startswith("--") or not s.words for s in steps):
        return None  # nvcc's internal steps (its own dependency filter): not ours to run
    cudafe = [s for s in steps if s.tool == "cudafe++"]
    if len(cudafe) != 1 or "--gen_module_id_file" not in cudafe[0].words:
        return None
    cudafe = cudafe[0]
    module_id, host_c = cudafe.value("--module_id_file_name"), cudafe.value("--gen_c_file_name")
    host_pre = [s for s in steps if "-E" in s.words and s.value("-o") == cudafe.words[-1]]
    final = steps[-1]
    if len(host_pre) != 1 or not module_id or host_c not in final.words or "-c" not in final.words:
        return None
    device = [s for s in steps if s not in (host_pre[0], cudafe, final)]
    device_ids = []
    for s in device:
        if s.tool == "cicc" and s.value("--module_id_file_name") == module_id:
            own = f"{module_id}.device{len(device_ids)}"
            device_ids.append(own)
            s.parallel = Step(s.command.replace(f'--module_id_file_name "{module_id}"',
                                                f'--gen_module_id_file --module_id_file_name "{own}"'))
    if not device_ids or any(getattr(s, "parallel", None) and s.parallel.command == s.command for s in device):
        return None
    if depfile:  # what nvcc's own dependency filter gives ninja: the object's headers
        host_pre[0] = Step(host_pre[0].command + " -MD -MF " + shlex.quote(depfile) + " -MT "
                           + shlex.quote(args[args.index("-o") + 1]))
    env = dict(os.environ, **assignments)
    return Plan(env, [host_pre[0], cudafe], device, final, module_id, device_ids)


def run_chain(steps, env):
    for s in steps:
        if not s.run(env):
            return False
    return True


def same_ids(p):
    try:
        with open(p.module_id, "rb") as f:
            host = f.read()
        for own in p.device_ids:
            with open(own, "rb") as f:
                if f.read() != host:
                    return False
        return True
    except OSError:
        return False


def failed(steps):
    """nvcc's exit status: that of the first step, in its order, that failed."""
    return next((s.rc for s in steps if s.rc), 0)


def execute(p):
    """Runs the plan; (exit status, the steps in nvcc's order as they ran, why the device half ran
    again after the host half: "" none, "module_id", "memory")."""
    parallel_device = [getattr(s, "parallel", s) for s in p.device]
    guard = MemoryGuard.from_env(parallel_device)
    device_ok = []
    t = threading.Thread(target=lambda: device_ok.append(run_chain(parallel_device, p.env)))
    t.start()
    host_ok = run_chain(p.host, p.env) if guard is None else guard.watch(lambda: run_chain(p.host, p.env))
    t.join()
    ran = p.host + parallel_device
    again = "memory" if guard and guard.tripped else "module_id" if host_ok and device_ok[0] and not same_ids(p) else ""
    if not host_ok:
        return failed(p.host), p.host, again
    if again:  # the device half as nvcc runs it, after the host half: cudafe++'s id, one front end at a time
        device = [Step(s.command) for s in p.device]
        ran = p.host + device
        ok = run_chain(device, p.env)
        p.again_seconds = sum(s.seconds for s in device)
        if not ok:
            return failed(ran), ran, again
    elif not device_ok[0]:
        return failed(ran), ran, again
    p.final.run(p.env)
    return p.final.rc, ran + [p.final], again


class MemoryGuard:
    """Two front ends at once need about twice the memory of nvcc's one. The build's memory limit
    (KJUDGE_BUILD_MEMORY_BYTES, its cgroup's) must judge the candidate's build as nvcc runs it, so
    while the host half runs, the sandbox's processes are measured (proportional set size, every
    process in /proc, which in the build sandbox is its own pid namespace) and the device half is
    stopped when they near the limit; it then runs after the host half, as in nvcc."""

    PERIOD_S = 0.1

    def __init__(self, limit, device_steps):
        self.threshold = limit - max(512 << 20, limit // 8)  # room for 100 ms of growth
        self.device_steps, self.tripped = device_steps, False

    @classmethod
    def from_env(cls, device_steps):
        limit = int(os.environ.get("KJUDGE_BUILD_MEMORY_BYTES", "0") or 0)
        return cls(limit, device_steps) if limit > 0 else None

    def watch(self, host_half):
        stop = threading.Event()
        t = threading.Thread(target=self.poll, args=(stop,))
        t.start()
        try:
            return host_half()
        finally:
            stop.set()
            t.join()

    def poll(self, stop):
        while not stop.wait(self.PERIOD_S):
            if all(s.rc is not None for s in self.device_steps):
                return  # the device half is done: only nvcc's own steps remain
            if processes_memory() > self.threshold:
                self.tripped = True
                for s in self.device_steps:
                    s.stop()
                return


def processes_memory():
    """Bytes of memory the processes in /proc hold, shared pages counted once (Pss)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/smaps_rollup") as f:
                total += next((int(line.split()[1]) << 10 for line in f if line.startswith("Pss:")), 0)
        except (OSError, ValueError):
            continue
    return total


def parallel_was_the_cause(steps):
    """A step killed from outside while the halves ran side by side (the memory guard stops the
    device half itself): the compile is nvcc's own to decide, not this one's."""
    return any(s.killed() and not s.stopped for s in steps)


def report(steps):
    """nvcc's messages: each step's output in nvcc's order, up to the first that failed."""
    for s in steps:
        if s.rc is None:
            break
        sys.stderr.buffer.write(s.output)
        if s.rc != 0:
            break
    sys.stderr.flush()


def log(path, status, steps, start, again, args):
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    source = next((os.path.basename(a) for a in args if a.endswith(".cu")), "?")
    rec = {"tu": source, "status": status, "wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime,
           "device_half_again": again[0], "again_seconds": round(again[1], 3),
           "steps": [[s.tool, round(s.seconds, 3), round(s.cpu, 3), round(s.max_rss_mb), round(s.started - start, 3)]
                     for s in steps if s.rc is not None]}
    try:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
    except OSError:
        pass  # a record nobody can write costs the compile nothing


def environment(cuda_home, python):
    """What load_inline needs to run nvcc through this script (PYTORCH_NVCC is its ninja file's
    nvcc command): {} where there is no nvcc or the candidate chose its own nvcc command."""
    if os.environ.get("KJUDGE_NVCC_STEPS", "1") == "0" or "PYTORCH_NVCC" in os.environ or not cuda_home:
        return {}
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    # the package's __path__, not __file__: a role resumed from the zygote sees the harness at
    # another path (zygote.py rewrites __path__)
    script = os.path.join(sys.modules[__package__].__path__[0], "nvcc_steps.py")
    return {"PYTORCH_NVCC": f"{shlex.quote(python)} -s {shlex.quote(script)}", "KJUDGE_REAL_NVCC": nvcc}


def main(argv):
    nvcc = os.environ.get("KJUDGE_REAL_NVCC") or shutil.which("nvcc") or "nvcc"
    args = argv[1:]
    if "-c" not in args or "-o" not in args[:-1]:
        return subprocess.run([nvcc] + args).returncode
    out = args[args.index("-o") + 1]
    keep_dir = tempfile.mkdtemp(prefix=".nvcc-steps.", dir=os.path.dirname(os.path.abspath(out)))
    try:
        start = time.perf_counter()
        try:
            p = plan(nvcc, args, keep_dir)
            status, steps, again = execute(p) if p else (None, [], "")
        except Exception:  # noqa: BLE001 - a fault of this script is never the candidate's compile error
            p = None
        if p is None or (status != 0 and parallel_was_the_cause(steps)):
            return subprocess.run([nvcc] + args).returncode
        report(steps)
        if os.environ.get("KJUDGE_NVCC_STEP_LOG"):
            log(os.environ["KJUDGE_NVCC_STEP_LOG"], status, steps, start, (again, p.again_seconds), args)
        return status
    finally:
        shutil.rmtree(keep_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
