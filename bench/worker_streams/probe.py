"""Does one process's GPU work for several jobs at once serialise on the default stream? A probe
for the trusted worker's bound (docs/gpu-worker.md): T threads, each a job that makes a set
(seeded randn), runs a reference-like op on it (an elementwise op with a reduction, and a matmul),
copies its output (as the worker's export does) and waits for its work, N times. Modes:
  default       the default stream, torch.cuda.synchronize() (what the worker does)
  stream        a stream per thread, that stream's synchronize()
  default+empty the default stream, and torch.cuda.empty_cache() after each set (what a heavy-set
                section does on entry and exit)
Prints one JSON line per (mode, threads): wall seconds and sets per second.
Usage: python3 bench/worker_streams/probe.py [--mib 1024] [--iters 6] [--threads 1,8]"""
import argparse
import contextlib
import json
import threading
import time

import torch


def one_job(mode, iters, numel, seed):
    dev = torch.device("cuda")
    stream = torch.cuda.Stream() if mode == "stream" else None
    with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
        a = torch.randn(2048, 2048, device=dev)
        for i in range(iters):
            gen = torch.Generator(device=dev)
            gen.manual_seed(seed * 1000 + i)
            x = torch.randn(numel, device=dev, generator=gen)
            y = torch.nn.functional.gelu(x) * 0.5 + x.mean()
            z = a @ a
            out = torch.empty_like(y)
            out.copy_(y)
            if stream is not None:
                stream.synchronize()
            else:
                torch.cuda.synchronize()
            del x, y, z, out
            if mode == "default+empty":
                torch.cuda.empty_cache()


def run(mode, threads, iters, numel):
    workers = [threading.Thread(target=one_job, args=(mode, iters, numel, k)) for k in range(threads)]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"mode": mode, "threads": threads, "iters": iters, "set_mib": numel * 4 >> 20,
            "wall_s": round(wall, 3), "sets_per_s": round(threads * iters / wall, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--threads", default="1,8")
    a = ap.parse_args()
    numel = (a.mib << 20) // 4
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)
    run("default", 2, 1, numel)  # warm-up: kernels loaded, allocator primed
    for threads in [int(t) for t in a.threads.split(",")]:
        for mode in ("default", "stream", "default+empty"):
            print(json.dumps(run(mode, threads, a.iters, numel)), flush=True)


if __name__ == "__main__":
    main()
