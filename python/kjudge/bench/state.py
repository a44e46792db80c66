"""The resumable state of a bench run: one JSON line per judged sample and mode, appended as each
result arrives (a crash loses at most the line being written). A rerun reads it and submits only
what has no line. Results that say nothing about the candidate (infrastructure errors, a judge
timeout, cancellations) are not kept, so a rerun tries them again."""

import json
from pathlib import Path

from google.protobuf import json_format

from kjudge.v1 import result_pb2, verdict_pb2

NOT_FINAL = frozenset({"INFRA_ERROR", "CANCELLED", "EXPIRED", "VERDICT_UNSPECIFIED"})


def is_final(result) -> bool:
    return result is not None and verdict_pb2.Verdict.Name(result.status) not in NOT_FINAL


class State:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.records = {}  # key -> {"key", "mode", "level", "problem", "sample", "name", "file", "result": Result}
        self._cut = False  # the file ends inside a line: the next append starts a new one
        if self.path.exists():
            text = self.path.read_text()
            self._cut = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    rec["result"] = json_format.ParseDict(rec["result"], result_pb2.Result(), ignore_unknown_fields=True)
                except (ValueError, KeyError, json_format.ParseError):
                    continue  # a line cut by a crash: that sample is judged again
                self.records[rec["key"]] = rec

    def __contains__(self, key):
        return key in self.records

    def add(self, record):
        """Keeps a final result (and appends it to the file); ignores the others."""
        if not is_final(record["result"]):
            return False
        line = dict(record, result=json_format.MessageToDict(record["result"]))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(("\n" if self._cut else "") + json.dumps(line, sort_keys=True) + "\n")
        self._cut = False
        self.records[record["key"]] = record
        return True
