"""The harness's check for outputs written after forward returned (python/kjudge_harness/late_writes.py)."""
import sys
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
from kjudge_harness import late_writes  # noqa: E402
from kjudge_harness.late_writes import LateWrites  # noqa: E402

CPU = torch.device("cpu")


def test_a_write_after_the_call_returned_is_seen_by_the_next_check():
    late = LateWrites(CPU)
    late.returned("declared", torch.full((1024,), float("nan")), keep=True)  # NaN != NaN: compared bitwise
    late.check()
    out = torch.zeros(1024)
    writer = threading.Thread(target=lambda: (time.sleep(0.05), out.fill_(2.0)))
    writer.start()  # a detached thread the call left behind
    late.returned("spike", out, keep=True)
    writer.join()
    late.check()
    assert late.changed == ["spike"]


def test_an_output_untouched_between_calls_is_not_flagged_and_non_tensors_are_skipped():
    late = LateWrites(CPU)
    for name in ("a", "b"):
        late.returned(name, torch.arange(16.0), keep=True)
        late.returned(name, (1, 2), keep=True)
        late.check()
    late.release()
    assert late.changed == []


def test_outputs_are_kept_until_the_stage_ends_within_the_byte_cap(monkeypatch):
    monkeypatch.setattr(late_writes, "KEEP_BYTES", 4096)
    late = LateWrites(CPU)
    small, large = torch.zeros(512), torch.zeros(4096)  # 2 KiB kept; 16 KiB over the cap
    late.returned("small", small, keep=True)
    late.returned("large", large, keep=True)
    late.returned("aliased", torch.zeros(8), keep=False)
    assert [t.data_ptr() for t in late.kept] == [small.data_ptr()]
    late.release()
    assert late.kept == [] and late.changed == []
