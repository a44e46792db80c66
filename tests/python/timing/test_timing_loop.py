"""The strict timed loop's stopping rule and the device settling before a candidate's loop, on the
CPU with programmed clocks (python/kjudge_protocol/timing.py, python/kjudge_worker/sm_clock.py)."""
import torch

from kjudge_protocol import timing
from kjudge_worker import sm_clock


class FakeClock:
    """perf_counter_ns for the loop: a call takes the time the test programmed for it."""

    def __init__(self):
        self.ns = 0

    def __call__(self):
        return self.ns


def run_loop(monkeypatch, durations_ms, **cfg):
    clock = FakeClock()
    monkeypatch.setattr(timing, "_perf_ns", clock)
    calls = iter(durations_ms)

    def fn(x):
        clock.ns += int(next(calls) * 1e6)
        return x

    cfg = {"warmup": 0, "min_trials": 10, "max_trials": len(durations_ms), "target_rel_ci": 0.01, **cfg}
    return timing.strict_loop(fn, [[torch.zeros(4)]], cfg, torch.device("cpu"))


def test_drift_compares_the_loops_first_and_last_thirds():
    assert timing.drift([1.0] * 12) == 0.0
    assert timing.drift([1.19] * 4 + [1.0] * 8) > 0.15
    assert timing.drift([1.0] * 8) == 0.0  # too short to have thirds: the CI decides alone


def test_a_steady_loop_stops_as_soon_as_its_ci_is_tight_and_it_has_run_its_minimum_time(monkeypatch):
    report = run_loop(monkeypatch, [2.0] * 100, min_time_ms=0)
    assert report["stop_reason"] == "ci" and len(report["trial_ms"]) == 10
    report = run_loop(monkeypatch, [2.0] * 100)  # the default minimum: 100 ms of calls
    assert report["stop_reason"] == "ci" and len(report["trial_ms"]) == 50


