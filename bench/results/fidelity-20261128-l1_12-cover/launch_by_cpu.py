# Launch cost of a short kernel behind an L2 flush, from a process pinned to given CPUs:
# python3 numa_probe.py GPU (run under taskset). Prints median event time of the call and host us per launch.
import sys, time, statistics, torch
dev = torch.device(f"cuda:{sys.argv[1]}")
torch.cuda.set_device(dev)
N = 4096
A = torch.randn(N, device=dev); B = torch.randn(N, N, device=dev)
flush = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(300)]
host = []
for s, e in ev:
    flush.zero_()
    s.record()
    t = time.perf_counter()
    out = A.unsqueeze(1) * B
    host.append((time.perf_counter() - t) * 1e6)
    e.record()
torch.cuda.synchronize()
ms = [s.elapsed_time(e) for s, e in ev][50:]
print(f"call_ms median {statistics.median(ms):.4f} min {min(ms):.4f}  host_launch_us median {statistics.median(host[50:]):.1f}")
