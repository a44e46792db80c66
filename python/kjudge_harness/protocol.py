"""The harness's side of the channel with kjudged: a JSON request in, a JSON report out (tensors
go between the candidate and the trusted worker over the job channel: channel.py). Nothing here
decides a verdict."""
import json
import os

from kjudge_protocol.wire import error_text  # noqa: F401 -- the report's error field, as the worker's


def read_request(path):
    with open(path) as f:
        return json.load(f)


def write_report(path, report):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)

