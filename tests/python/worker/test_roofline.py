"""The fraction-of-peak figure's inputs: the least work of one reference call (the worker's
roofline.work_of) and how kjudge-bench reads the judge's figures. The device peaks are measured on
a GPU only (bench/results/gpu_worker); the daemon's arithmetic is KernelBenchRoofline.* (gtest)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from kjudge.bench.summary import peak_fraction  # noqa: E402
from kjudge.v1 import result_pb2  # noqa: E402
from kjudge_worker import roofline  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 32)
        self.norm = torch.nn.BatchNorm1d(32)  # buffers: running mean/var and the batch count

    def forward(self, x):
        return self.norm(self.fc(x))


def test_work_of_counts_inputs_parameters_buffers_and_output():
    model = Net().eval()
    x = torch.randn(16, 64)
    out = model(x)
    work = roofline.work_of(model, [x, 3], out)
    params = (64 * 32 + 32 + 32 + 32) * 4
    buffers = (32 + 32) * 4 + 8  # running mean/var fp32, num_batches_tracked int64
    assert work["bytes"] == params + buffers + x.numel() * 4 + out.numel() * 4
    try:
        from torch.utils.flop_counter import FlopCounterMode  # noqa: F401 - torch >= 2.1 (the GPU nodes)
    except ImportError:
        assert work["flops"] is None  # Debian's torch 1.13: no estimate rather than a wrong one
    else:
        assert work["flops"] == 2 * 16 * 64 * 32  # the matmul of the Linear layer


def test_bench_reads_the_judges_fraction_then_bandwidth():
    perf = result_pb2.Performance()
    assert peak_fraction(perf) is None  # cpu: nothing reported
    perf.achieved_gbps, perf.peak_gbps = 1500.0, 3000.0
    assert peak_fraction(perf) == 0.5  # native: achieved / measured bandwidth
    perf.peak_fraction = 0.8
    assert peak_fraction(perf) == 0.8  # KernelBench: the roofline floor over the median
