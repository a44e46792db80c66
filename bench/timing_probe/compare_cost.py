"""The worker's comparator (python/kjudge_worker/compare.py) on a GPU: (1) its two paths, the one-pass
kernel (compare_kernel.py) and the torch path, give the same report on randomized outputs (every
float dtype, passing, wrong, NaN, Inf, scale-aware or not, nan_equal or not, ragged sizes);
(2) what each costs at KernelBench's largest outputs (6.7 GB float32), passing and wrong, against one
read of both tensors (the floor of any comparator).

Usage (the device tool): PYTHONPATH=python python3 bench/timing_probe/compare_cost.py > $OUT/compare_cost.json
"""
import itertools
import json
import math
import time

import torch

from kjudge_worker import compare, compare_kernel

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


def by_path(use_kernel, fn):
    compare.USE_KERNEL = use_kernel
    try:
        return fn()
    finally:
        compare.USE_KERNEL = True


def case(kind, n, dtype, g):
    e = torch.randn(n, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-3, 4, (1,), generator=g).item()
    a = e * (1 + torch.randn(n, generator=g, dtype=torch.float64) * 1e-5)
    at = torch.randint(0, n, (max(1, n // 50),), generator=g)
    if kind == "wrong":
        a[at] += 1.0
    elif kind == "nan":
        a[at] = math.nan
        e[at[: len(at) // 2]] = math.nan
    elif kind == "inf":
        a[at] = math.inf
        e[at[: len(at) // 2]] = -math.inf
    elif kind == "all_wrong":
        a = -e - 1
    return e.to(dtype).cuda(), a.to(dtype).cuda()


def agreement():
    g = torch.Generator().manual_seed(5)
    same, differ = 0, []
    sizes = [1, compare_kernel.ITEMS - 1, compare_kernel.ITEMS + 1, compare.CHUNK + 12345]
    for dtype, kind, n, scale_aware, nan_equal in itertools.product(
            [torch.float32, torch.float64, torch.float16, torch.bfloat16], ["passing", "wrong", "nan", "inf", "all_wrong"],
            sizes, [True, False], [True, False]):
        e, a = case(kind, n, dtype, g)
        got = [by_path(k, lambda: compare.compare(e, a, 1e-2, 1e-2, scale_aware, nan_equal)) for k in (True, False)]
        if got[0] == got[1]:
            same += 1
        else:
            differ.append({"dtype": str(dtype), "kind": kind, "n": n, "scale_aware": scale_aware, "nan_equal": nan_equal,
                           "kernel": got[0], "torch": got[1]})
    return {"cases": same + len(differ), "same_report": same, "differ": differ[:5],
            "kernel_used": {f"{k[0]} {k[1]}": v for k, v in compare._agreement.items()}}


def cost():
    e = torch.randn(ELEMENTS, device="cuda")
    a = e + 1e-6
    out = {"elements": ELEMENTS, "chunk": compare.CHUNK,
           "one_read_s": seconds(lambda: torch.sub(a, e).abs_().max())}
    for name, use in (("kernel", True), ("torch", False)):
        out[f"{name}_passing_s"] = by_path(use, lambda: seconds(lambda: compare.compare(e, a, 1e-2, 1e-2)))
    a[::1000] += 1.0
    for name, use in (("kernel", True), ("torch", False)):
        out[f"{name}_wrong_s"] = by_path(use, lambda: seconds(lambda: compare.compare(e, a, 1e-2, 1e-2), reps=1))
    return out


def main():
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "agreement": agreement()}
    report["cost"] = cost()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
