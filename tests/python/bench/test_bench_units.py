"""kjudge-bench's pieces without a daemon: the on-disk layouts, the resumable state, KernelBench's
file formats, the report's self-containment."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kjudge.bench import html_report, kernelbench_files
from kjudge.bench.layout import find_generations, find_problems
from kjudge.bench.state import State
from kjudge.bench.summary import summarize
from kjudge.v1 import result_pb2, verdict_pb2


def test_layouts(tmp_path):
    (tmp_path / "data" / "level2").mkdir(parents=True)
    (tmp_path / "data" / "level2" / "17_Conv_ReLU.py").write_text("")
    (tmp_path / "data" / "level2" / "notes.md").write_text("")
    (tmp_path / "data" / "other").mkdir()
    assert find_problems(tmp_path / "data") == {(2, 17): tmp_path / "data" / "level2" / "17_Conv_ReLU.py"}
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("level_2_problem_17_sample_1_kernel.py", "level_2_problem_17_sample_0.md",
                 "level_2_problem_3_sample_0_kernel.py", "eval_results.json", "level_2_problem_x_sample_0_kernel.py"):
        (runs / name).write_text("")
    got = [(s.level, s.problem, s.sample, s.is_completion) for s in find_generations(runs)]
    assert got == [(2, 3, 0, False), (2, 17, 0, True), (2, 17, 1, False)]
    (runs / "level_2_problem_3_sample_0.txt").write_text("")
    with pytest.raises(ValueError, match="two generations"):
        find_generations(runs)


def result(verdict, speedup=0.0, sets=(True,)):
    r = result_pb2.Result(status=verdict_pb2.Verdict.Value(verdict), message="m")
    for ok in sets:
        r.correctness.add(name="declared", passed=ok)
    if speedup:
        r.performance.speedup = speedup
        r.performance.candidate.trials = r.performance.baseline.trials = 10
        r.performance.candidate.mean_ms, r.performance.baseline.mean_ms = 1.0 / speedup, 1.0
    return r


def record(mode, problem, sample, res):
    return {"key": "%s/1/%d/%d" % (mode, problem, sample), "mode": mode, "level": 1, "problem": problem,
            "sample": sample, "name": "%d_P" % problem, "file": "%d_P.py" % problem, "result": res}


def test_state_keeps_final_results_and_survives_a_cut_line(tmp_path):
    path = tmp_path / "state.jsonl"
    st = State(path)
    assert st.add(record("strict", 1, 0, result("OK", 2.0)))
    assert not st.add(record("strict", 1, 1, result("INFRA_ERROR")))
    assert not st.add(record("strict", 1, 2, None))  # the judge gave up
    with open(path, "a") as f:
        f.write('{"key": "strict/1/9/9", "result": {"sta')  # a crash mid-line
    again = State(path)
    assert list(again.records) == ["strict/1/1/0"]
    assert again.records["strict/1/1/0"]["result"].performance.speedup == 2.0
    assert again.add(record("compat", 1, 0, result("INCORRECT")))  # appended after the cut line
    assert sorted(State(path).records) == ["compat/1/1/0", "strict/1/1/0"]


def test_kernelbench_files_and_compat_correctness():
    recs = [record("compat", 10, 1, result("DECOY", 3.0)), record("compat", 10, 0, result("OK", 1.5)),
            record("compat", 2, 0, result("COMPILE_ERROR", sets=())),
            record("compat", 2, 1, result("INCORRECT", sets=(True, False)))]
    kb = kernelbench_files.eval_results(recs, 1, "cuda:0")
    assert list(kb) == ["2", "10"] and [s["sample_id"] for s in kb["10"]] == [0, 1]
    assert kb["10"][1]["correctness"] and kb["10"][1]["metadata"]["kjudge_status"] == "DECOY"
    assert kb["10"][0]["runtime"] == pytest.approx(1 / 1.5) and kb["10"][0]["runtime_stats"]["device"] == "cuda:0"
    assert kb["2"][0]["compiled"] is False and kb["2"][0]["runtime"] == -1.0
    assert kb["2"][1]["metadata"]["correctness_trials"] == "(1 / 2)" and not kb["2"][1]["correctness"]
    assert kernelbench_files.baseline_times(recs, "cuda:0")["level1"]["10_P.py"]["mean"] == 1.0
    s = summarize(recs + [dict(r, mode="strict", key="s" + r["key"]) for r in recs], ["strict", "compat"], [1.0], [1, 2])
    assert s["compat"]["overall"]["correct_rate"] == 0.5  # the DECOY passed every set: KernelBench counts it
    assert s["strict"]["overall"]["correct_rate"] == 0.25
    assert s["compat"]["overall"]["fast_p"]["1"] == 0.5 and s["strict"]["overall"]["fast_p"]["1"] == 0.25
    html = html_report.render(s, ["strict", "compat"], [1.0], [1, 2], "t", {"backend": "cuda"})
    assert html.count("<svg") == 2 and "10_P" in html and "<script" not in html
    json.dumps(s)  # summary.json must serialize


def timed(verdict, speedup, vs_compile=None, sets=(True, True)):
    r = result(verdict, speedup, sets)
    r.performance.baseline.median_ms = 1.0
    if vs_compile is not None:
        r.performance.compiled_baseline.trials, r.performance.compiled_baseline.median_ms = 10, 0.8
        r.performance.speedup_vs_compiled = vs_compile
    return r


def leveled(mode, level, problem, sample, res):
    return dict(record(mode, problem, sample, res), level=level, key="%s/%d/%d/%d" % (mode, level, problem, sample))


def faster_fixture():
    """Level 1: problem 1 (2.0x / 1.5x vs compile, 1.05x / 0.8x), problem 2 (1.2x / 1.0x, INCORRECT);
    level 2: problem 3 (a FALLBACK at 3.0x / 2.5x that passes every set, a COMPILE_ERROR)."""
    per_mode = [(1, 1, 0, timed("OK", 2.0, 1.5)), (1, 1, 1, timed("OK", 1.05, 0.8)),
                (1, 2, 0, timed("OK", 1.2, 1.0)), (1, 2, 1, result("INCORRECT", sets=(True, False))),
                (2, 3, 0, timed("FALLBACK", 3.0, 2.5)), (2, 3, 1, result("COMPILE_ERROR", sets=()))]
    return [leveled(m, *row) for m in ("strict", "compat") for row in per_mode]


def test_faster_vs_eager_and_vs_compile_by_hand():
    s = summarize(faster_fixture(), ["strict", "compat"], [1.0], [1, 2])
    strict, compat = s["strict"], s["compat"]
    # per problem: share of its samples correct and > 1.1x, then the mean over problems
    assert strict["levels"]["1"]["faster_vs_eager"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert strict["levels"]["1"]["faster_vs_compile"] == pytest.approx((1 / 2 + 0) / 2)
    assert strict["levels"]["2"]["faster_vs_eager"] == 0 and strict["levels"]["2"]["faster_vs_compile"] == 0
    assert strict["overall"]["faster_vs_eager"] == pytest.approx(1 / 3)
    assert strict["overall"]["faster_vs_compile"] == pytest.approx(1 / 6)
    # compat counts the FALLBACK that passed every set, as KernelBench does
    assert compat["levels"]["2"]["faster_vs_eager"] == pytest.approx(1 / 2)
    assert compat["overall"]["faster_vs_eager"] == pytest.approx(1 / 2)
    assert compat["overall"]["faster_vs_compile"] == pytest.approx(1 / 3)
    assert strict["overall"]["faster_threshold"] == 1.1
    at_2 = summarize(faster_fixture(), ["strict", "compat"], [1.0], [1], faster_threshold=2.0)
    assert at_2["strict"]["overall"]["faster_vs_eager"] == 0  # 2.0x is not above 2.0x
    assert at_2["compat"]["overall"]["faster_vs_eager"] == pytest.approx(1 / 6)


def test_faster_vs_compile_is_unknown_without_a_compile_baseline():
    recs = [leveled("strict", 1, 1, 0, timed("OK", 2.0))]
    a = summarize(recs, ["strict"], [1.0], [1])["strict"]["overall"]
    assert a["faster_vs_eager"] == 1.0 and a["faster_vs_compile"] is None


def test_printout_and_report_show_both_faster_columns():
    import io

    from kjudge.bench.cli import print_summary
    s = summarize(faster_fixture(), ["strict", "compat"], [1.0], [1])
    out = io.StringIO()
    print_summary(s, ["strict", "compat"], [1.0], [1], file=out)
    lines = [" ".join(line.split()) for line in out.getvalue().splitlines()]
    assert "faster vs eager >1.1x 33.3% 50.0%" in lines and "faster vs compile >1.1x 16.7% 33.3%" in lines
    assert "level 2 strict 0.0% 0.0% 0.0% | compat 50.0% 50.0% 50.0%" in lines
    html = html_report.render(s, ["strict", "compat"], [1.0], [1], "t", {})
    assert "faster vs eager (&gt;1.1x)" in html and "compat faster vs compile</th>" in html


def test_report_fills_reference_ms_and_says_why_each_sample_counts():
    failing = result("INCORRECT", sets=(True, False))
    failing.performance.baseline.trials, failing.performance.baseline.median_ms = 10, 0.25  # the oracle's timing
    recs = faster_fixture() + [leveled("compat", 1, 4, 0, failing)]
    s = summarize(recs, ["strict", "compat"], [1.0], [1])
    assert {p["problem"]: p["ref_ms"] for p in s["compat"]["problems"]} == {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.25}
    fallback = next(r for r in s["compat"]["rows"] if r["verdict"] == "FALLBACK")
    assert fallback["correct"] and fallback["kernelbench_correct"]
    assert fallback["why"] == "KernelBench: 2/2 sets passed (kjudge verdict FALLBACK)"
    strict_fallback = next(r for r in s["strict"]["rows"] if r["verdict"] == "FALLBACK")
    assert not strict_fallback["correct"] and strict_fallback["kernelbench_correct"]
    html = html_report.render(s, ["strict", "compat"], [1.0], [1], "t", {})
    assert "<th>KernelBench correct</th><th>counted correct</th><th>why</th>" in html
    assert "<td>FALLBACK</td><td>yes</td><td>yes</td><td>KernelBench: 2/2 sets passed" in html
    assert '<td class="n">0.25</td></tr>' in html  # problem 4's reference ms, though no sample passed


def test_speedup_interval_is_shown_when_the_result_has_one():
    from types import SimpleNamespace

    from kjudge.bench import summary
    fields = {"speedup_ci_low": 1, "speedup_ci_high": 1}
    perf = SimpleNamespace(DESCRIPTOR=SimpleNamespace(fields_by_name=fields), speedup_ci_low=1.8, speedup_ci_high=2.2)
    assert summary.speedup_ci(perf) == (1.8, 2.2)
    assert summary.speedup_ci(result("OK", 2.0).performance) is None  # this schema has no such field
    row = {"speedup": 2.0, "speedup_ci": (1.8, 2.2)}
    assert html_report._speedup_cell(row) == "2 (1.8–2.2)"


@pytest.mark.parametrize("stop", ["sigint", "sigterm"])
def test_interrupted_run_writes_an_incomplete_summary_and_report(tmp_path, monkeypatch, stop):
    import os
    import signal

    from kjudge.bench import cli
    (tmp_path / "data" / "level1").mkdir(parents=True)
    (tmp_path / "data" / "level1" / "1_P.py").write_text("")
    runs = tmp_path / "runs"
    runs.mkdir()
    for sample in (0, 1):
        (runs / ("level_1_problem_1_sample_%d_kernel.py" % sample)).write_text("")

    def judge_one_then_stop(args, state, problems, samples, modes):
        state.add(record("strict", 1, 0, timed("OK", 2.0)))
        if stop == "sigint":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)  # the batch system's time limit

    monkeypatch.setattr(cli, "judge_missing", judge_one_then_stop)
    out = tmp_path / "out"
    rc = cli.main(["--dataset", str(tmp_path / "data"), "--generations", str(runs), "--out", str(out),
                   "--backend", "cpu"])
    assert rc == 130
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"] == {"complete": False, "judged": 1, "wanted": 2,
                              "stopped": "interrupted (%s)" % ("SIGINT" if stop == "sigint" else "SIGTERM")}
    assert summary["strict"]["overall"]["samples"] == 1
    assert "INCOMPLETE" in (out / "report.html").read_text()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_a_kernelbench_clone_is_a_dataset(tmp_path):
    clone = tmp_path / "KernelBench"  # git clone https://github.com/ScalingIntelligence/KernelBench
    (clone / "KernelBench" / "level1").mkdir(parents=True)
    (clone / "KernelBench" / "level1" / "19_ReLU.py").write_text("")
    (clone / "scripts").mkdir()
    assert find_problems(clone) == {(1, 19): clone / "KernelBench" / "level1" / "19_ReLU.py"}
    assert find_problems(clone / "KernelBench") == find_problems(clone)
    with pytest.raises(ValueError, match="no dataset folder"):
        find_problems(tmp_path / "missing")


def load_fidelity():
    import importlib.util
    path = Path(__file__).resolve().parents[3] / "bench/fidelity/fidelity.py"
    spec = importlib.util.spec_from_file_location("fidelity_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_fidelity_report_counts_the_jobs_whose_interval_holds_the_repeats_median():
    fid = load_fidelity()
    jobs = [{"speedup": 1.00, "ci_low": 0.99, "ci_high": 1.01},
            {"speedup": 1.02, "ci_low": 1.015, "ci_high": 1.025},  # too tight: misses the median 1.01
            {"speedup": 1.01, "ci_low": 1.00, "ci_high": 1.02},
            {"speedup": 0.0, "ci_low": 0.0, "ci_high": 0.0}]  # no timing: not counted
    assert fid.ci_covers(jobs) == [2, 3]
    assert fid.ci_covers(jobs[:1]) is None  # one job: nothing to compare with
    assert fid.ci_covers([dict(j, ci_low=0.0) for j in jobs]) is None  # no interval reported


def test_resumed_kernelbench_rows_come_only_from_this_runs_gpu():
    """KernelBench's speedups are compared with kjudge's side by side: a row timed on another card
    is not resumed (KernelBench evaluates that candidate again); kjudge's rows follow --resume-phases."""
    fid = load_fidelity()
    kb = lambda hw: json.dumps({"phase": "kb", "metadata": {"hardware": hw}})  # noqa: E731
    assert fid.resumed_phase(kb("NVIDIA H100 80GB HBM3"), "kb", "NVIDIA H100 80GB HBM3")
    assert not fid.resumed_phase(kb("NVIDIA H100 80GB HBM3"), "kb", "NVIDIA H200")
    assert fid.resumed_phase(kb("NVIDIA H100 80GB HBM3"), "kb", None)  # a report made without a GPU
    strict = json.dumps({"phase": "alone", "mode": "strict"})
    assert not fid.resumed_phase(strict, "kb", "NVIDIA H200")
    assert fid.resumed_phase(strict, "", "NVIDIA H200")
    assert not fid.resumed_phase("{cut line", "", None)


