"""main.cpp is compiled with the light torch header first (light_headers.LIGHT_MAIN_H, precompiled
in pch/light beside the full header). Sources that need only what it declares are built with it;
one that uses a name only the full header declares fails that try and is built again with the full
header (same source, same flags), so it loads and answers the same; sources that include another
torch umbrella header skip the light try. Real torch, real ninja, real g++, the suite's real
precompiled headers (eval_workspace.suite_pch)."""
import sys
from pathlib import Path

from torch.utils.cpp_extension import load_inline

from eval_workspace import suite_pch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from kjudge_harness import light_headers  # noqa: E402

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
    import torch
    module, mode = build(tmp_path, "kj_light_main_probe", SUM)
    assert mode == "light"
    assert module.total(torch.ones(10)) == 10.0


def test_a_source_that_needs_the_full_header_is_built_again_with_it(tmp_path):
    import torch
    module, mode = build(tmp_path, "kj_full_main_probe", SUM_NEEDS_FULL)
    assert mode == "full"
    assert module.total(torch.ones(7)) == 7.0


def test_sources_naming_another_torch_umbrella_header_skip_the_light_try():
    pch = str(suite_pch() / "pch")
    assert light_headers.light_main_dir(pch, {"cpp_sources": "#include <torch/extension.h>\n" + SUM})
    assert light_headers.light_main_dir(pch, {"cpp_sources": ["#include <torch/types.h>", SUM]})
    for umbrella in ("#include <torch/torch.h>", "#include <torch/all.h>", '#include "torch/nn.h"'):
        assert light_headers.light_main_dir(pch, {"cpp_sources": [umbrella, SUM]}) is None, umbrella
