"""The PCH role calls torch's private ninja writer, whose signature changed between torch 1.13
(this machine) and torch 2.6+ (the GPU nodes: extra_sycl_cflags and with_sycl became required).
With the 1.13 call on torch 2.11 every node built without the precompiled header (TypeError,
kernelbench.pch_failed) and each cuda build spent ~24 s instead of a few on its binding file.
Here the adapter meets both signatures (stand-ins with their parameter lists) and the real one."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from kjudge_harness import pch  # noqa: E402

KNOWN = dict(path="p", name="n", sources=["s.cpp"], extra_cflags=[], extra_cuda_cflags=[], extra_ldflags=[],
             extra_include_paths=[], with_cuda=True, is_standalone=False)


def writer_1_13(path, name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths, with_cuda,
                is_standalone):
    return dict(locals())


def writer_2_11(path, name, sources, extra_cflags, extra_cuda_cflags, extra_sycl_cflags, extra_ldflags,
                extra_include_paths, with_cuda, with_sycl, is_standalone):
    return dict(locals())


def writer_unknown(path, name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths,
                   with_cuda, is_standalone, toolchain):
    return dict(locals())


def test_old_signature_gets_exactly_the_known_arguments():
    assert pch.call_private(writer_1_13, **KNOWN) == KNOWN


def test_new_signature_gets_its_added_arguments_switched_off():
    got = pch.call_private(writer_2_11, **KNOWN)
    assert got == dict(KNOWN, extra_sycl_cflags=[], with_sycl=False)


def test_a_required_argument_it_cannot_guess_is_a_clear_error():
    with pytest.raises(TypeError, match="toolchain"):
        pch.call_private(writer_unknown, **KNOWN)


def test_include_paths_finds_extension_h_on_either_api(monkeypatch):
    seen = []
    monkeypatch.setattr(pch.cpp_extension, "include_paths", lambda device_type="cpu": seen.append(device_type) or [])
    pch.include_paths(True)
    monkeypatch.setattr(pch.cpp_extension, "include_paths", lambda cuda=False: seen.append(cuda) or [])
    pch.include_paths(True)
    assert seen == ["cuda", True]


def test_the_installed_torch_writes_a_ninja_file(tmp_path):
    out = tmp_path / "build.ninja"
    pch.call_private(pch.cpp_extension._write_ninja_file_to_build_library, **dict(
        KNOWN, path=str(out), sources=[str(tmp_path / "main.cpp")], with_cuda=False))
    assert "cflags = " in out.read_text()


def test_the_cuda_variant_is_made_where_no_gpu_is_visible(tmp_path):
    # the compile sandbox shows no GPU: torch's writer needs an arch list to get past nvcc's flags
    import os
    import subprocess
    code = ("import sys; sys.path.insert(0, %r); from kjudge_harness import pch; r = {}; "
            "pch.run({'pch_out': %r, 'with_cuda': True, 'variants': []}, r); print(r['ok'], len(r['flags']))"
            % (str(Path(__file__).resolve().parents[3] / "python"), str(tmp_path)))
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_CUDA_ARCH_LIST", "CUDA_VISIBLE_DEVICES")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    ok, flags = out.stdout.split()
    assert ok == "True" and int(flags) > 0
