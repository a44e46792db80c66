"""The trusted worker (python/kjudge_worker) on its own, on the CPU, as real processes: a worker
serving its control socket, a candidate's channel client in this process. kjudged's side of the
same protocol runs in the end-to-end KernelBench tests; the GPU transport (VMM) on the GPU node
(bench/gpu_worker)."""
import math
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
from kjudge_harness.channel import Channel, ChannelError  # noqa: E402
from kjudge_worker import compare  # noqa: E402
from kjudge_worker.heavy_sections import HeavySections  # noqa: E402

RELU = ROOT / "tests/kernelbench/tasks/activation_relu/reference.py"
TOL = {"atol": 1e-4, "rtol": 1e-4, "scale_aware": True, "nan_equal": True}


@pytest.fixture
def worker():
    yield from start_worker(cache_fraction=0.3)


@pytest.fixture
def uncached_worker():
    """A worker that keeps no set: every request for a set makes it again."""
    yield from start_worker(cache_fraction=0)


def start_worker(cache_fraction):
    root = tempfile.mkdtemp(prefix="kjw.")
    os.makedirs(os.path.join(root, "chan", "j1"))
    os.makedirs(os.path.join(root, "refs"))
    proc = subprocess.Popen([sys.executable, "-m", "kjudge_worker", root, "cpu", "", str(cache_fraction), "30"],
                            env={**os.environ, "PYTHONPATH": str(ROOT / "python")}, stderr=subprocess.PIPE)
    sock = os.path.join(root, "control.sock")
    deadline = time.monotonic() + 60
    while not os.path.exists(sock):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.05)
    yield root
    proc.kill()
    proc.wait()
    shutil.rmtree(root, ignore_errors=True)


def ask(root, req):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(os.path.join(root, "control.sock"))
        s.sendall(json.dumps(req).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            assert chunk, "the worker closed the connection"
            data += chunk
    return json.loads(data)


def prepare(root, job_id="j1", ref=RELU, sets=None, **extra):
    Path(root, "refs", f"{job_id}.py").write_text(Path(ref).read_text())
    os.makedirs(os.path.join(root, "chan", job_id), exist_ok=True)
    req = {"op": "prepare", "job_id": job_id, "reference_path": f"refs/{job_id}.py", "channel_path": f"chan/{job_id}/sock",
           "backend": "cpu", "precision": "fp32", "mode": "strict", "size_overrides": {}, "weight_seed": 7,
           "sets": sets or [{"name": "declared", "seed": 11}, {"name": "signed", "seed": 12, "transform": "signflip"}],
           "timing": {"skip": True}, "tolerance": TOL, "time_baseline": False, **extra}
    return ask(root, req)


def test_a_correct_candidate_passes_and_a_wrong_one_fails_without_seeing_expected_values(worker):
    rep = prepare(worker)
    assert rep["ok"], rep
    assert [s["name"] for s in rep["sets"]] == ["declared", "signed"]
    chan = Channel(os.path.join(worker, "chan/j1/sock"), torch.device("cpu"))
    x = chan.inputs(0)[0]
    chan.send_output("output", 0, torch.relu(x), {"type": "torch.Tensor", "dtype": "float32", "shape": list(x.shape)})
    y = chan.inputs(1)[0]
    wrong = torch.relu(y) + 1
    # the reply says "received", nothing about the comparison
    reply, _ = chan.call({"op": "output", "set": 1, "desc": {"dtype": "float32", "shape": list(y.shape)}})
    assert reply == {"ok": True}
    chan.close()
    del wrong
    res = ask(worker, {"op": "results", "job_id": "j1"})
    assert res["sets"]["0"]["passed"] is True and res["sets"]["0"]["mismatches"] == 0
    assert res["sets"]["1"]["passed"] is False and "no output tensor" in res["sets"]["1"]["problem"]
    assert res["protocol_errors"] == [] and res["flags"] == []  # the harness's own protocol is clean
    by = res["judge_seconds_by_request"]  # the candidate's wait for the judge, per request kind
    assert set(by) == {"inputs", "output"} and sum(by.values()) == pytest.approx(res["judge_seconds"])
    # the worker's own time on the job by step: both sets made (and fingerprinted), handed over,
    # and the one output that came imported and compared
    steps = res["worker_step_seconds"]
    assert {"make_set", "fingerprint", "export", "import", "compare"} <= set(steps), steps
    assert all(v >= 0 for v in steps.values())


def test_the_daemon_can_ask_how_long_a_candidate_has_waited_for_the_judge(worker):
    """`judge_seconds` (asked at the candidate's deadline, which grows by the answer) counts the
    requests served so far and the one in service; a job the worker does not hold has waited 0."""
    assert prepare(worker)["ok"]
    chan = Channel(os.path.join(worker, "chan/j1/sock"), torch.device("cpu"))
    chan.inputs(0)
    chan.inputs(1)
    waited = ask(worker, {"op": "judge_seconds", "job_id": "j1"})["judge_seconds"]
    assert waited > 0
    assert ask(worker, {"op": "judge_seconds", "job_id": "nope"}) == {"ok": True, "judge_seconds": 0.0}
    chan.close()
    res = ask(worker, {"op": "results", "job_id": "j1"})
    # the answer counted the requests so far, the last one up to the moment asked (its reply is
    # sent before its time is added): never more than the job's final count
    assert waited <= res["judge_seconds"] + 1e-9

    from kjudge_worker import job as worker_job
    from kjudge_worker.waits import WaitClock
    clock = WaitClock()
    clock.begin()
    time.sleep(0.05)
    assert clock.end() >= 0.05  # a request served
    clock.begin()
    time.sleep(0.05)  # one in service, e.g. queued behind other jobs' sets
    assert worker_job.Job.judge_seconds_now(types.SimpleNamespace(judge_clock=clock)) >= 0.1


def test_outputs_are_compared_once_and_unknown_sets_are_refused(worker):
    assert prepare(worker)["ok"]
    chan = Channel(os.path.join(worker, "chan/j1/sock"), torch.device("cpu"))
    x = chan.inputs(0)[0]
    desc = {"dtype": "float32", "shape": list(x.shape)}
    chan.send_output("output", 0, torch.relu(x) * 2 + 1, desc)
    with pytest.raises(ChannelError, match="already given"):
        chan.send_output("output", 0, torch.relu(x), desc)  # a second try does not replace the first
    with pytest.raises(ChannelError, match="no set"):
        chan.inputs(7)
    with pytest.raises(ChannelError, match="not audited"):
        chan.send_output("audit", 3, torch.relu(x), desc)
    chan.close()
    res = ask(worker, {"op": "results", "job_id": "j1"})
    assert res["sets"]["0"]["passed"] is False and res["sets"]["0"]["mismatches"] > 0
    # what the honest harness never sends is on record for the daemon (CHEAT: tamper)
    assert any("already given" in e for e in res["protocol_errors"])
    assert any("no set" in e for e in res["protocol_errors"])


def test_an_output_replayed_from_an_earlier_set_is_flagged(worker):
    assert prepare(worker, sets=[{"name": "declared", "seed": 11}, {"name": "declared-2", "seed": 13}])["ok"]
    chan = Channel(os.path.join(worker, "chan/j1/sock"), torch.device("cpu"))
    x = chan.inputs(0)[0]
    desc = {"dtype": "float32", "shape": list(x.shape)}
    first = torch.relu(x)
    chan.send_output("output", 0, first, desc)
    chan.inputs(1)
    chan.send_output("output", 1, first, desc)  # the answer for set 0 again
    chan.close()
    res = ask(worker, {"op": "results", "job_id": "j1"})
    assert res["sets"]["1"]["passed"] is False
    assert res["flags"] == ["output_of_earlier_set:declared-2:declared"]
    assert res["protocol_errors"] == []


UNSEEDED_RELU = """import random
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.tensor([random.uniform(-1, 1) for _ in range(256)])]  # not torch's generator: not the seed's

def get_init_inputs():
    return []
"""


def test_a_set_made_again_with_other_values_is_the_judges_fault_not_a_wrong_answer(uncached_worker, tmp_path):
    ref = tmp_path / "unseeded.py"
    ref.write_text(UNSEEDED_RELU)
    assert prepare(uncached_worker, ref=ref, sets=[{"name": "declared", "seed": 11}])["ok"]
    chan = Channel(os.path.join(uncached_worker, "chan/j1/sock"), torch.device("cpu"))
    x = chan.inputs(0)[0]
    with pytest.raises(ChannelError, match="failed serving"):
        chan.send_output("output", 0, torch.relu(x), {"dtype": "float32", "shape": list(x.shape)})
    chan.close()
    res = ask(uncached_worker, {"op": "results", "job_id": "j1"})
    assert "0" not in res["sets"]  # no comparison against another set's expected output
    assert any("made again with other values" in f for f in res["worker_faults"]), res["worker_faults"]


def test_a_set_made_again_from_its_seed_is_the_same_set(uncached_worker):
    assert prepare(uncached_worker)["ok"]
    chan = Channel(os.path.join(uncached_worker, "chan/j1/sock"), torch.device("cpu"))
    x = chan.inputs(0)[0]
    chan.send_output("output", 0, torch.relu(x), {"dtype": "float32", "shape": list(x.shape)})
    chan.close()
    res = ask(uncached_worker, {"op": "results", "job_id": "j1"})
    assert res["sets"]["0"]["passed"] is True and res["worker_faults"] == []


def test_host_inputs_are_sealed_a_candidates_writes_stay_its_own(worker):
    assert prepare(worker)["ok"]
    chan = Channel(os.path.join(worker, "chan/j1/sock"), torch.device("cpu"))
    x = chan.inputs(0)[0]
    first = x.clone()
    x.fill_(0)  # copy-on-write pages: this process's copy only
    again = chan.inputs(0)[0]
    assert torch.equal(again, first)
    chan.close()


def test_a_reference_that_fails_is_reported_as_the_references_fault(worker):
    bad = Path(worker, "bad_ref.py")
    bad.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        raise ValueError('boom')\n"
                   "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n")
    rep = prepare(worker, job_id="j2", ref=bad)
    assert not rep["ok"] and rep["fault"] == "reference" and "boom" in rep["error"]


