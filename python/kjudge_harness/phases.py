"""Where a role's time goes: seconds per named phase since the previous mark, reported to the
daemon, which puts them in the result (`phase_seconds`, e.g. "candidate.trace") so a slow job
shows which step was slow. Imported first, so "import" covers torch's import."""
import time

_last = time.perf_counter()
seconds = {}


def mark(name):
    global _last
    now = time.perf_counter()
    seconds[name] = round(seconds.get(name, 0.0) + now - _last, 4)
    _last = now


def restart():
    """A role resumed from the zygote (zygote.py): its clock starts now, not at the zygote's import."""
    global _last
    _last = time.perf_counter()
    seconds.clear()
