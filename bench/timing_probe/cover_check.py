"""The launch cover on a GPU (python/kjudge_protocol/launch_cover.py, docs/timing.md):
1. a call whose host launch is made 200 us slow is timed by the strict loop's events as a prompt
   one is behind flush and cover, and slower behind the flush alone;
2. a kernel put on a side stream while the cover runs (after the flush has ended) does not run
   beside it: it ends after the main stream's start event (the cover's end), where beside a
   one-thread torch.cuda._sleep of the same length it ends before.

Usage (the device tool): PYTHONPATH=python python3 bench/timing_probe/cover_check.py > $OUT/cover.json
"""
import json
import statistics
import time

import torch

from kjudge_protocol import timing


def busy_wait(us):
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e6 < us:
        pass


def median_call(timer, fn, calls=200):
    ms = []
    for _ in range(calls):
        events = timer.before_call()
        ms.append(timer.call(fn, [], events)[1])
    return statistics.median(ms[20:])


def side_stream_end(timer, x, one_thread_sleep):
    """ms from the main stream's start event to the end of a side-stream kernel launched while
    the cover (or a one-thread sleep as long) runs: > 0 when the side kernel had to wait."""
    side, got = torch.cuda.Stream(), []
    for _ in range(20):
        timer.sync()
        start, side_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        timer.flush_buf.zero_()
        if one_thread_sleep:
            torch.cuda._sleep(timer.cover_sleep_cycles)
        else:
            timer.cover.cover()
        busy_wait(120)  # the flush (~85 us) is over, the cover is not
        with torch.cuda.stream(side):
            x.mul(3.0)
            side_end.record(side)
        start.record()
        timer.sync()
        got.append(start.elapsed_time(side_end))
    return statistics.median(got)


def sleep_cycles(us):
    probe = 1 << 20
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(probe)
    a.record()
    torch.cuda._sleep(probe)
    b.record()
    torch.cuda.synchronize()
    return int(probe * us / (a.elapsed_time(b) * 1e3))


def main():
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    x = torch.randn(4096, 4096, device=dev)
    covered = timing.DeviceTimer(dev, True)
    flush_only = timing.DeviceTimer(dev, True)
    flush_only.cover = None
    prompt, slow = (lambda: x.mul(2.0)), (lambda: (busy_wait(200), x.mul(2.0))[1])
    covered.cover_sleep_cycles = sleep_cycles(150)
    out = {"device": torch.cuda.get_device_name(dev), "cover_available": covered.cover.available,
           "grid_block": [covered.cover.grid, covered.cover.block], "flags": covered.flags,
           "ms_prompt_covered": median_call(covered, prompt), "ms_slow_covered": median_call(covered, slow),
           "ms_prompt_flush_only": median_call(flush_only, prompt),
           "ms_slow_flush_only": median_call(flush_only, slow),
           "side_end_after_start_ms_cover": side_stream_end(covered, x, False),
           "side_end_after_start_ms_one_thread_sleep": side_stream_end(covered, x, True)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
