"""How long this thread waited for a CPU: the run_delay of /proc/thread-self/schedstat (the
nanoseconds it was runnable but not running). A thread blocked on the GPU, a lock or a sleep is
not runnable and adds nothing; only a host short of CPUs for it does. compat's timed trials use
it to tell a trial the host delayed from one KernelBench alone would time (timing.kernelbench_loop)."""
import os


class RunQueueWait:
    """Reads the calling thread's run_delay (ns). Unavailable (no /proc, a kernel without
    schedstats): ns() is 0 and `available` is False, and the caller says so."""

    def __init__(self):
        try:
            self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
            self.ns()
        except (OSError, ValueError, IndexError):
            self.close()
            self.fd = None

    @property
    def available(self):
        return self.fd is not None

    def ns(self):
        if self.fd is None:
            return 0
        return int(os.pread(self.fd, 128, 0).split()[1])

    def close(self):
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None
