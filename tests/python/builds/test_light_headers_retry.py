"""The light-header build's fallback rebuilds for real. A cuda build first tries the .cu with a
light torch/extension.h; when that does not compile, the same load_inline call is made again with
the full header. torch's versioner remembers the failed try's hash (the light header comes through
NVCC_PREPEND_FLAGS, outside the hash), so without light_headers.forget_build the retry skipped the
build and imported a .so that was never linked: on the H100 every candidate that needed the full
header was COMPILE_ERROR (ImportError). A cuda build cannot run here (Debian's torch is CPU-only), so
the same sequence runs on a C++ extension: a first build that fails for a reason outside the hash
(the compiler, CXX), then the retry; its sources are a list, which load_inline extends in place
(a retry with the same list defined the module twice). Real torch, real ninja, real g++."""
import sys
from pathlib import Path

import pytest
from torch.utils.cpp_extension import load_inline

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from kjudge_harness import light_headers  # noqa: E402


def test_the_retry_after_a_failed_build_builds_again(tmp_path, monkeypatch):
    kwargs = dict(name="kj_retry_probe", cpp_sources=["int answer() { return 42; }"], functions=["answer"],
                  build_directory=str(tmp_path), verbose=False)
    failing = tmp_path / "failing-c++"  # answers torch's version probes, fails every compile
    failing.write_text('#!/bin/sh\ncase " $* " in *" -c "*) echo "forced failure" >&2; exit 1;; esac\nexec c++ "$@"\n')
    failing.chmod(0o755)
    monkeypatch.setenv("CXX", str(failing))  # the first try fails, as a light .cu that does not compile
    with pytest.raises(RuntimeError, match="Error building extension"):
        load_inline(**light_headers.fresh(kwargs))
    monkeypatch.delenv("CXX")
    assert light_headers.rebuild(load_inline, kwargs).answer() == 42
