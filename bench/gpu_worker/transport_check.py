"""The worker's GPU transport on its own (no kjudged, no sandbox): a worker process on the GPU and
candidates as plain processes, to check the VMM path before the daemon runs it.
  honest      : inputs over the channel, ReLU, output back -> the worker's comparison passes
  wrong       : output + 1 -> fails, the candidate learns nothing
  inplace     : writes into its read-only input -> CUDA error (illegal address) in the candidate
  upgrade     : raises its mapping to read-write (cuMemSetAccess), writes -> the worker flags it
Usage: transport_check.py [rows cols]; prints one JSON line per case."""
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "python"))
REF = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n" \
      "def get_inputs():\n    return [torch.rand(ROWS, COLS)]\ndef get_init_inputs():\n    return []\nROWS = 16\nCOLS = 16\n"


def ask(root, req):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(os.path.join(root, "control.sock"))
        s.sendall(json.dumps(req).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            data += s.recv(1 << 20)
    return json.loads(data)


def candidate(path, case):
    import torch
    from kjudge_harness.channel import Channel
    chan = Channel(path, torch.device("cuda"))
    t0 = time.perf_counter()
    x = chan.inputs(0)[0]
    got = {"case": case, "inputs_s": round(time.perf_counter() - t0, 4), "shape": list(x.shape)}
    try:
        if case == "inplace":
            x.relu_()
            torch.cuda.synchronize()
            out = x
        elif case == "upgrade":
            lib = ctypes.CDLL("libcuda.so.1")
            base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
            lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_ulonglong(x.data_ptr()))
            from kjudge_protocol.transport import _Access, PROT_READWRITE
            acc = _Access()
            acc.location.type, acc.location.id, acc.flags = 1, 0, PROT_READWRITE
            got["set_access"] = lib.cuMemSetAccess(base, size, ctypes.byref(acc), ctypes.c_size_t(1))
            out = torch.relu(x)
            x.zero_()
            torch.cuda.synchronize()
        else:
            out = torch.relu(x) + (1 if case == "wrong" else 0)
        t1 = time.perf_counter()
        chan.send_output("output", 0, out, {"dtype": "float32", "shape": list(out.shape)})
        got["output_s"] = round(time.perf_counter() - t1, 4)
    except Exception as exc:  # noqa: BLE001
        got["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    chan.close()
    print(json.dumps(got), flush=True)


def main(rows, cols):
    root = tempfile.mkdtemp(prefix="kjwt.")
    os.makedirs(os.path.join(root, "refs"))
    open(os.path.join(root, "refs/relu.py"), "w").write(REF)
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    t0 = time.perf_counter()
    worker = subprocess.Popen([sys.executable, "-m", "kjudge_worker", root, "cuda", "", "0.3", "120"], env=env)
    while not os.path.exists(os.path.join(root, "control.sock")):
        time.sleep(0.05)
    print(json.dumps({"worker_start_s": round(time.perf_counter() - t0, 2)}), flush=True)
    tol = {"atol": 1e-4, "rtol": 1e-4, "scale_aware": True, "nan_equal": True}
    for case in ("honest", "wrong", "inplace", "upgrade", "honest"):
        os.makedirs(os.path.join(root, "chan", case), exist_ok=True)
        t = time.perf_counter()
        rep = ask(root, {"op": "prepare", "job_id": case, "reference_path": "refs/relu.py",
                         "channel_path": f"chan/{case}/sock", "backend": "cuda", "precision": "fp32",
                         "mode": "strict", "size_overrides": {"ROWS": rows, "COLS": cols}, "weight_seed": 1,
                         "sets": [{"name": "declared", "seed": 5}], "timing": {"skip": True},
                         "tolerance": tol, "time_baseline": False})
        prep_s = time.perf_counter() - t
        if not rep.get("ok"):
            print(json.dumps({"case": case, "prepare": rep}), flush=True)
            continue
        subprocess.run([sys.executable, __file__, "--candidate", os.path.join(root, "chan", case, "sock"), case],
                       env=env, timeout=300)
        res = ask(root, {"op": "results", "job_id": case})
        s0 = res.get("sets", {}).get("0", {})
        print(json.dumps({"case": case, "prepare_s": round(prep_s, 3), "passed": s0.get("passed"),
                          "mismatches": s0.get("mismatches"), "problem": s0.get("problem"), "flags": res.get("flags"),
                          "protocol_errors": res.get("protocol_errors"), "cache": rep.get("cache")}), flush=True)
    worker.kill()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--candidate":
        candidate(sys.argv[2], sys.argv[3])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096, int(sys.argv[2]) if len(sys.argv) > 2 else 65536)
