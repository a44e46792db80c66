"""main.cpp is compiled with the light torch header first (light_headers.LIGHT_MAIN_H, precompiled
in pch/light beside the full header). Sources that need only what it declares are built with it;
one that uses a name only the full header declares fails that try and is built again with the full
header (same source, same flags), so it loads and answers the same; sources that include another
torch umbrella header skip the light try. Real torch, real ninja, real g++, the suite's real
precompiled headers (eval_workspace.suite_pch)."""
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import torch
from torch.utils.cpp_extension import load_inline

from eval_workspace import suite_pch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from kjudge_harness import light_headers, pch  # noqa: E402

SUM = "double total(torch::Tensor x) { auto c = x.contiguous(); double s = 0; " \
      "for (int64_t i = 0; i < c.numel(); ++i) s += c.data_ptr<float>()[i]; return s; }"
# torch::special is declared by torch/all.h (torch/special.h), not by the light header; erf(0) = 0
SUM_NEEDS_FULL = SUM.replace("auto c = x.contiguous();", "auto c = (x + torch::special::erf(x * 0)).contiguous();")


def build(tmp_path, name, source):
    bound = dict(name=name, cpp_sources=[source], functions=["total"], build_directory=str(tmp_path / name),
                 verbose=False, extra_cflags=["-O2"], extra_include_paths=None)
    Path(bound["build_directory"]).mkdir()
    return light_headers.build(load_inline, bound, str(tmp_path), str(suite_pch() / "pch"))


def test_sources_that_need_only_the_light_header_are_built_with_it(tmp_path):
    module, mode = build(tmp_path, "kj_light_main_probe", SUM)
    assert mode == "light"
    assert module.total(torch.ones(10)) == 10.0


def test_a_source_that_needs_the_full_header_is_built_again_with_it(tmp_path):
    module, mode = build(tmp_path, "kj_full_main_probe", SUM_NEEDS_FULL)
    assert mode == "full"
    assert module.total(torch.ones(7)) == 7.0


def test_sources_naming_another_torch_umbrella_header_skip_the_light_try():
    pch = str(suite_pch() / "pch")
    assert light_headers.light_main_dir(pch, {"cpp_sources": "#include <torch/extension.h>\n" + SUM})
    assert light_headers.light_main_dir(pch, {"cpp_sources": ["#include <torch/types.h>", SUM]})
    for umbrella in ("#include <torch/torch.h>", "#include <torch/all.h>", '#include "torch/nn.h"'):
        assert light_headers.light_main_dir(pch, {"cpp_sources": [umbrella, SUM]}) is None, umbrella


def headers_read(text, flags):
    """The files g++ reads for a translation unit of `text` (its -M list)."""
    out = subprocess.run(["c++", "-M", "-x", "c++", "-"] + flags, input=text, capture_output=True, text=True,
                         check=True).stdout
    return {os.path.realpath(p) for p in out.replace("\\\n", " ").split()[1:]}


def test_what_only_the_full_header_reads_holds_no_pybind11_type_caster():
    # A caster the light header lacked would compile a binding with pybind11's generic one and fail
    # only when called; a missing declaration or specialization is a compile error (the full retry).
    flags = ["-std=c++17", "-D_GLIBCXX_USE_CXX11_ABI=1", "-I" + sysconfig.get_paths()["include"]]
    flags += ["-isystem" + p for p in pch.include_paths(False)]
    only_full = headers_read("#include <torch/extension.h>\n", flags) - headers_read(light_headers.LIGHT_MAIN_H, flags)
    assert only_full, "the full header reads nothing more than the light one: the light one is no lighter"
    casters = [p for p in only_full if re.search(r"struct\s+type_caster\s*<", Path(p).read_text(errors="replace"))]
    assert not casters, casters
