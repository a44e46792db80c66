"""The harness's side of the channel with kjudged: a JSON request in, a JSON report out, and
tensors as raw little-endian bytes (C order) next to a JSON description. The daemon parses the
report and reads the tensors itself; nothing here decides a verdict."""
import inspect
import json
import os
import traceback

import torch

DTYPE_NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
    torch.bool: "bool",
}
PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def read_request(path):
    with open(path) as f:
        return json.load(f)


def write_report(path, report):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)


def error_text(exc, limit=4000):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-limit:]


def write_tensor(t, path):
    """Writes `t` (any device) as raw bytes; returns its description for the report."""
    name = DTYPE_NAMES.get(t.dtype)
    if name is None:
        raise TypeError(f"output dtype {t.dtype} is not supported")
    host = t.detach().to("cpu").contiguous()
    # bfloat16 has no numpy dtype: move its bytes as int16.
    raw = host.view(torch.int16) if host.dtype == torch.bfloat16 else host
    with open(path, "wb") as f:
        f.write(memoryview(raw.numpy()).cast("B"))  # no intermediate copy of the bytes
    return {"dtype": name, "shape": list(t.shape), "file": os.path.basename(path)}


def to_device(values, device):
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


# torch >= 2.1 maps a saved file instead of reading it into memory first.
_LOAD_MMAP = "mmap" in inspect.signature(torch.load).parameters


def load_values(path):
    """An input set the oracle saved (a list of tensors and plain values)."""
    return torch.load(path, mmap=True) if _LOAD_MMAP else torch.load(path)
