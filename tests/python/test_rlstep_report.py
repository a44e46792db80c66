"""bench/rlstep's report: run c may evaluate a subset of the batch (KB_N); its count, rate and CPU
share are its own, and its makespan is scaled to the batch only in a line that says so."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench", "rlstep"))
import rlstep  # noqa: E402


def test_subset_spreads_over_the_batch():
    entries = list(range(128))
    sub = rlstep.kb_subset(entries, 32)
    assert len(sub) == 32 and sub[0] == 0 and sub[-1] >= 120 and len(set(sub)) == 32
    assert rlstep.kb_subset(entries, 0) == entries and rlstep.kb_subset(entries, 500) == entries


def write_jsonl(path, rows):
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def test_report_counts_c_on_its_subset(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps([{"candidate": "c%d.py" % i, "problem": "p"} for i in range(8)]))
    write_jsonl(tmp_path / "windows.jsonl", [
        {"step": "a", "start": 0, "end": 100, "cpu_s": 800},
        {"step": "c-build", "start": 200, "end": 220, "cpu_s": 100},
        {"step": "c-eval", "start": 220, "end": 260, "cpu_s": 60}])
    write_jsonl(tmp_path / "rows.jsonl", [{"step": "a", "verdict": "OK"}] * 8 + [{"step": "c", "verdict": "OK"}] * 2)
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "rlstep", "rlstep.py"), "report", "--manifest", str(manifest),
                    "--dataset", str(tmp_path), "--out", str(tmp_path), "--kb-n", "2"], check=True, capture_output=True)
    runs = {r["run"][0]: r for r in json.load(open(tmp_path / "results.json"))["runs"]}
    assert (runs["a"]["candidates"], runs["a"]["judged"], runs["a"]["cpu_s_per_candidate"]) == (8, 8, 100)
    assert (runs["c"]["candidates"], runs["c"]["judged"], runs["c"]["cpu_s_per_candidate"]) == (2, 2, 80)
    assert runs["c"]["per_hour_per_gpu"] == 2 / 60 * 3600
    table = (tmp_path / "table.md").read_text()
    # c's 60 s for 2 of 8 scales to 240 s: a / c = 100 / 240
    assert "Makespan a / c = 0.42" in table and "c ran 2 of the 8 candidates" in table and "not a measurement" in table
