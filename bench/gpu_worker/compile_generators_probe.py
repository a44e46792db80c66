"""On a GPU node: a real torch.compile (Inductor) of a CUDA model beside a seeded CUDA draw in
another thread, with the trusted worker's guard installed (kjudge_protocol.inputs.
guard_generator_restores): Dynamo's setting back of the generators waits for the draw, and the
draw is the seed's. The CPU suite checks the same with the eager backend
(tests/python/worker/test_compile_generators.py); this checks torch.cuda's setter on a device.

    python3 bench/gpu_worker/compile_generators_probe.py   # exit 0: both hold; a JSON line, and $OUT/compile_gen_probe.json"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402
from kjudge_protocol import inputs as kin  # noqa: E402


def seeded_draw(device, inside, drawn, left):
    """Half a seeded draw, a second in which the compile runs, the other half."""
    with kin.seeded(5):
        first = torch.rand(1000, device=device)
        inside.set()
        time.sleep(1.0)
        drawn.append(torch.cat([first, torch.rand(1000, device=device)]).cpu())
        left.append(time.monotonic())


def probe():
    kin.guard_generator_restores()
    device = torch.device("cuda")
    with kin.seeded(5):
        expected = torch.rand(2000, device=device).cpu()
    inside, drawn, left = threading.Event(), [], []
    other = threading.Thread(target=seeded_draw, args=(device, inside, drawn, left))
    other.start()
    inside.wait(10)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).to(device)
    t0 = time.monotonic()
    torch.compile(model)(torch.randn(8, 64, device=device))
    torch.cuda.synchronize()
    returned = time.monotonic()
    other.join()
    return {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "compile_s": round(returned - t0, 2),
            "draw_is_the_seeds": bool(torch.equal(drawn[0], expected)),
            "restore_waited_for_the_draw": returned >= left[0]}


def main():
    result = probe()
    print(json.dumps(result))
    out = os.environ.get("OUT", "/tmp/out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "compile_gen_probe.json"), "w") as f:
        json.dump(result, f)
    return 0 if result["draw_is_the_seeds"] and result["restore_waited_for_the_draw"] else 1


if __name__ == "__main__":
    sys.exit(main())
