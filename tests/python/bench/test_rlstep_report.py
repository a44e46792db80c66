"""bench/rlstep's report: run c may evaluate a subset of the batch (KB_N); its count, rate and CPU
share are its own, and its makespan is scaled to the batch only in a line that says so."""
import datetime
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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


def report(tmp_path, n, windows, rows, *args):
    """rlstep.py report over a batch of n candidates with these windows and rows."""
    (tmp_path / "manifest.json").write_text(json.dumps([{"candidate": "c%d.py" % i, "problem": "p"} for i in range(n)]))
    write_jsonl(tmp_path / "windows.jsonl", windows)
    write_jsonl(tmp_path / "rows.jsonl", rows)
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "rlstep", "rlstep.py"), "report", "--manifest",
                    str(tmp_path / "manifest.json"), "--dataset", str(tmp_path), "--out", str(tmp_path), *args],
                   check=True, capture_output=True)


def test_report_counts_c_on_its_subset(tmp_path):
    report(tmp_path, 8, [
        {"step": "a", "start": 0, "end": 100, "cpu_s": 800},
        {"step": "c-build", "start": 200, "end": 220, "cpu_s": 100},
        {"step": "c-eval", "start": 220, "end": 260, "cpu_s": 60}],
        [{"step": "a", "verdict": "OK"}] * 8 + [{"step": "c", "verdict": "OK"}] * 2, "--kb-n", "2")
    runs = {r["run"][0]: r for r in json.load(open(tmp_path / "results.json"))["runs"]}
    assert (runs["a"]["candidates"], runs["a"]["judged"], runs["a"]["cpu_s_per_candidate"]) == (8, 8, 100)
    assert (runs["c"]["candidates"], runs["c"]["judged"], runs["c"]["cpu_s_per_candidate"]) == (2, 2, 80)
    assert runs["c"]["per_hour_per_gpu"] == 2 / 60 * 3600
    table = (tmp_path / "table.md").read_text()
    # c's 60 s for 2 of 8 scales to 240 s: a / c = 100 / 240
    assert "Makespan a / c = 0.42" in table and "c ran 2 of the 8 candidates" in table and "not a measurement" in table


def test_gpu_phases_count_their_own_gpus(tmp_path):
    """b's GPU phases on 1 and 4 GPUs: each its own rate per GPU and busy share over its GPUs only,
    and the scaling line compares their whole-node rates."""
    # GPU 0 busy in both windows, GPUs 1-3 idle in the first (not its GPUs) and half busy in the second
    stamp = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    lines = []
    for t in range(1000, 1080, 10):  # memory.used: 100 MiB, GPU 3 once 2048 (outside the 1-GPU run)
        lines += ["%s, %d, %d, %d" % (stamp(t), g, 80 if g == 0 else 0, 2048 if g == 3 and t == 1010 else 100) for g in range(4)]
    for i, t in enumerate(range(2000, 2040, 10)):
        lines += ["%s, %d, %d, 100" % (stamp(t), g, 80 if g == 0 or i % 2 else 0) for g in range(4)]
    (tmp_path / "smi.csv").write_text("\n".join(lines) + "\n")
    report(tmp_path, 8, [{"step": "b-judge-g1", "start": 1000, "end": 1080, "cpu_s": 0},
                         {"step": "b-judge-g4", "start": 2000, "end": 2040, "cpu_s": 0}],
           [{"step": "b-g1", "verdict": "OK"}] * 8 + [{"step": "b-g4", "verdict": "OK"}] * 8)
    runs = {r["gpus"]: r for r in json.load(open(tmp_path / "results.json"))["runs"]}
    assert runs[1]["per_hour_per_gpu"] == 8 / 80 * 3600 and runs[1]["gpu_busy_share"] == 1.0
    assert runs[4]["per_hour_per_gpu"] == 8 / 40 * 3600 / 4
    assert runs[4]["gpu_busy_share"] == (4 + 3 * 2) / 16  # GPU 0 always, GPUs 1-3 in 2 of 4 samples
    assert runs[1]["device_memory_max_gib"] == 100 / 1024  # only its own GPU's samples
    assert "on 4 GPUs: 720 candidates/h against 360 on one GPU: 2.00x (ideal 4)" in (tmp_path / "table.md").read_text()


def test_where_the_gpu_phase_goes_is_a_table_of_its_phases(tmp_path):
    """Each GPU phase of run b gets the median, p90 and sum of its candidates' waits and stages,
    the worker's own steps included, over that phase's rows only."""
    rows = [{"step": "b-g1", "verdict": "OK", "phase_seconds": {"device_memory_wait": w, "worker.compare": 1.0}}
            for w in (1.0, 2.0, 3.0, 10.0)]
    rows[3]["phase_seconds"]["device_memory_borrowed"] = 1  # a flag: the sum counts the candidates on loans
    report(tmp_path, 4, [{"step": "b-judge-g1", "start": 0, "end": 40, "cpu_s": 0}],
           rows + [{"step": "a", "verdict": "OK", "phase_seconds": {"device_memory_wait": 99.0}}])
    table = (tmp_path / "table.md").read_text()
    assert "b: builds supplied (GPU phase, 1 GPU), seconds per candidate" in table
    assert "| device_memory_wait | 2.50 | 3.00 | 16 |" in table  # run a's 99 s is not b's
    assert "| device_memory_borrowed | 0.00 | 0.00 | 1 |" in table
    assert "| worker.compare | 1.00 | 1.00 | 4 |" in table
    assert "judge_wait.output" not in table  # no row has it