def test_a_fidelity_row_keeps_where_the_jobs_wall_went():
    fid = load_fidelity()
    row = fid.summarize_result({"status": "OK", "phaseSeconds": {"device_memory_wait": 61.25, "build": 2.0},
                                "performance": {"speedup": 1.5, "speedupSource": "events", "trustedCallMs": 0.07}})
    assert row["phase_seconds"] == {"device_memory_wait": 61.25, "build": 2.0}
    assert row["speedup_source"] == "events" and row["trusted_call_ms"] == 0.07


def test_the_loaded_phase_keeps_the_node_full_with_several_measured_jobs_at_once(tmp_path):
    import threading
    import time
    from types import SimpleNamespace
    fid = load_fidelity()

    class Judge:  # holds each job 50 ms; counts the jobs in flight
        def __init__(self):
            self.lock, self.inflight, self.peak_measured, self.max_inflight, self.done = threading.Lock(), {}, 0, 0, {}

        def submit(self, jid, ref, cand, mode, batch, problem_id, meta):
            with self.lock:
                self.inflight[jid] = (meta["phase"], time.time())
                self.max_inflight = max(self.max_inflight, len(self.inflight))
                self.peak_measured = max(self.peak_measured, sum(p == "loaded" for p, _ in self.inflight.values()))

        def poll(self, ids):
            time.sleep(0.005)
            with self.lock:
                out = {j: {"status": "OK"} for j in ids if j in self.inflight and time.time() - self.inflight[j][1] > 0.05}
                for j in out:
                    del self.inflight[j]
            return out

        def wait(self, jid, timeout_s):
            while True:
                got = self.poll([jid])
                if jid in got:
                    return got[jid]

        def cancel(self, jid):
            with self.lock:
                self.inflight.pop(jid, None)

    entries = [{"problem": "level1/p%d.py" % i, "candidate": "c%d.py" % i, "mode": "strict"} for i in range(8)]
    a = SimpleNamespace(concurrency=6, loaded_at_once=3, fill_settle_s=0.1, loaded_repeats=1, noise=False,
                        dataset=str(tmp_path), job_timeout_s=10, modes=["strict"], loaded_modes="primary",
                        filler_manifest="")
    state = fid.State(str(tmp_path))
    judge = Judge()
    fid.phase_loaded(judge, state, a, entries, [], entries)
    loaded = [r for r in state.rows if r["phase"] == "loaded"]
    assert sorted(r["candidate"] for r in loaded) == sorted(e["candidate"] for e in entries)
    assert all(r["measured_at_once"] == 3 for r in loaded)
    assert judge.peak_measured == 3 and judge.max_inflight == 6  # never more than the node's concurrency