MASKED_SUM = """import torch

class Model(torch.nn.Module):
    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=1)

def get_inputs():
    return [torch.randn(4, 64), torch.randint(0, 2, (4, 64)).bool()]

def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("mode", ["strict", "compat"])
def test_compat_casts_every_input_as_kernelbench_strict_keeps_the_declared_dtypes(worker, tmp_path, mode):
    """KernelBench's evaluator casts every input tensor to the precision, a bool mask included;
    compat is its verdict, so a candidate gets the mask as KernelBench's would, and the set says so."""
    ref = tmp_path / "masked.py"
    ref.write_text(MASKED_SUM)
    rep = prepare(worker, job_id=f"m-{mode}", ref=ref, mode=mode, sets=[{"name": "declared", "seed": 11}])
    assert rep["ok"], rep
    chan = Channel(os.path.join(worker, f"chan/m-{mode}/sock"), torch.device("cpu"))
    x, mask = chan.inputs(0)
    chan.close()
    assert x.dtype == torch.float32
    if mode == "compat":
        assert mask.dtype == torch.float32 and set(mask.unique().tolist()) <= {0.0, 1.0}
        assert "input 1 cast from bool to float32 as KernelBench's evaluator does" in rep["sets"][0]["variant"], rep["sets"]
    else:
        assert mask.dtype == torch.bool and "cast" not in rep["sets"][0]["variant"], rep["sets"]


def test_sets_are_cached_per_seed_and_shared_by_a_group(worker):
    assert prepare(worker, job_id="a")["ok"]
    ask(worker, {"op": "forget", "job_id": "a"})
    before = ask(worker, {"op": "ping"})
    assert prepare(worker, job_id="b")["ok"]  # same problem, same seeds: nothing made again
    after = ask(worker, {"op": "ping"})
    assert after["cache_misses"] == before["cache_misses"]
    assert after["cache_hits"] > before["cache_hits"]


