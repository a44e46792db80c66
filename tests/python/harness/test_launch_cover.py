"""The launch cover's kernel (python/kjudge_protocol/launch_cover.py) compiles for the GPUs we
judge on and, with its register count, fills every thread slot of an SM; its launch geometry
leaves no slot free. Its timing effect is measured on a GPU (docs/timing.md)."""
import os
import re
import subprocess

import pytest

from kjudge_protocol import launch_cover


def ptxas():
    path = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
    assert os.path.exists(path), f"no ptxas at {path}: scripts/setup installs the CUDA toolkit"
    return path


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_90"])
def test_the_cover_kernel_compiles_and_its_blocks_fit_every_thread_slot(tmp_path, arch):
    src = tmp_path / "cover.ptx"
    src.write_bytes(launch_cover.PTX)
    out = subprocess.run([ptxas(), f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "cover.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    registers = int(re.search(r"Used (\d+) registers", out.stderr).group(1))
    assert registers * 2048 <= 65536  # an SM's register file holds 2048 threads of it
    assert "bytes smem" not in out.stderr or re.search(r"\b0 bytes smem", out.stderr)


@pytest.mark.parametrize("threads_per_sm", [2048, 1536, 1024])
def test_the_covers_blocks_take_every_thread_slot_of_every_sm(threads_per_sm):
    grid, block = launch_cover.fill_every_sm(threads_per_sm, 132)
    assert block <= 1024
    assert grid * block == 132 * threads_per_sm
    assert threads_per_sm % block == 0