def test_the_timing_probe_runs_every_method_on_the_cpu(tmp_path):
    """bench/timing_probe is run on GPU nodes only when a session has device time: its CPU smoke
    run keeps every method working (NUMA ones say None where the node has one NUMA node)."""
    root = Path(__file__).resolve().parents[3]
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "19_ReLU.py").write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
        "def get_inputs():\n    return [torch.randn(32, 32)]\ndef get_init_inputs():\n    return []\n")
    out = tmp_path / "probe.json"
    subprocess.run([sys.executable, str(root / "bench/timing_probe/probe.py"), "--dataset", str(tmp_path), "--problems",
                    "level1/19_", "--device", "cpu", "--repeats", "1", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=300,
                   env={**os.environ, "PYTHONPATH": str(root / "python")})
    rows = json.loads(out.read_text())["problems"]["19_ReLU.py"]
    assert len(rows) >= 9 and all(len(v) == 1 for v in rows.values())
    assert all(v[0] > 0 for k, v in rows.items() if "NUMA" not in k)


def test_repair_turns_are_counted_over_problems_and_kept_out_of_first_answer_metrics(tmp_path, monkeypatch):
    """Problem 1 is solved by sample 0's repair at turn 1, problem 2 at once, problem 3 never: every
    metric counts first answers (1 of 3 correct); the turn rates are 1/3 at the first turn and 2/3 by
    turn 1 (by hand); KernelBench's eval_results.json holds first answers only."""
    import io

    from kjudge.bench import cli
    (tmp_path / "data" / "level1").mkdir(parents=True)
    for p in (1, 2, 3):
        (tmp_path / "data" / "level1" / ("%d_P.py" % p)).write_text("")
    runs = tmp_path / "runs"
    runs.mkdir()
    names = ["level_1_problem_1_sample_0_kernel.py", "level_1_problem_1_sample_0_turn_1_kernel.py",
             "level_1_problem_2_sample_0_kernel.py", "level_1_problem_3_sample_0_kernel.py",
             "level_1_problem_3_sample_0_turn_1.md"]
    for name in names:
        (runs / name).write_text("")
    samples = find_generations(runs)
    assert [(s.problem, s.sample, s.turn, s.is_completion) for s in samples] == [
        (1, 0, 0, False), (1, 0, 1, False), (2, 0, 0, False), (3, 0, 0, False), (3, 0, 1, True)]
    assert [s.key("strict") for s in samples[:2]] == ["strict/1/1/0", "strict/1/1/0/t1"]
    verdicts = {(1, 0): result("INCORRECT", sets=(True, False)), (1, 1): timed("OK", 1.5),
                (2, 0): timed("OK", 2.0), (3, 0): result("COMPILE_ERROR", sets=()),
                (3, 1): result("INCORRECT", sets=(False,))}

    def judge_all(args, state, problems, samples, modes):
        for s in samples:
            state.add(dict(record("strict", s.problem, s.sample, verdicts[(s.problem, s.turn)]), key=s.key("strict"),
                           turn=s.turn))
        return 0

    monkeypatch.setattr(cli, "judge_missing", judge_all)
    out = tmp_path / "out"
    printed = io.StringIO()
    monkeypatch.setattr(sys, "stdout", printed)
    assert cli.main(["--dataset", str(tmp_path / "data"), "--generations", str(runs), "--out", str(out),
                     "--backend", "cpu", "--k", "1"]) == 0
    overall = json.loads((out / "summary.json").read_text())["strict"]["overall"]
    assert overall["samples"] == 3 and overall["correct_rate"] == pytest.approx(1 / 3)
    assert overall["pass_at_k"]["1"] == pytest.approx(1 / 3)
    assert overall["turns"] == {"groups": 3, "first_turn": pytest.approx(1 / 3), "best_of_turns": pytest.approx(2 / 3),
                                "by_turn": {"0": pytest.approx(1 / 3), "1": pytest.approx(2 / 3)}}
    text = " ".join(printed.getvalue().split())
    assert "strict first turn 33.3%, best of turns 66.7%, by turn 0:33.3% 1:66.7% (3 problems)" in text
    html = (out / "report.html").read_text()
    assert "problems solved by any turn</th>" in html and '<td class="n">0 (turn 1)</td>' in html
    kb = json.loads((out / "eval_results.json").read_text())
    assert [len(kb[p]) for p in ("1", "2", "3")] == [1, 1, 1] and not kb["1"][0]["correctness"]
    # without turns, the printout and report say nothing of them
    plain = summarize([record("strict", 2, 0, timed("OK", 2.0))], ["strict"], [1.0], [1])
    assert "problems solved by any turn</th>" not in html_report.render(plain, ["strict"], [1.0], [1], "t", {})


def test_the_fidelity_report_sets_compat_on_the_full_node_beside_compat_alone_and_kernelbench_alone():
    """Issue 53's targets: compat loaded vs KernelBench alone (10 %, none past 25 %), loaded vs alone."""
    fid = load_fidelity()
    entries = [{"problem": "level1/p%d.py" % i, "candidate": "corpus/c%d.py" % i, "kind": "fast"} for i in range(3)]
    rows = []
    for i, (alone, loaded, kb) in enumerate([(2.0, 2.02, 2.05), (1.0, 1.0, 0.8), (12.0, 12.1, 12.0)]):
        c = entries[i]["candidate"]
        rows += [{"phase": "alone", "candidate": c, "mode": "compat", "verdict": "OK", "speedup": alone},
                 {"phase": "loaded", "candidate": c, "mode": "compat", "verdict": "OK", "speedup": loaded,
                  "cand_trials_redone": 4, "ref_trials_redone": 0, "excessive_speedup": loaded > 10},
                 {"phase": "kb", "candidate": c, "mode": "kb", "compiled": True, "correctness": True, "speedup": kb}]
    table, s = fid.build_report(rows, entries)
    assert [round(t["compat_loaded_over_kb"], 3) for t in table] == [round(2.02 / 2.05, 3), 1.25, round(12.1 / 12, 3)]
    assert s["compat_loaded_kb_n"] == 3 and abs(s["compat_loaded_kb_within10"] - 2 / 3) < 1e-9
    assert s["compat_loaded_kb_beyond25"] == [] and s["excessive_speedups"] == ["corpus/c2.py"]
    assert not s["targets"]["compat loaded vs KernelBench alone within 10% for >= 90%"]
    assert s["targets"]["compat loaded vs compat alone p90 <= 5%"]
    assert "compat loaded" in fid.markdown(table, s, {})