def test_a_groups_jobs_that_ask_for_the_baseline_together_time_it_once(worker):
    """kjudged keeps one baseline per problem once a job's result is in, but a group's jobs all
    ask before that: one H200 timed 8 problems' baselines 17 times in a batch of 64 jobs, each an
    exclusive hold of the GPU. The worker times it once; the others take its report."""
    import threading
    timing = {"warmup": 1, "min_trials": 5, "max_trials": 5}
    replies = {}
    # each job has audit positions of its own (kjudged's secret draw); the reference's loop has none
    jobs = [threading.Thread(target=lambda j=j, k=k: replies.update({j: prepare(
                worker, job_id=j, time_baseline=True, timing={**timing, "audit_calls": [k]})}))
            for k, j in enumerate(("ja", "jb", "jc"))]
    for t in jobs:
        t.start()
    for t in jobs:
        t.join(60)
    assert all(r["ok"] for r in replies.values()), replies
    shared = [j for j, r in replies.items() if r["phase_seconds"].get("baseline_shared")]
    assert len(shared) == 2
    loops = {json.dumps(r["baseline"]["trial_ms"]) for r in replies.values()}
    assert len(loops) == 1 and len(replies["ja"]["baseline"]["trial_ms"]) == 5  # one timing's figures
    # other timing settings are another baseline
    other = prepare(worker, job_id="jd", time_baseline=True, timing={**timing, "min_trials": 6, "max_trials": 6})
    assert not other["phase_seconds"].get("baseline_shared") and len(other["baseline"]["trial_ms"]) == 6


def test_a_groups_later_jobs_prepare_without_making_the_sets_an_earlier_job_made(uncached_worker):
    """Sets too large for the cache (here: a cache that keeps none) were made again by every
    job's prepare; a group's later jobs now take their facts from the first's, make none, and their
    candidates are judged on the same sets as before."""
    root = uncached_worker
    first = prepare(root, job_id="a")
    before = ask(root, {"op": "ping"})
    later = prepare(root, job_id="b")
    assert first["ok"] and later["ok"] and later["sets"] == first["sets"]
    assert ask(root, {"op": "ping"})["cache_misses"] == before["cache_misses"]  # no set looked for, none made
    other = prepare(root, job_id="c", sets=[{"name": "declared", "seed": 99}])  # another group's seeds
    assert other["ok"]
    chan = Channel(os.path.join(root, "chan/b/sock"), torch.device("cpu"))
    for k in (0, 1):
        x = chan.inputs(k)[0]
        chan.send_output("output", k, torch.relu(x), {"dtype": "float32", "shape": list(x.shape)})
    chan.close()
    res = ask(root, {"op": "results", "job_id": "b"})
    assert res["sets"]["0"]["passed"] and res["sets"]["1"]["passed"] and res["flags"] == []
    made = {j: ask(root, {"op": "results", "job_id": j, "timeout": 0})["worker_step_seconds"] for j in ("a", "c")}
    assert "make_set" in made["a"] and "make_set" in made["c"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_device_comparator_matches_the_daemons_rules(dtype):
    e = torch.tensor([0.0, 1.0, -2.0, float("nan"), float("inf"), 3.0, 100.0]).to(dtype)
    a = e.clone()
    assert compare.compare(e, a, 1e-4, 1e-4)["passed"] is (not e.is_floating_point() or True)
    if e.is_floating_point():
        a[3] = 0.0  # a number where NaN was expected
        a[5] = 3.5
        r = compare.compare(e, a, 1e-4, 1e-4)
        assert r["mismatches"] == 2 and r["first_mismatch_index"] == 3
        b = e.clone()
        b[0] = float("nan")  # NaN where a number was expected: counted apart
        r = compare.compare(e, b, 1e-4, 1e-4)
        assert "NaN where a number" in r["problem"] and r["mismatches"] == 1
        # allclose semantics (compat): NaN never equals NaN
        assert compare.compare(e, e.clone(), 1e-4, 1e-4, scale_aware=False, nan_equal=False)["mismatches"] == 1
    # scale-aware floor: atol scales with max |expected| (100 here)
    f = torch.tensor([100.0, 0.0])
    assert compare.compare(f, torch.tensor([100.0, 0.009]), 1e-4, 1e-4)["passed"]
    assert not compare.compare(f, torch.tensor([100.0, 0.009]), 1e-4, 1e-4, scale_aware=False)["passed"]


def whole_tensor_comparison(e, a, atol, rtol, scale_aware, nan_equal):
    """The comparator's rules on whole tensors, in float64 (the definition the chunks must meet)."""
    e, a = e.double(), a.double()
    fin_e = e[torch.isfinite(e)].abs()
    floor = atol * max(1.0, float(fin_e.max()) if fin_e.numel() else 1.0) if scale_aware else atol
    d = (a - e).abs()
    finite = torch.isfinite(e) & torch.isfinite(a)
    ok = (finite & (d <= floor + rtol * e.abs())) | (torch.isinf(e) & (a == e))
    if nan_equal:
        ok |= torch.isnan(a) & torch.isnan(e)
    wrong = ~ok
    rel = d[finite & (e != 0)] / e[finite & (e != 0)].abs()
    score = torch.where(finite, d / (floor + rtol * e.abs()).clamp_min(1e-300), torch.full_like(d, math.inf))
    order = sorted(torch.nonzero(wrong)[:, 0].tolist(), key=lambda i: (-float(score[i]), i))[:compare.WORST]
    return {"worst": [{"position": f"[{i}]", "got": f"{float(a[i]):.6g}", "expected": compare.value_class(float(e[i]))}
                      for i in order],"mismatches": int(wrong.sum()), "first_mismatch_index": int(torch.nonzero(wrong)[0, 0]) if wrong.any() else -1,
            "max_abs_error": float(d[finite].max()) if finite.any() else 0.0,
            "max_rel_error": float(rel.max()) if rel.numel() else 0.0,
            "nan_outputs": int((wrong & torch.isnan(a)).sum()), "inf_outputs": int((wrong & torch.isinf(a)).sum())}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32])
def test_comparator_in_chunks_meets_the_whole_tensor_rules(dtype, monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 7)  # 100 elements: 15 chunks, the last one short
    gen = torch.Generator().manual_seed(3)
    for trial in range(40):
        e = (torch.randn(100, generator=gen) * 10).to(dtype)
        a = e.clone()
        idx = torch.randint(0, 100, (trial % 9,), generator=gen)
        if dtype.is_floating_point:
            specials = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.5, 1e-3], dtype=dtype)
            a[idx] += specials[idx % 5]
            e[idx[::3]] = specials[(idx[::3] + 1) % 3]
        else:
            a[idx] += 1
        for scale_aware, nan_equal in ((True, True), (False, False)):
            got = compare.compare(e, a, 1e-3, 1e-3, scale_aware, nan_equal)
            want = whole_tensor_comparison(e, a, 1e-3, 1e-3, scale_aware, nan_equal)
            assert {k: got[k] for k in want} == want, (trial, scale_aware)
            assert got["passed"] is (want["mismatches"] == 0)


