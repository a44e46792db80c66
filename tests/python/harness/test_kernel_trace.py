"""The legality trace's kernel recorder (src/kernel_trace, python/kjudge_harness/kernel_recorder.py)
and trace.py's choice between it and torch.profiler.

This machine has no GPU: the real library is loaded and must refuse to start cleanly, with a
reason. What needs a GPU (CUPTI callbacks firing, torch.profiler's CUDA records, a CUDA stream
to synchronise) is faked below and only there; bench/gpu_worker/trace_probe.py runs the real
thing on a GPU node. Needs a build (KJUDGE_BUILD_DIR, default build-test)."""
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kjudge_harness import kernel_recorder, trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
LIB = BUILD / "bin" / "libkjudge_kernel_trace.so"
SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_cublas"


def real_library():
    if not LIB.exists():
        pytest.skip(f"{LIB} not built")
    recorder, why = kernel_recorder.load(str(LIB))
    assert recorder is not None, why
    return recorder


def test_library_refuses_to_start_without_a_gpu():
    if Path("/dev/nvidia0").exists():
        pytest.skip("a GPU is here: bench/gpu_worker/trace_probe.py exercises the recorder")
    rec = real_library()
    why = rec.start()
    assert why, "kjt_start succeeded on a machine without a GPU"
    assert "libcupti" in why or "cupti" in why.lower()
    assert rec.stop() is False  # never started
    assert rec.count() == 0 and rec.unattributed() == 0
    assert rec.names() == []


def test_library_is_not_sanitized():
    # ASan in a library python loads aborts the process at load; the test build must leave it out.
    data = LIB.read_bytes() if LIB.exists() else b""
    if not data:
        pytest.skip(f"{LIB} not built")
    assert b"__asan_init" not in data and b"__ubsan_handle" not in data


def test_missing_library_is_reported():
    recorder, why = kernel_recorder.load("/nonexistent/libkjudge_kernel_trace.so")
    assert recorder is None and "cannot load" in why


class FakeProfiler(trace.NoKernels):
    """Stands in for torch.profiler's CUDA records, which need a GPU."""
    kernels = [ADD]

    def result(self):
        return list(self.kernels), "", ""


class Model(torch.nn.Module):
    def __init__(self, launches=None):
        super().__init__()
        self.calls = 0
        self.launches = launches

    def forward(self, x):
        self.calls += 1
        if self.launches:
            self.launches(self)
        return x + 1


@pytest.fixture
def no_gpu_sync(monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(trace, "ProfilerWindow", FakeProfiler)


def run(model, lib):
    out, section = trace.traced_call(model, (torch.ones(2),), torch.device("cuda"), trace.ExtCounter(), lib)
    assert torch.equal(out, torch.full((2,), 2.0))
    return section


def test_profiler_fallback_when_the_real_library_cannot_start(no_gpu_sync):
    if not LIB.exists():
        pytest.skip(f"{LIB} not built")
    model = Model()
    section = run(model, str(LIB))
    assert section["kernel_source"] == "profiler" and section["kernels"] == [ADD]
    assert section["kernel_recorder_problem"] and section["tracer_ok"], section
    assert section["ops"] == ["aten::add"] and model.calls == 1


def test_no_library_means_the_profiler(no_gpu_sync):
    section = run(Model(), None)
    assert section["kernel_source"] == "profiler" and section["kernel_recorder_problem"] == ""


class FakeRecorder:
    """Stands in for CUPTI's callbacks, which need a GPU: the harness's sentinel and the model
    'launch' by appending names."""

    def __init__(self, start_error=""):
        self.start_error = start_error
        self.launched, self.unnamed, self.active = [], 0, False

    def launch(self, name):
        if self.active:
            self.launched.append(name)

    def start(self):
        self.active = not self.start_error
        return self.start_error

    def stop(self):
        was, self.active = self.active, False
        return was

    def count(self):
        return len(self.launched)

    def unattributed(self):
        return self.unnamed

    def names(self):
        return list(self.launched)


@pytest.fixture
def fake_recorder(monkeypatch, no_gpu_sync):
    fake = FakeRecorder()
    monkeypatch.setattr(kernel_recorder, "load", lambda path: (fake, ""))
    monkeypatch.setattr(trace, "_kernel_sentinel", lambda device: fake.launch(SPIN))
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None, raising=False)
    return fake


def test_recorder_names_the_call_without_the_sentinels(fake_recorder):
    model = Model(lambda m: (fake_recorder.launch(GEMM), fake_recorder.launch(ADD)))
    section = run(model, "/opt/kjudge/lib/libkjudge_kernel_trace.so")
    assert section["kernel_source"] == "recorder" and section["tracer_ok"], section
    assert section["kernels"] == [GEMM, ADD] and section["profiled_kernels"]
    assert model.calls == 1 and section["ops"] == ["aten::add"]


def test_a_candidate_calling_the_sentinel_itself_keeps_its_launch(fake_recorder):
    model = Model(lambda m: fake_recorder.launch(SPIN))
    section = run(model, "lib")
    assert section["kernels"] == [SPIN] and section["tracer_ok"]


def test_unnamed_launch_reruns_under_the_profiler(fake_recorder):
    def graph_replay(m):
        fake_recorder.unnamed += 1

    model = Model(graph_replay)
    section = run(model, "lib")
    assert section["kernel_source"] == "profiler" and section["kernels"] == [ADD]
    assert "could not name 1" in section["kernel_recorder_problem"]
    assert model.calls == 2 and section["ops"] == ["aten::add"] and section["tracer_ok"]


def test_recorder_stopped_during_the_call_is_tamper_evidence(fake_recorder):
    model = Model(lambda m: setattr(fake_recorder, "active", False))
    section = run(model, "lib")
    assert section["kernel_source"] == "recorder" and not section["tracer_ok"]
    assert "stopped seeing launches" in section["tracer_problem"] and section["kernels"] == []


def test_recorder_that_misses_the_first_sentinel_hands_over_to_the_profiler(fake_recorder, monkeypatch):
    monkeypatch.setattr(trace, "_kernel_sentinel", lambda device: None)  # a CUPTI that sees nothing
    section = run(Model(), "lib")
    assert section["kernel_source"] == "profiler" and "own launch" in section["kernel_recorder_problem"]


def test_recorder_that_cannot_start_hands_over_to_the_profiler(fake_recorder):
    fake_recorder.start_error = "cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
    section = run(Model(), "lib")
    assert section["kernel_source"] == "profiler"
    assert section["kernel_recorder_problem"].startswith("cuptiSubscribe")


def test_split_sentinels():
    names = ["a", SPIN, "b", "c", SPIN, "d"]
    assert trace.split_sentinels(names, 2, 4, 0, True) == (["a", "b", "c", "d"], "", "")
    assert trace.split_sentinels(names, 2, 4, 0, False)[1]  # not stopped cleanly
    assert trace.split_sentinels(["b"], 0, 1, 0, True)[2]   # no first sentinel: profiler
    assert trace.split_sentinels([SPIN, "b"], 1, 2, 0, True)[1]  # no second: tamper
    assert trace.split_sentinels(names, 2, 4, 3, True)[2]   # unnamed launches: profiler


def test_cpu_trace_has_no_kernels():
    out, section = trace.traced_call(Model(), (torch.ones(2),), torch.device("cpu"), trace.ExtCounter(), "lib")
    assert section["kernels"] == [] and not section["profiled_kernels"] and section["tracer_ok"]
    assert section["kernel_source"] == ""
