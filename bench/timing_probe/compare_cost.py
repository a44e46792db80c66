"""What the worker's comparator (python/kjudge_worker/compare.py) costs on a GPU at KernelBench's
largest outputs (6.4 GB float32), passing and wrong, against one read of both tensors (the floor
of any comparator).

Usage (the device tool): PYTHONPATH=python python3 bench/timing_probe/compare_cost.py > $OUT/compare_cost.json
"""
import json
import time

import torch

from kjudge_worker import compare

ELEMENTS = 1600 * 1 << 20  # 6.7 GB of float32: l1_19 / l1_23 at their shipped sizes


def seconds(fn, reps=3):
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    dev = torch.device("cuda")
    e = torch.randn(ELEMENTS, device=dev)
    a = e + 1e-6
    floor = seconds(lambda: torch.sub(a, e).abs_().max())
    passing = seconds(lambda: compare.compare(e, a, 1e-2, 1e-2))
    a[::1000] += 1.0
    wrong = seconds(lambda: compare.compare(e, a, 1e-2, 1e-2), reps=1)
    print(json.dumps({"device": torch.cuda.get_device_name(dev), "torch": torch.__version__, "elements": ELEMENTS,
                      "chunk": compare.CHUNK, "one_read_s": floor, "compare_passing_s": passing,
                      "compare_wrong_s": wrong, "passing_over_floor": passing / floor}, indent=1))


if __name__ == "__main__":
    main()