def test_comparator_leaves_a_float64_output_as_it_was():
    """Its float64 working copies are the tensors themselves for a float64 output: nothing in place."""
    e = torch.tensor([-3.0, 2.0, -0.5, float("nan")], dtype=torch.float64)
    a = torch.tensor([-3.0, 2.5, -0.5, float("nan")], dtype=torch.float64)
    e0, a0 = e.clone(), a.clone()
    r = compare.compare(e, a, 1e-4, 1e-4)
    assert (r["mismatches"], r["first_mismatch_index"], r["max_abs_error"]) == (1, 1, 0.5)
    assert torch.equal(e[:3], e0[:3]) and torch.equal(a[:3], a0[:3])


NVRTC = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "lib64" / "libnvrtc.so"


@pytest.mark.skipif(not NVRTC.exists(), reason="no CUDA toolkit's NVRTC on this machine")
def test_comparator_kernel_compiles_and_rounds_its_tolerance_as_the_torch_path():
    """The one-pass kernel's source compiles (NVRTC, as the worker does it on a GPU) for every dtype
    it reads, and its tolerance |e| * rtol + atol is a multiply then an add, each rounded (torch's
    mul_ then add_), never one fused multiply-add: an element on the edge of its tolerance gets one
    verdict from both paths. Their agreement on values is checked on the GPU (compare_cost.py) and
    at the first use in each worker process (compare._kernel_agrees)."""
    import ctypes
    from kjudge_worker import compare_kernel

    ptx = compare_kernel.compile_ptx("90", ctypes.CDLL(str(NVRTC))).decode()
    for _, name in compare_kernel.KINDS.values():
        assert f".entry kj_tally_{name}(" in ptx and f".entry kj_absmax_{name}(" in ptx
    assert "mul.rn.f64" in ptx and "add.rn.f64" in ptx
    assert "fma." not in ptx


def test_comparator_takes_the_torch_path_where_the_kernel_cannot_run():
    """CPU tensors (and integer outputs) never reach the kernel; the self-check's values hold NaN,
    Inf and elements on their tolerance's edge."""
    from kjudge_worker import compare_kernel

    e, a = compare._self_check_values(torch.device("cpu"), torch.float32)
    assert not compare._kernel_agrees(e) and not compare_kernel.usable(torch.ones(3, dtype=torch.int64))
    assert compare_kernel.chunk_tallies(e, a, 1e-3, 1e-3, True, compare.CHUNK) is None
    assert torch.isnan(e).any() and torch.isinf(a).any() and e.numel() > 3 * compare.SELF_CHECK_CHUNK
    by_torch = compare._chunk_tallies_by_torch(e, a, 1e-3, 1e-3, True, compare.SELF_CHECK_CHUNK)
    assert len(by_torch) == 4 and sum(row[0] for row in by_torch) > 0  # wrong elements in the check


def sized_job(total, sets, audits=(), param_bytes=0):
    """A worker Job with sets of the given (input, output) byte sizes and a model of `param_bytes`,
    on a device of `total` bytes."""
    import threading
    import types
    from kjudge_worker.job import Heavy, Job
    job = Job({"job_id": "sized"}, types.SimpleNamespace(bytes=param_bytes), None, torch.device("cpu"), "",
              Heavy(HeavySections(), total, torch.device("cpu")))
    job.specs = [{"index": k, "input_nbytes": i, "output_nbytes": o} for k, (i, o) in enumerate(sets)]
    job.audits = list(audits)
    return job


def test_the_timing_pool_of_large_sets_is_bounded_by_device_memory():
    gb = 1 << 30
    big = sized_job(80 * gb, [(6 * gb, 6 * gb)] * 5)  # 19_ReLU at KernelBench's size on an 80 GB GPU
    assert big.timing_pool([0, 1, 2, 3, 4]) == [0]
    small = sized_job(80 * gb, [(1 << 20, 1 << 20)] * 5)
    assert small.timing_pool([0, 1, 2, 3, 4]) == [0, 1, 2, 3, 4]
    # the admission estimate: the pool's inputs, two calls' outputs and the audited one kept
    big.pool, big.audits = [0], [7]
    assert big.candidate_bytes() == 6 * gb + 3 * 6 * gb + (1 << 30)
    # and the candidate's own model, as large as the reference's (level 3's wide MLPs: GBs of weights)
    wide = sized_job(80 * gb, [(1 << 20, 1 << 20)], param_bytes=5 * gb)
    wide.pool, wide.audits = [0], []
    assert wide.candidate_bytes() == 5 * gb + (1 << 20) + 2 * (1 << 20) + (1 << 30)


def test_a_larger_device_times_a_problem_with_the_pool_and_audits_of_an_h100():
    from kjudge_worker.job import MEMORY_SHARE_CAP
    gb = 1 << 30
    h100, h200 = int(79.2 * gb), int(139.8 * gb)  # what torch reports as their totals
    cumsum = [(4 * gb, 4 * gb)] * 5  # 91_cumsum_reverse at KernelBench's size
    assert 0.1 * h200 > 2 * 4 * gb > MEMORY_SHARE_CAP  # uncapped, the H200's tenth held two of its sets
    assert sized_job(h200, cumsum).timing_pool([0, 1, 2, 3, 4]) == sized_job(h100, cumsum).timing_pool([0, 1, 2, 3, 4]) == [0]
    small = [(200 << 20, 200 << 20)] * 5  # a few hundred MB a set: the whole pool on either device
    assert sized_job(h200, small).timing_pool([0, 1, 2, 3, 4]) == [0, 1, 2, 3, 4]
    # the candidate keeps each audited output: three of cumsum's would take 12 GiB, so one audit
    for total in (h100, h200):
        job = sized_job(total, cumsum)
        job.problem.init_inputs, job.problem.work = [], None
        job.timing_cfg = {"audit_calls": [3, 17, 41]}
        job.roofline = lambda: None
        job.public_set = lambda e: e
        report = job.prepared_report()
        assert report["pool"] == [0] and report["audits"] == [3]
        assert report["candidate_device_bytes"] == 4 * gb + 3 * 4 * gb + (1 << 30)