def test_a_slow_start_shorter_than_a_third_of_the_minimum_time_leaves_the_median_alone(monkeypatch):
    # 10 calls (~29 ms) 19 % slow, then steady: the CI alone stopped at 10 trials, all slow
    report = run_loop(monkeypatch, [2.9] * 10 + [2.44] * 90)
    n = len(report["trial_ms"])
    assert sorted(report["trial_ms"])[n // 2] == 2.44, report["trial_ms"]


def test_a_loop_that_changes_state_midway_goes_on_until_its_ends_agree(monkeypatch):
    # a device still speeding up: 5 calls 19 % slow, then steady. With the CI alone the loop stopped
    # at 20 trials with a fifth of them slow; it now goes on until the first third is steady too
    report = run_loop(monkeypatch, [2.38] * 5 + [2.0] * 95, min_time_ms=0)
    n = len(report["trial_ms"])
    assert report["stop_reason"] == "ci" and n >= 30, n
    assert sorted(report["trial_ms"])[n // 2] == 2.0


class RampingClock(sm_clock.SmClock):
    """An SM clock that rises by 200 MHz per busy step up to `top`."""

    def __init__(self, start, top, max_mhz=1980):
        super().__init__(torch.device("cpu"))
        self.lib, self.max_mhz, self.now, self.top, self.steps = object(), max_mhz, start, top, 0

    def mhz(self):
        return self.now

    def busy(self):
        self.steps += 1
        self.now = min(self.top, self.now + 200)


def test_settling_keeps_the_device_busy_until_its_clock_is_at_the_maximum():
    clock = RampingClock(start=1000, top=1980)
    mhz, _ = clock.settle()
    assert mhz == 1980 and clock.steps == 5


def test_settling_ends_when_the_clock_stops_rising_below_the_maximum(monkeypatch):
    monkeypatch.setattr(sm_clock, "SETTLE_MIN_MS", 0.0)
    clock = RampingClock(start=1000, top=1600)  # held lower (a power cap, application clocks)
    mhz, _ = clock.settle()
    assert mhz == 1600 and clock.steps == 4  # 1200, 1400, 1600, 1600: flat, done


def test_without_nvml_there_is_nothing_to_settle_or_read():
    clock = sm_clock.SmClock(torch.device("cpu"))
    assert clock.settle() == (None, 0.0) and clock.mhz() is None


def test_the_flush_outlasts_a_sandboxed_launch_as_triton_and_kernelbench_size_it():
    # 2x an H100's 50 MB L2 (~33 us) left 20-60 us of a candidate's launch in its events (run 20)
    assert timing.flush_bytes(50 << 20) == 256 << 20
    assert timing.flush_bytes(40 << 20) == 256 << 20
    assert timing.flush_bytes(192 << 20) == 384 << 20  # a larger L2 still gets twice its size


def test_the_calls_launch_overlaps_the_l2_flush_and_the_cover_instead_of_an_idle_device(monkeypatch):
    """Per timed call: the previous work waited for, the call's events made and the persisting L2
    reset while the device is idle, then the daemon's 'B' mark, the flush and the launch cover
    queued, the start event at once (no wait for them, and no host work between them and the
    call: the call's host-side launch hides behind them), the call, the end event, a device-wide
    wait and at once the daemon's 'T' mark: only the host work the call needs sits between B and T."""
    order = []

    class Event:
        def __init__(self, **kw):
            order.append("new event")

        def record(self):
            order.append("event")

        def elapsed_time(self, other):
            order.append("elapsed")
            return 1.0

    class FlushBuffer:
        def zero_(self):
            order.append("flush")

    class Cover:
        available = True

        def cover(self):
            order.append("cover")

    monkeypatch.setattr(timing.torch.cuda, "Event", Event)
    monkeypatch.setattr(timing.torch.cuda, "synchronize", lambda *a: order.append("sync"))
    timer = timing.DeviceTimer(torch.device("cpu"), l2_flush=False)
    timer.cuda, timer.flush_buf, timer.reset_l2 = True, FlushBuffer(), lambda: order.append("reset")
    timer.cover = Cover()
    events = timer.before_call(lambda: order.append("mark B"))
    timer.call(lambda: order.append("call"), [], events, lambda: order.append("mark T"))
    assert order == ["sync", "new event", "new event", "reset", "mark B", "flush", "cover", "event", "call",
                     "event", "sync", "mark T", "elapsed"]


def test_a_baseline_timed_by_another_method_is_not_the_cache_entry_of_this_one():
    from kjudge_protocol.node_identity import node_identity
    assert f"timing {timing.PROTOCOL}" in node_identity(torch.device("cpu"))


class ScriptedWaits:
    """RunQueueWait with the run-queue wait of each trial's launch programmed by the test."""

    def __init__(self, waits_ns):
        self.waits, self.total, self.reads, self.available = list(waits_ns), 0, 0, True

    def __call__(self):
        return self

    def ns(self):
        self.reads += 1
        if self.reads % 2 == 0:  # the read after the call: the trial's wait lands here
            self.total += self.waits.pop(0) if self.waits else 0
        return self.total

    def close(self):
        pass


def kernelbench_loop_with_waits(monkeypatch, waits_ns, trials=10):
    monkeypatch.setattr(timing, "RunQueueWait", ScriptedWaits(waits_ns))
    calls = []
    return timing.kernelbench_loop(lambda x: calls.append(1) or x, [torch.zeros(4)], torch.device("cpu"),
                                   trials=trials), len(calls)


def test_compat_times_again_a_trial_whose_launch_waited_for_a_cpu(monkeypatch):
    """KernelBench alone on a quiet host: a trial the host made wait is not one it would time."""
    limit = timing.HOST_WAIT_LIMIT_NS
    # first trial discarded (never redone), then trials 2 and 4 waited: each timed once more
    report, calls = kernelbench_loop_with_waits(monkeypatch, [5 * limit, 0, 5 * limit, 0, 0, 2 * limit] + [0] * 20)
    assert len(report["trial_ms"]) == 10 and report["trials_redone"] == 2
    assert calls == 3 + 11 + 2  # warm-ups, trials with the discarded first, the two again
    assert report["flags"] == [] and abs(report["host_wait_ms"] - 12 * limit / 1e6) < 1e-9


def test_compat_redoes_at_most_as_many_trials_as_it_times_and_says_what_it_kept(monkeypatch):
    report, calls = kernelbench_loop_with_waits(monkeypatch, [10 * timing.HOST_WAIT_LIMIT_NS] * 100, trials=10)
    assert len(report["trial_ms"]) == 10 and report["trials_redone"] == 10
    assert report["contended_trials_kept"] == 10 and "compat_host_contended" in report["flags"]
    assert calls == 3 + 11 + 10


def test_the_run_queue_wait_is_the_threads_own_and_grows_only_while_it_waits_for_a_cpu():
    """Real run_delay: this thread and a spinner pinned to one CPU take turns, so the thread's
    wait grows by whole scheduler slices; a sleep (not runnable) adds nothing."""
    import multiprocessing
    import os
    import time
    from kjudge_protocol.run_queue import RunQueueWait
    waits = RunQueueWait()
    assert waits.available
    cpu = sorted(os.sched_getaffinity(0))[0]
    before_affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    spinner = multiprocessing.get_context("fork").Process(target=_spin_on, args=(cpu, 3.0), daemon=True)
    try:
        w0 = waits.ns()
        time.sleep(0.2)
        assert waits.ns() - w0 < 5_000_000  # asleep: not waiting for a CPU
        spinner.start()
        time.sleep(0.2)  # the spinner is running on the CPU
        w1, t_end = waits.ns(), time.monotonic() + 0.5
        while time.monotonic() < t_end:  # runnable for 0.5 s beside a spinner: about half of it waiting
            pass
        assert waits.ns() - w1 > 50_000_000
    finally:
        spinner.terminate()
        spinner.join()
        os.sched_setaffinity(0, before_affinity)
        waits.close()


def _spin_on(cpu, seconds):
    import os
    import time
    os.sched_setaffinity(0, {cpu})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
