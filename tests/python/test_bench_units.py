"""kjudge-bench's pieces without a daemon: the on-disk layouts, the resumable state, KernelBench's
file formats, the report's self-containment."""

import json

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