def most_at_once(use, n, together=None):
    """The most of n threads running use() at once. Where use() should let `together` in at once,
    each stays inside until that many are (60 s at most: only a broken build waits that long), so
    the slowest thread to start is waited for (a fixed 0.3 s stay flaked under load); otherwise
    each stays 0.3 s, a window for a second one to get in where it should not."""
    import threading
    inside, most, guard, enough = [0], [0], threading.Lock(), threading.Event()

    def run():
        with use():
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                if inside[0] == together:
                    enough.set()
            enough.wait(60 if together else 0.3)
            with guard:
                inside[0] -= 1

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return most[0]


def test_large_sets_are_used_by_one_job_at_a_time_small_ones_together():
    gb = 1 << 30
    job = sized_job(80 * gb, [(6 * gb, 6 * gb), (1 << 20, 1 << 20)])
    assert most_at_once(lambda: job.section(0), 3) == 1
    assert most_at_once(lambda: job.section(1), 3, together=3) == 3


def test_large_sets_beyond_the_first_borrow_the_preparations_idle_bytes_where_the_device_has_room(monkeypatch):
    """One H200: candidates of the largest problems waited 0.4-5.2 s each for other jobs' large
    sets, one at a time, while the preparations' part of the device sat idle."""
    from kjudge_worker import job
    from kjudge_worker.prepare_budget import PrepareBudget
    gib = 1 << 30
    free = {"bytes": 100 * gib}
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free["bytes"], 140 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 0)
    monkeypatch.setattr(job.transport, "release_cached", lambda device: None)
    budget = PrepareBudget(30 * gib)
    heavy = job.Heavy(HeavySections(lender=budget), 140 * gib, torch.device("cuda"))
    # 6 GiB sets ask 2 x 6 + 1 = 13 GiB: one on the reserve, two on the 30 GiB lent, not a third
    assert most_at_once(lambda: heavy.section(6 * gib), 4, together=3) == 3
    assert budget.used == 0
    free["bytes"] = 20 * gib  # the device itself lacks room for a second beside the first (13 + 13)
    assert most_at_once(lambda: heavy.section(6 * gib), 3) == 1
    free["bytes"] = 100 * gib
    with budget.hold(20 * gib):  # a preparation holds most of the part: nothing left to lend
        assert most_at_once(lambda: heavy.section(6 * gib), 3) == 1
    # without a lender (or on a small device whose part is smaller than a set's need): one at a time
    alone = job.Heavy(HeavySections(), 140 * gib, torch.device("cuda"))
    assert most_at_once(lambda: alone.section(6 * gib), 3) == 1


def test_a_large_problems_prepare_takes_a_heavy_section_and_leaves_the_budget_to_small_ones(monkeypatch):
    """Held in the preparations' budget too, a large job took the whole of it, first come first
    admitted, and the small jobs behind it waited 4.1 s each (one H200)."""
    import threading
    import types
    from kjudge_worker import job, server
    from kjudge_worker.prepare_budget import PrepareBudget
    gib = 1 << 30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (100 * gib, 140 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 0)
    w = server.Worker.__new__(server.Worker)
    w.preparing = PrepareBudget(28 * gib)
    sections = HeavySections(lender=w.preparing)
    heavy = job.Heavy(sections, 140 * gib, torch.device("cuda"))
    group = types.SimpleNamespace(sets_known=lambda: False)
    large, small, unknown = (types.SimpleNamespace(input_bytes=b) for b in (8 * gib, 1 << 20, None))
    with w.admitted_to_prepare(group, large, heavy):
        assert w.preparing.used == 0 and sections.in_flight == 4 * 8 * gib + job.HEAVY_HEADROOM
        passed = threading.Event()

        def small_prepare():
            with w.admitted_to_prepare(group, small, heavy):
                passed.set()

        t = threading.Thread(target=small_prepare)
        t.start()
        assert passed.wait(2)  # beside the large one, not behind it
        t.join()
    with w.admitted_to_prepare(group, unknown, heavy):  # unknown size: alone, in both
        assert w.preparing.used == 28 * gib and sections.reserve_taken


def test_a_candidate_alone_on_the_device_finds_no_cache_kept_for_the_worker(monkeypatch):
    """torch keeps its cached blocks up to the worker's part of the device (56 GiB of an H200);
    a candidate that holds the device alone (a retry, or an estimate over the candidates' whole
    capacity) was given it for more memory than the others: for its job they all go back."""
    from kjudge_worker import job, server
    gib = 1 << 30
    w = server.Worker.__new__(server.Worker)
    w.candidate_capacity = 60 * gib
    w.preparing = types.SimpleNamespace(capacity=28 * gib)
    assert w.candidate_alone({"device_alone": True}, {"candidate_device_bytes": gib})
    assert w.candidate_alone({}, {"candidate_device_bytes": 61 * gib})
    # kjudged borrows up to half the preparations' 28 GiB for it: a loan, not the device alone
    assert not w.candidate_alone({"candidate_borrow_share": 0.5}, {"candidate_device_bytes": 74 * gib})
    assert w.candidate_alone({"candidate_borrow_share": 0.5}, {"candidate_device_bytes": 75 * gib})
    assert not w.candidate_alone({"device_alone": False}, {"candidate_device_bytes": 33 * gib})
    w.candidate_capacity = 0  # the cpu backend: nothing is admitted by device memory
    assert not w.candidate_alone({}, {"candidate_device_bytes": 61 * gib})
    released = []
    monkeypatch.setattr(job.transport, "release_cached", lambda device: released.append(1))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 20 * gib)
    heavy = job.Heavy(HeavySections(), 140 * gib, torch.device("cuda"), keep=lambda: 56 * gib)
    heavy.give_back()
    assert released == []  # within the worker's part: kept
    heavy.keep = lambda: 0  # what prepare sets for a candidate alone
    heavy.give_back()
    assert released == [1]


