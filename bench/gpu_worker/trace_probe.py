"""What the legality trace costs on a GPU node, and whether the CUPTI kernel recorder
(libkjudge_kernel_trace.so) names the same kernels as torch.profiler. One process, one JSON line
per measurement:

  import_torch           (a) import torch
  fork_after_import      (g) os.fork() after import, before CUDA: the child initialises CUDA, runs an op
  cuda_init              (b) CUDA initialised in this process (first op, synchronised)
  recorder_load          (e) the library through ctypes; recorder_start_first: the first kjt_start
  graph_replay           (f) a CUDA graph replayed under the recorder: flagged (unattributed > 0)
  harness_traced_call    trace.traced_call (the harness's own code) with the library, per workload
  profiler_first         (c) torch.profiler around each workload, the first time in the process
  profiler_second        (d) the same again
  recorder               (e) kjt_start, workload, sync, kjt_stop, names (measured before any
                             profiler ran), beside the profiler's names: "agree"
  recorder_after_profiler    the recorder again once torch.profiler has run in this process
  graph_replay_profiler  the graph under the profiler (which names the graph's kernels)
The recorder runs before the profiler: kineto may keep CUPTI subscribed once it has started.

Usage (on the GPU node, from the repository root; torch with CUDA in that python):
  python3 bench/gpu_worker/trace_probe.py .device/bin/libkjudge_kernel_trace.so
  (or build/bin/libkjudge_kernel_trace.so). python/ of this repository is put on sys.path for
  kjudge_harness (kernel_recorder.py, trace.py)."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
PLUMBING = ("Memcpy", "Memset")


def emit(probe, seconds=None, **fields):
    row = {"probe": probe}
    if seconds is not None:
        row["seconds"] = round(seconds, 4)
    row.update(fields)
    print(json.dumps(row), flush=True)


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def fork_after_import(torch):
    """(g) Before this process initialises CUDA: a child initialises it and runs an op."""
    r, w = os.pipe()
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        row = {"ok": False}
        try:
            t0 = time.perf_counter()
            x = torch.ones(1024, device="cuda")
            y = (x * 2).sum().item()
            torch.cuda.synchronize()
            row = {"ok": y == 2048.0, "child_seconds": round(time.perf_counter() - t0, 4)}
        except Exception as exc:  # noqa: BLE001 - reported, the parent carries on
            row["error"] = repr(exc)[:300]
        os.write(w, json.dumps(row).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    row = json.loads(data or b"{}")
    emit("fork_after_import", time.perf_counter() - t, exit_status=status, **row)


def workloads(torch):
    dev = "cuda"
    a = torch.randn(1024, 1024, device=dev)
    h = torch.randn(1024, 1024, device=dev, dtype=torch.float16)
    x = torch.randn(1 << 20, device=dev)
    img = torch.randn(8, 16, 64, 64, device=dev)
    w = torch.randn(32, 16, 3, 3, device=dev)
    return {
        "matmul_fp32": lambda: a @ a,
        "matmul_fp16": lambda: h @ h,
        "elementwise": lambda: torch.relu(x * 2 + 1),
        "softmax": lambda: torch.softmax(a, dim=-1),
        "conv2d": lambda: torch.nn.functional.conv2d(img, w, padding=1),
    }


def profiler_kernels(torch, fn):
    from torch.profiler import ProfilerActivity, profile
    t = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")]
    return names, time.perf_counter() - t


def recorder_kernels(torch, rec, fn):
    t = time.perf_counter()
    why = rec.start()
    if why:
        return None, why, time.perf_counter() - t, {}
    t_started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    t_ran = time.perf_counter()
    rec.stop()
    names = rec.names()
    t_end = time.perf_counter()
    split = {"start_s": round(t_started - t, 5), "call_s": round(t_ran - t_started, 5),
             "stop_and_names_s": round(t_end - t_ran, 5), "unattributed": rec.unattributed()}
    return names, "", t_end - t, split


def record_all(torch, rec, loads):
    """(e) Before any profiler in this process: kineto may keep its CUPTI subscription once started."""
    return {name: recorder_kernels(torch, rec, fn) for name, fn in loads.items()}


def profile_and_compare(torch, rec, loads, recorded):
    """(c), (d), then the recorder's rows beside the profiler's names; then the recorder once more,
    to show whether it can still subscribe after torch.profiler ran in the process."""
    last = {}
    for run in ("profiler_first", "profiler_second"):
        for name, fn in loads.items():
            last[name], s = profiler_kernels(torch, fn)
            emit(run, s, workload=name, kernels=last[name])
    for name, (names, why, s, split) in recorded.items():
        want = sorted(k for k in last[name] if not any(p in k for p in PLUMBING))
        emit("recorder", s, workload=name, error=why, kernels=names, profiler_kernels=last[name],
             agree=names is not None and sorted(names) == want, **split)
    name, fn = next(iter(loads.items()))
    names, why, s, split = recorder_kernels(torch, rec, fn)
    emit("recorder_after_profiler", s, workload=name, error=why, kernels=names, **split)


def make_graph(torch):
    x = torch.randn(1 << 16, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            (x * 3).relu()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = (x * 3).relu()
    return graph, (x, y)


def graph_replay(torch, rec, graph):
    """(f) A captured graph replayed: the recorder cannot name its kernels and must say so."""
    names, why, s, split = recorder_kernels(torch, rec, graph.replay)
    emit("graph_replay", s, error=why, kernels=names, flagged=split.get("unattributed", 0) > 0, **split)


def graph_replay_profiled(torch, graph):
    prof, s = profiler_kernels(torch, graph.replay)
    emit("graph_replay_profiler", s, kernels=prof)


def harness_traced_call(torch, lib_path, loads):
    from kjudge_harness import trace

    class Wrap(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self):
            return self.fn()

    for name, fn in loads.items():
        (out, section), s = timed(lambda: trace.traced_call(Wrap(fn), (), torch.device("cuda"),
                                                            trace.ExtCounter(), lib_path))
        del out
        emit("harness_traced_call", s, workload=name, kernel_source=section["kernel_source"],
             tracer_ok=section["tracer_ok"], tracer_problem=section["tracer_problem"],
             recorder_problem=section["kernel_recorder_problem"], kernels=section["kernels"],
             ops=section["ops"])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: trace_probe.py <libkjudge_kernel_trace.so>")
    lib_path = os.path.abspath(sys.argv[1])
    t = time.perf_counter()
    import torch
    emit("import_torch", time.perf_counter() - t, torch=torch.__version__, cuda=torch.version.cuda)
    fork_after_import(torch)
    _, s = timed(lambda: (torch.ones(1, device="cuda") + 1, torch.cuda.synchronize()))
    emit("cuda_init", s, device=torch.cuda.get_device_name())
    loads = workloads(torch)
    for fn in loads.values():  # the libraries' own first-use set-up (cuBLAS handles) out of the figures
        fn()
    torch.cuda.synchronize()

    from kjudge_harness import kernel_recorder
    (loaded, why), s = timed(lambda: kernel_recorder.load(lib_path))
    emit("recorder_load", s, error=why)
    if loaded is None:
        return
    err, s = timed(loaded.start)
    loaded.stop()
    emit("recorder_start_first", s, error=err, cupti=loaded.cupti_path())
    recorded = record_all(torch, loaded, loads)
    graph, keep = make_graph(torch)
    graph_replay(torch, loaded, graph)
    harness_traced_call(torch, lib_path, loads)  # falls back to the profiler only where it must
    profile_and_compare(torch, loaded, loads, recorded)
    graph_replay_profiled(torch, graph)
    del keep


if __name__ == "__main__":
    main()
