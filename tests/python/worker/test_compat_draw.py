"""Compat mode draws its sets on the host as KernelBench does, except for problems whose inputs are
too large for that (python/kjudge_worker/problems.py), and a candidate's device out-of-memory error
carries what it held and asked for, so the daemon can tell it from memory taken by other jobs
(python/kjudge_harness/diagnosis.py)."""
import types

import pytest
import torch

from kjudge_harness.diagnosis import device_bytes_needed, diagnose
from kjudge_worker.problems import COMPAT_HOST_DRAW_MAX_BYTES, declared_bytes


def module(get_inputs):
    return types.SimpleNamespace(get_inputs=get_inputs)


ON_META = hasattr(torch, "get_default_device")  # torch >= 2.0: factories follow a device context
# Each claim below holds for one torch only; scripts/test runs this file under Debian's torch 1.13
# and under the GPU nodes' torch 2.x (its torch 2.x tier), so each is checked in one of them, and
# the other's skip is listed by the skip report (tests/skips_allowed.tsv).
NEEDS_META = pytest.mark.skipif(not ON_META, reason="torch < 2.0 has no device context: the torch 2.x tier checks it")
NEEDS_NO_META = pytest.mark.skipif(ON_META, reason="torch >= 2.0 has a device context: the Debian torch tier checks it")


@NEEDS_META
def test_declared_bytes_come_from_shapes_without_drawing():
    big = 1 << 31  # 8 GiB of float32, never allocated: drawn on the meta device
    assert declared_bytes(module(lambda: [torch.rand(big), 3])) == 4 * big
    assert declared_bytes(module(lambda: [torch.rand(4096, 4096).tril(), torch.randint(0, 9, (8,))])) == \
        4 * 4096 * 4096 + 8 * 8
    assert 4 * big > COMPAT_HOST_DRAW_MAX_BYTES


@NEEDS_NO_META
def test_declared_bytes_are_unknown_without_a_device_context():
    assert declared_bytes(module(lambda: [torch.rand(4)])) is None  # drawn on the host, as KernelBench does


def test_inputs_that_need_real_values_are_unknown():
    def needs_values():
        n = int(torch.randint(1, 5, (1,)).item())  # data-dependent: meta tensors have no values
        return [torch.rand(n)]
    assert declared_bytes(module(needs_values)) is None


class OutOfMemoryError(RuntimeError):
    """Named as torch's: the harness reads the type's name, not the class (torch may be absent)."""


def test_out_of_memory_reports_what_was_asked_for():
    exc = OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 79.18 GiB")
    held = torch.cuda.memory_reserved() if torch.cuda.is_available() else 0
    assert device_bytes_needed(exc) == held + 6 * (1 << 30)
    assert diagnose(exc, None)["device_bytes_needed"] == held + 6 * (1 << 30)
    assert device_bytes_needed(RuntimeError("Tried to allocate 6.00 GiB")) is None
    assert "device_bytes_needed" not in diagnose(ValueError("x"), None)


def test_draws_in_threads_are_each_seeds_own_values():
    """The worker makes sets (and models) of several jobs in threads: each draw must be its seed's,
    or a remade set differs from the one handed over and a model's weights from the candidate's."""
    import threading
    import time

    from kjudge_protocol import inputs as kin

    def get_inputs():  # yields the interpreter between its two draws, as a real get_inputs() may
        a = torch.randn(16)
        time.sleep(0.002)
        return [a, torch.randn(16)]
    mod, cpu = module(get_inputs), torch.device("cpu")
    want = {s: kin.generate(mod, s, cpu, False) for s in range(4)}
    wrong = []

    def draw(seed):
        for _ in range(20):
            got = kin.generate(mod, seed, cpu, False)
            wrong.extend(seed for g, w in zip(got, want[seed]) if not torch.equal(g, w))
    threads = [threading.Thread(target=draw, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_kernelbench_trial_seeds_leave_the_global_generator_alone():
    """Compat's trial seeds are KernelBench's (the global generator seeded with 42, one randint per
    trial), drawn without touching the global generator that another thread may be drawing a
    model's weights from under `seeded`."""
    from kjudge_protocol import inputs as kin
    torch.manual_seed(42)
    kernelbench_way = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(5)]
    torch.manual_seed(7)
    before = torch.get_rng_state()
    assert kin.kernelbench_trial_seeds(5) == kernelbench_way
    assert torch.equal(torch.get_rng_state(), before)