def test_a_waiting_preparation_is_never_passed_by_a_large_set_borrowing_its_bytes():
    import threading
    from kjudge_worker.prepare_budget import PrepareBudget
    budget, entered, done = PrepareBudget(100), threading.Event(), threading.Event()

    def prepare_later():
        with budget.hold(50):
            entered.set()
            done.wait(5)

    with budget.hold(60):
        assert budget.lend(30) and budget.used == 90
        budget.repay(30)
        waiter = threading.Thread(target=prepare_later)
        waiter.start()
        deadline = time.monotonic() + 30  # queued (60 + 50 do not fit): its ticket is taken, not admitted
        while budget.arrived < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert budget.arrived == 2 and budget.admitted == 1
        assert not budget.lend(30)  # 60 + 30 would, but the preparation came first
    assert entered.wait(5) and budget.used == 50
    done.set()
    waiter.join(5)
    assert budget.used == 0


def test_a_jobs_wait_behind_another_jobs_heavy_set_is_counted(monkeypatch):
    """On a clock the test drives: second asks while first holds the set, the clock moves 0.3 s,
    first leaves; exactly those 0.3 s are second's wait, none first's, and a small set takes no
    turn (sleeps and wall-clock margins here failed on a loaded host)."""
    import threading
    import types
    from kjudge_worker import job
    from kjudge_worker.job import Heavy
    now, asked = [100.0], threading.Event()

    def monotonic():
        if threading.current_thread().name == "second":
            asked.set()
        return now[0]
    monkeypatch.setattr(job, "time", types.SimpleNamespace(monotonic=monotonic))
    gb, shared = 1 << 30, HeavySections()
    first, second = (Heavy(shared, 80 * gb, torch.device("cpu")) for _ in range(2))
    entered, release, second_in = threading.Event(), threading.Event(), threading.Event()

    def hold():
        with first.section(6 * gb):
            entered.set()
            assert release.wait(30)

    def second_job():
        with second.section(6 * gb):
            second_in.set()

    t = threading.Thread(target=hold)
    t.start()
    assert entered.wait(30)
    t2 = threading.Thread(target=second_job, name="second")
    t2.start()
    assert asked.wait(30)
    now[0] += 0.3
    assert not second_in.is_set()  # one large set at a time: it waits for first's
    release.set()
    t.join(30)
    t2.join(30)
    assert second_in.is_set()
    assert second.waited == pytest.approx(0.3) and first.waited == 0
    now[0] += 1.0
    with second.section(1 << 20):  # a small set takes no turn
        pass
    assert second.waited == pytest.approx(0.3)


def test_the_cache_never_keeps_an_entry_over_a_quarter_of_its_budget():
    from kjudge_worker.problems import Cache
    cache = Cache(100)
    assert not cache.put("big", object(), 26)
    assert cache.put("small", object(), 25)
    assert cache.get("big") is None and cache.get("small") is not None


def test_the_cache_gives_way_to_a_large_set_least_recently_used_first():
    from kjudge_worker.problems import Cache
    cache = Cache(100)
    for key in ("a", "b", "c"):
        cache.put(key, object(), 20)
    cache.get("a")  # now the most recently used
    assert cache.evict(30) == 40
    assert cache.get("b") is None and cache.get("c") is None and cache.get("a") is not None
    assert cache.evict(1000) == 20 and cache.used() == 0


def test_a_heavy_set_short_of_room_empties_the_cache(monkeypatch):
    # an H100 (2026-11-27): 7 GiB audits ran out of memory with the worker's cache full; a heavy
    # set needs itself and as much again in transients, and the whole cache gives way to that
    import threading
    from kjudge_worker import job
    from kjudge_worker.problems import Cache
    gib = 1 << 30
    cache = Cache(100 * gib)
    for key in ("a", "b"):
        assert cache.put(key, object(), 2 * gib)
    free = {"bytes": 20 * gib}
    monkeypatch.setattr(job.transport, "release_cached", lambda device: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free["bytes"], 80 * gib))
    heavy = job.Heavy(HeavySections(), 80 * gib, torch.device("cuda"), cache)
    heavy.make_room(7 * gib)  # 2 x 7 + 1 GiB headroom fit in 20 GiB: the cache stays
    assert cache.used() == 4 * gib
    free["bytes"] = 14 * gib  # the set alone would fit; with its transients it does not
    heavy.make_room(7 * gib)
    assert cache.used() == 0


def test_torch_keeps_the_workers_part_of_the_device_cached_and_gives_back_the_rest(monkeypatch):
    """Emptied after every heavy set, each making of a 4 GiB set mapped its memory anew (one
    H200: 1.45 s of making and 0.68 s of emptying per candidate of 91_cumsum_reverse). torch now
    keeps its blocks while it holds no more than the worker's own part of the device, and a
    heavy set about to be made counts them as free."""
    import threading
    from kjudge_worker import candidate_share, job
    from kjudge_worker.problems import Cache
    gib = 1 << 30
    released, mem = [], {"reserved": 20 * gib, "allocated": 2 * gib, "free": 10 * gib}
    monkeypatch.setattr(job.transport, "release_cached", lambda device: released.append(1))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: mem["reserved"])
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: mem["allocated"])
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (mem["free"], 80 * gib))
    heavy = job.Heavy(HeavySections(), 80 * gib, torch.device("cuda"), Cache(16 * gib), keep=lambda: 32 * gib)
    with heavy.section(6 * gib):  # 2 x 6 + 1 GiB: 10 free and 18 of torch's own unused
        pass
    assert released == []
    mem["reserved"] = 40 * gib  # beyond the worker's part: back to the device
    heavy.give_back()
    assert released == [1]
    mem.update(reserved=2 * gib, free=8 * gib)  # short of room: torch's blocks go back first
    heavy.make_room(6 * gib)
    assert released == [1, 1]
    # the worker's part: its cache and preparations, within what candidates and the fixed reserve leave
    assert candidate_share.worker_kept_bytes(80 * gib, 16 * gib, 16 * gib) == 32 * gib
    h200 = int(140.4 * gib)
    assert candidate_share.worker_kept_bytes(h200, int(0.2 * h200), int(0.2 * h200)) == 2 * int(0.2 * h200)
    assert candidate_share.worker_kept_bytes(40 * gib, 8 * gib, 8 * gib) == 4 * gib  # MIN_SHARE's floor
    assert candidate_share.worker_kept_bytes(0, 0, 0) == 0


