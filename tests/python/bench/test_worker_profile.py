"""bench/rlstep/worker_profile.py: py-spy's collapsed stacks of the trusted worker summed by
function (self and inclusive) and, from the `-gil` twin, the seconds some thread held the GIL."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "bench", "rlstep"))
import worker_profile  # noqa: E402

SERVE = "thread (7): Thread-3;Thread.run (threading.py:982);Worker.serve_connection (server.py:210)"


def test_samples_are_summed_by_function_without_thread_frames(tmp_path):
    path = tmp_path / "pyspy-g1.txt"
    path.write_text(f"{SERVE};PrepareBudget.hold (prepare_budget.py:40) 30\n"
                    f"{SERVE};Job.prepare (job.py:120);fingerprint (meaning.py:20) 10\n"
                    f"{SERVE};Job.prepare (job.py:131);fingerprint (meaning.py:22) 5\n"
                    "not a sample line\n")
    own, incl, total = worker_profile.tally(worker_profile.read_collapsed(str(path)))
    assert total == 45
    assert own["fingerprint (meaning.py)"] == 15 and own["PrepareBudget.hold (prepare_budget.py)"] == 30
    assert incl["Worker.serve_connection (server.py)"] == 45 and incl["Job.prepare (job.py)"] == 15
    assert not any(name.startswith("thread") for name in incl)
    assert worker_profile.frame_name("<module>") == "<module>"  # a frame without a place keeps its name


def test_the_gil_twin_gives_the_seconds_the_gil_was_held(tmp_path):
    (tmp_path / "pyspy-g1.txt").write_text(f"{SERVE} 100\n")
    (tmp_path / "pyspy-g1-gil.txt").write_text(f"{SERVE};Job.prepare (job.py:120) 40\n")
    text = worker_profile.report(str(tmp_path / "pyspy-g1.txt"), rate=20, top=5)
    assert "GIL held in 40 samples = 2.0 s at 20/s" in text
    assert "100 samples" in text