def test_gpu_phases_of_one_gpu_count_and_other_settings_are_runs_of_their_own(tmp_path):
    """B_GPUS="1:0.3 1 1@.kb/worker-abc 1:0.5@.kb/worker-abc 1:0.5~20": the same batch judged with a
    set candidate share, with the worker's, with another worker package, with both, with a set share
    and an admission backfill window: runs of one GPU each, named by their settings, in the order
    they ran."""
    (tmp_path / "smi.csv").write_text("")
    labels = ["g1-share0.3", "g1", "g1-worker-abc", "g1-share0.5-worker-abc", "g1-share0.5-backfill20"]
    report(tmp_path, 4, [{"step": "b-judge-" + l, "start": 1000 * i, "end": 1000 * i + 10 * (i + 1), "cpu_s": 0}
                         for i, l in enumerate(labels, 1)],
           [{"step": "b-" + l, "verdict": "OK"} for l in labels for _ in range(4)])
    runs = [r for r in json.load(open(tmp_path / "results.json"))["runs"] if r["step"] and r["step"].startswith("b-")]
    assert [(r["run"], r["per_hour_per_gpu"]) for r in runs] == [
        ("b: builds supplied (GPU phase, 1 GPU, candidate share 0.3)", 4 / 20 * 3600),
        ("b: builds supplied (GPU phase, 1 GPU)", 4 / 30 * 3600),
        ("b: builds supplied (GPU phase, 1 GPU, worker-abc)", 4 / 40 * 3600),
        ("b: builds supplied (GPU phase, 1 GPU, candidate share 0.5, worker-abc)", 4 / 50 * 3600),
        ("b: builds supplied (GPU phase, 1 GPU, candidate share 0.5, backfill 20 s)", 4 / 60 * 3600)]


def test_run_a_says_its_build_cpu_and_how_many_builds_were_light(tmp_path):
    built = [{"build.cpu_seconds": s, "build.light_headers": light, "build.minimal_headers": minimal}
             for s, light, minimal in ((40, 1, 1), (50, 1, 0), (60, 0, 0))]
    rows = [{"step": "a", "verdict": "OK", "phase_seconds": p} for p in built]
    rows.append({"step": "a", "verdict": "OK", "phase_seconds": {"build.replayed": 1}})  # a replay: no build
    report(tmp_path, 4, [{"step": "a", "start": 0, "end": 10, "cpu_s": 160}], rows)
    table = (tmp_path / "table.md").read_text()
    assert "median 50.0, p90 50.0 over 3 builds; 2 of them with the light torch headers (`build.light_headers`), " \
        "1 of those with the minimal .cu header" in table


def test_a_grpo_shaped_batch_has_few_problems_with_many_distinct_samples(tmp_path):
    out = tmp_path / "v"
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "fidelity", "variants.py"), str(out), "--n", "24",
                    "--layout", "corpus", "--problems", "4"], check=True, capture_output=True)
    manifest = json.load(open(out / "manifest.json"))
    per_problem = {}
    for e in manifest:
        per_problem.setdefault(e["problem"], []).append(open(e["candidate"]).read())
    assert len(manifest) == 24 and len(per_problem) == 4
    assert all(len(texts) >= 4 and len(set(texts)) == len(texts) for texts in per_problem.values())
    levels = {p.split("/")[0] for p in per_problem}
    assert len(levels) >= 2, per_problem.keys()  # spread over the corpus, not its first problems


def test_a_stopped_c_bounds_the_ratio_from_its_last_verdict(tmp_path):
    """c stopped mid-evaluation (a device session's end) has only its eval window's opening line:
    its makespan runs to its last verdict, it is marked stopped, and a / c is an upper bound, not
    scaled; kjudge's speedups are set against KernelBench's on the candidates both judged correct."""
    rows = [{"step": "a", "verdict": "OK", "candidate": "c%d.py" % i, "speedup": 2.0} for i in range(8)]
    rows += [{"step": "c", "verdict": "OK", "candidate": "c%d.py" % i, "speedup": s, "done_at": 240 + 10 * i, "wall_s": 10}
             for i, s in enumerate((2.0, 1.0, 4.0))]
    report(tmp_path, 8, [{"step": "a", "start": 0, "end": 50, "cpu_s": 400},
                         {"step": "c-build", "start": 200}, {"step": "c-build", "start": 200, "end": 230, "cpu_s": 100},
                         {"step": "c-eval", "start": 230}], rows)
    runs = {r["run"][0]: r for r in json.load(open(tmp_path / "results.json"))["runs"]}
    assert runs["c"]["stopped"] and not runs["a"]["stopped"]
    assert (runs["c"]["makespan_s"], runs["c"]["judged"], runs["c"]["cpu_s_per_candidate"]) == (30 + 30, 3, None)
    table = (tmp_path / "table.md").read_text()
    assert "c: KernelBench (builds, then evaluation) (stopped)" in table
    assert "Makespan a / c <= 0.83" in table and "stopped after 3 of its 8 candidates" in table
    assert "on the 3 candidates both judged correct: median 1.00, range 0.50-2.00" in table


def test_verdicts_without_any_window_get_one_from_their_own_times(tmp_path):
    """Rows of an older run whose stopped step wrote no window line: the window is the span from
    the first submission (done_at - wall_s) to the last verdict."""
    rows = [{"step": "c", "verdict": "OK", "candidate": "c0.py", "done_at": 300, "wall_s": 40},
            {"step": "c", "verdict": "OK", "candidate": "c1.py", "done_at": 330, "wall_s": 30}]
    report(tmp_path, 4, [{"step": "c-build", "start": 200, "end": 260, "cpu_s": 0}], rows)
    runs = {r["run"][0]: r for r in json.load(open(tmp_path / "results.json"))["runs"]}
    assert runs["c"]["stopped"] and runs["c"]["makespan_s"] == 60 + 70
