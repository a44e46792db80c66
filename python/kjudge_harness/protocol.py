"""The harness's side of the channel with kjudged: a JSON request in, a JSON report out (tensors
go between the candidate and the trusted worker over the job channel: channel.py). Nothing here
decides a verdict."""
import json
import os
import traceback

import torch

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