def test_a_candidate_that_dies_mid_request_is_not_a_protocol_violation(worker):
    # a crashed or timed-out candidate leaves its requests unanswered: the worker's replies fail,
    # which is not tampering (CHEAT is only for requests the harness never makes)
    from kjudge_protocol import wire
    assert prepare(worker)["ok"]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(os.path.join(worker, "chan/j1/sock"))
    wire.send(s, {"op": "inputs", "set": 0})
    s.close()  # gone before the reply
    res = ask(worker, {"op": "results", "job_id": "j1"})
    assert res["protocol_errors"] == [] and res["flags"] == [], res


def test_a_gpu_that_cannot_give_the_worker_a_context_is_the_devices_fault(tmp_path, monkeypatch):
    # A GPU whose memory is gone fails the worker's first CUDA call ("CUDA error: out of memory",
    # not torch's OutOfMemoryError). Before any reference runs, that is the device's fault: kjudged
    # retries the job and checks the GPU, instead of blaming the job's reference (INVALID_JOB).
    from kjudge_worker.server import Worker
    w = Worker(str(tmp_path), "cpu", "", 0.3, 30)
    w.device = torch.device("cuda")

    def no_context(*args, **kwargs):
        raise RuntimeError("CUDA error: out of memory\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")

    monkeypatch.setattr(torch, "ones", no_context)
    a, b = socket.socketpair()
    with a:
        a.sendall(json.dumps({"op": "prepare", "job_id": "j1", "reference_path": "refs/none.py"}).encode() + b"\n")
        w.serve_connection(b)
        reply = json.loads(a.makefile().readline())
    assert reply["fault"] == "device", reply
    assert reply["error"] == "the trusted worker could not set up its GPU: CUDA error: out of memory"


RANDOM_DRAWS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
                "bernoulli", "multinomial", "poisson", "normal_", "uniform_", "random_", "exponential_",
                "bernoulli_", "cauchy_", "geometric_", "log_normal_"}


def test_the_trusted_side_draws_random_numbers_only_from_generators_of_its_own():
    """torch's global generators belong to the seeded draws of sets and weights (inputs.seeded):
    a draw elsewhere in the worker, in another thread, moves them between a seed and its draw."""
    import ast
    found = []
    for pkg in ("kjudge_worker", "kjudge_protocol"):
        for path in sorted((ROOT / "python" / pkg).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in RANDOM_DRAWS and not any(k.arg == "generator" for k in node.keywords)):
                    found.append(f"{path.name}:{node.lineno} {node.func.attr}")
    assert found == []


def test_a_compile_that_restores_the_generators_cannot_rewind_another_jobs_seeded_draw(monkeypatch):
    """torch.compile's first call saves torch's global generators and sets them back when it ends
    (Dynamo's preserve_rng_state). Run beside another job drawing its model's weights under the
    weight seed, that rewound the draw midway: weights unlike the candidate's, an honest kernel
    INCORRECT on almost every element (4 H100 run 18). The worker makes the setting back wait
    for the seeded draw, and the draw does not wait for the compile."""
    import threading
    import time
    import types
    from kjudge_protocol import inputs as kin
    from kjudge_worker import job as jobmod
    from kjudge_worker.server import Worker
    Worker(str(ROOT / "no-such-dir"), "cpu", "", 0.3, 30)  # installs the guard, as in every worker
    compiling = threading.Event()

    def fake_compile(model, device):
        def compiled(*args):  # what Dynamo does around a compile: state saved, work, state set back
            state = torch.random.get_rng_state()
            compiling.set()
            time.sleep(0.3)
            torch.random.set_rng_state(state)
            return model(*args)
        return compiled

    monkeypatch.setattr(jobmod, "GpuLock", lambda path, shared=False: contextlib.nullcontext())
    monkeypatch.setattr(jobmod, "compiled_model", fake_compile)
    monkeypatch.setattr(jobmod.torch.cuda, "synchronize", lambda *a: None)
    problem = types.SimpleNamespace(model=torch.nn.ReLU(), compat=False)
    job = jobmod.Job({"job_id": "c"}, problem, None, torch.device("cpu"), "",
                     jobmod.Heavy(HeavySections(), 0, torch.device("cpu")))
    with kin.seeded(11):
        expected = torch.rand(2000)
    drawn = []

    waited = []

    def draw_weights():
        compiling.wait(5)
        t0 = time.monotonic()
        with kin.seeded(11):
            waited.append(time.monotonic() - t0)
            first = torch.rand(1000)
            time.sleep(0.6)  # the compile ends in here: its setting back waits
            drawn.append(torch.cat([first, torch.rand(1000)]))

    other = threading.Thread(target=draw_weights)
    other.start()
    assert job.compiled_reference([[torch.randn(8)]]) is not None
    other.join()
    assert torch.equal(drawn[0], expected)
    assert waited[0] < 0.2  # into its seeded draw while the compile ran (it held the generators before)


def test_the_compiled_baseline_compiles_outside_the_exclusive_lock(monkeypatch):
    """torch.compile's first call (seconds of Dynamo and Inductor) under the shared lock; only the
    timed loops hold it exclusively (they held every job on the GPU for the compile before)."""
    import threading
    import types
    from kjudge_worker import job as jobmod
    from kjudge_worker import steps as stepsmod
    events = []

    class RecordingLock:
        def __init__(self, path, shared=False):
            self.shared = shared

        def acquire(self):
            events.append("shared" if self.shared else "exclusive")
            return 0.0

        def release(self):
            events.append("release")

        def __enter__(self):
            self.acquire()
            return self

        def __exit__(self, *exc):
            self.release()

    def fake_compile(model, device):
        def compiled(*args):
            events.append("compiled call")
            return model(*args)
        return compiled

    monkeypatch.setattr(jobmod, "GpuLock", RecordingLock)
    monkeypatch.setattr(stepsmod, "GpuLock", RecordingLock)  # the worker's shared holds (Steps.shared_gpu)
    monkeypatch.setattr(jobmod, "compiled_model", fake_compile)
    monkeypatch.setattr(jobmod.torch.cuda, "synchronize", lambda *a: None)
    problem = types.SimpleNamespace(model=torch.nn.ReLU(), compat=False)
    job = jobmod.Job({"job_id": "b"}, problem, None, torch.device("cpu"), "",
                     jobmod.Heavy(HeavySections(), 0, torch.device("cpu")))
    job.specs, job.pool = [{"index": 0}], [0]
    job.timing_cfg = {"warmup": 1, "min_trials": 5, "max_trials": 5}
    monkeypatch.setattr(job, "set_values", lambda entry: ([torch.randn(64)], None))
    report = job.timed_baseline(None)
    assert events[:3] == ["shared", "compiled call", "release"]  # compiled, then
    assert events[3] == "exclusive" and events[-1] == "release"  # both loops timed in one hold
    assert len(report["baseline"]["trial_ms"]) == 5 and len(report["compiled_baseline"]["trial_ms"]) == 5


