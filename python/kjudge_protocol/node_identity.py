"""What a cached baseline is only valid on (the device model and driver, torch and its CUDA, the
interpreter, the timing method): cheap to compute, so the worker checks it before skipping the
reference's timing."""
import sys

import torch

from . import timing


def node_identity(device):
    """What a cached baseline is only valid on: the device model and driver, torch and its CUDA,
    the interpreter, the timing method. Cheap to compute, so the worker checks it before skipping
    its timing."""
    parts = [f"torch {torch.__version__}", f"cuda {torch.version.cuda}", sys.executable, f"timing {timing.PROTOCOL}"]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        parts += [props.name, f"cc {props.major}.{props.minor}", f"sms {props.multi_processor_count}",
                  f"mem {props.total_memory}"]
        try:
            with open("/proc/driver/nvidia/version") as f:
                parts.append(f.readline().strip())
        except OSError:
            parts.append("driver unknown")
    else:
        model = ""
        try:
            with open("/proc/cpuinfo") as f:
                model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
        except OSError:
            pass
        parts += ["cpu", model, f"threads {torch.get_num_threads()}"]
    return " | ".join(parts)