SLOW_UNSIZED_REFERENCE = """import os, time
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        open({started!r}, "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists({go!r}) and time.monotonic() < deadline:  # the test says when it ends
            time.sleep(0.005)
        return x * 2
def get_inputs():
    n = int(torch.tensor([64]).tolist()[0])  # needs real values: its size is unknown, it prepares alone
    return [torch.rand(4, n)]
def get_init_inputs():
    return []
"""


def until(cond, what, bound_s=120):
    """Polls cond; the bound only stops a broken build, a passing run never nears it."""
    deadline = time.monotonic() + bound_s
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_prepares_wait_for_other_jobs_is_counted_and_its_own_time_is_not(worker, tmp_path):
    """`prepare_waited` (asked at the reference's deadline, which grows by the answer): a job queued
    behind another job's prepare has waited; the job running its own slow reference has not. The
    reference runs until the test says (a file): the steps are ordered on what the worker reports,
    and the 0.5 s held is a lower bound a sleep guarantees (sleeps for ordering flaked under load)."""
    import threading
    started, go = tmp_path / "started", tmp_path / "go"
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW_UNSIZED_REFERENCE.format(started=str(started), go=str(go)))
    replies = {}
    first = threading.Thread(target=lambda: replies.update(a=prepare(worker, job_id="ja", ref=slow)))
    first.start()
    until(started.exists, "ja's reference never ran")  # ja holds the whole prepare budget (its size is unknown)
    second = threading.Thread(target=lambda: replies.update(b=prepare(worker, job_id="jb")))
    second.start()
    until(lambda: ask(worker, {"op": "prepare_waited", "job_id": "jb"})["waited_seconds"] > 0, "jb never queued")
    time.sleep(0.5)
    behind = ask(worker, {"op": "prepare_waited", "job_id": "jb"})["waited_seconds"]
    running = ask(worker, {"op": "prepare_waited", "job_id": "ja"})["waited_seconds"]
    go.touch()
    first.join(60)
    second.join(60)
    assert replies["a"]["ok"] and replies["b"]["ok"], replies
    assert behind > 0.5, behind    # queued behind ja, still waiting when asked
    assert running < 0.5, running  # ja's own reference (at least 0.5 s by then) is its own time
    assert ask(worker, {"op": "prepare_waited", "job_id": "jb"})["waited_seconds"] == 0.0  # done: not held


def test_the_worker_tells_where_each_of_its_threads_is(worker):
    """`stacks`: what kjudged logs before it kills a worker that overran."""
    text = ask(worker, {"op": "stacks"})["stacks"]
    assert "thread MainThread:" in text and "in serve" in text, text
    assert "in thread_stacks" in text  # the thread answering, innermost frame last


def test_off_a_gpu_candidates_are_not_admitted_by_device_memory():
    # the cpu backend's candidates all run at once (an estimate against no capacity ran them one at a time)
    job = sized_job(0, [(1 << 20, 1 << 20)])
    job.pool, job.audits = [0], []
    assert job.candidate_bytes() == 0


def test_a_larger_device_gives_candidates_a_larger_share():
    from kjudge_worker.candidate_share import MIN_SHARE, candidate_capacity
    gib = 1 << 30

    def share(total_gib):  # the worker's own cache (0.2) and preparations (0.2), as it runs by default
        total = total_gib * gib
        return candidate_capacity(total, int(0.2 * total), int(0.2 * total)) / total
    assert share(79.2) == pytest.approx(MIN_SHARE)  # an H100 keeps the share it was judged at
    assert 0.42 < share(140.4) < 0.44  # an H200: its cache and preparations grow, the fixed part does not
    assert share(23.6) == pytest.approx(MIN_SHARE)  # a small card never goes below it
    assert candidate_capacity(0, 0, 0) == 0  # no GPU: no admission


def test_ping_reports_the_warm_up_and_a_cpu_worker_warms_nothing(worker):
    """The start's imports (warm_up.py) are a GPU worker's: the cpu backend compiles nothing."""
    report = ask(worker, {"op": "ping"})["warm_up"]
    assert report == {"done": True, "seconds": report["seconds"], "modules": [], "missing": []}


def test_the_warm_up_imports_its_modules_in_a_thread_and_names_the_missing_ones():
    from kjudge_worker.warm_up import WarmUp
    sys.modules.pop("colorsys", None)
    warm = WarmUp(["colorsys", "kjudge_no_such_module"]).start()
    assert warm.done.wait(30)
    assert "colorsys" in sys.modules
    assert warm.report()["missing"] == ["kjudge_no_such_module"] and warm.report()["done"]


def test_kjudged_borrows_and_repays_the_preparations_budget_over_the_control_socket(worker):
    """The lend and repay requests kjudged's admission sends (candidate_loans.py); the cpu
    backend's prepare reports nothing to borrow, so kjudged never asks it."""
    assert prepare(worker)["candidate_lendable_bytes"] == 0
    assert ask(worker, {"op": "lend", "loan": 11, "bytes": 1 << 30}) == {"ok": True, "lent": True}
    assert ask(worker, {"op": "ping"})["lent_bytes"] == 1 << 30
    assert ask(worker, {"op": "lend", "loan": 12, "bytes": 64 << 30})["lent"] is False  # beyond its budget
    assert ask(worker, {"op": "repay", "loan": 11}) == {"ok": True, "repaid_bytes": 1 << 30}
    assert ask(worker, {"op": "repay", "loan": 11})["repaid_bytes"] == 0
    assert ask(worker, {"op": "ping"})["lent_bytes"] == 0
    assert ask(worker, {"op": "lend", "bytes": 1})["ok"] is False  # unnamed: an error, the worker serves on
    assert ask(worker, {"op": "ping"})["ok"]
