"""Pure functions behind the feedback text: first-error extraction, the generated-file-to-.py line
mapping, the judge-text scrubber, and the worker's worst-element report (issue 15 part 1)."""
import math
import types

import torch

from kjudge_harness.compiler_errors import first_error, first_error_line
from kjudge_harness.compile_feedback import ExtensionBuildError
from kjudge_harness.diagnosis import diagnose
from kjudge_harness.judge_text import scrub
from kjudge_harness.source_lines import candidate_line, map_line, source_at
from kjudge_worker.compare import compare, value_class

GCC = """[1/2] c++ -MMD -MF main.o.d -c /job/ext/0123456789abcdef0123456789abcdef/main.cpp -o main.o
FAILED: main.o
/job/ext/0123456789abcdef0123456789abcdef/main.cpp: In function 'at::Tensor f(at::Tensor)':
/job/ext/0123456789abcdef0123456789abcdef/main.cpp:8:3: error: 'y' was not declared in this scope
    8 |   y(po);
      |   ^
/job/ext/0123456789abcdef0123456789abcdef/main.cpp:9:3: error: 'z' was not declared in this scope
ninja: build stopped: subcommand failed.
"""

NVCC = """/job/ext/0123456789abcdef0123456789abcdef/cuda.cu(12): error: identifier "blockIdy" is undefined
      int i = blockIdy.x;
              ^

1 error detected in the compilation of "/job/ext/0123456789abcdef0123456789abcdef/cuda.cu".
"""


def test_first_gcc_error_with_lead_in_excerpt_and_count():
    err = first_error(GCC)
    assert (err.line, err.column, err.text) == (8, 3, "'y' was not declared in this scope")
    assert err.file.endswith("/main.cpp") and err.count == 2
    assert err.lines[0].endswith("In function 'at::Tensor f(at::Tensor)':")
    assert err.lines[-2:] == ["    8 |   y(po);", "      |   ^"]
    assert not any("'z'" in x for x in err.lines)


def test_first_nvcc_error():
    err = first_error(NVCC)
    assert (err.line, err.text) == (12, 'identifier "blockIdy" is undefined') and err.file.endswith("cuda.cu")
    assert err.lines[1].strip() == "int i = blockIdy.x;"


def test_no_compiler_error_falls_back_to_an_error_line():
    assert first_error("/usr/bin/ld: cannot find -lfoo\ncollect2: error: ld returned 1 exit status\n") is None
    assert first_error_line("ninja: error: x\ncollect2: error: ld returned 1\n") == "collect2: error: ld returned 1"


SRC_A = "\n#include <cmath>\nvoid a() {\n  y(po);\n}\n"
SRC_B = "\nvoid b() {}\n"
CANDIDATE_RAW = f'import torch\n\nA = r"""{SRC_A}"""\nB = r"""{SRC_B}"""\n'
GENERATED = "#include <torch/extension.h>\n" + "\n".join([SRC_A, SRC_B]) + "\nPYBIND11_MODULE(...) {}\n"


def test_generated_line_maps_to_the_literal_in_the_py():
    gen_line = GENERATED.splitlines().index("  y(po);") + 1
    assert source_at(GENERATED, gen_line, [SRC_A, SRC_B]) == (0, 3)
    py_line = map_line(GENERATED, gen_line, [SRC_A, SRC_B], CANDIDATE_RAW)
    assert CANDIDATE_RAW.splitlines()[py_line - 1] == "  y(po);"
    b_line = GENERATED.splitlines().index("void b() {}") + 1
    assert CANDIDATE_RAW.splitlines()[map_line(GENERATED, b_line, [SRC_A, SRC_B], CANDIDATE_RAW) - 1] == "void b() {}"


def test_load_inlines_own_lines_map_to_nothing():
    assert map_line(GENERATED, 1, [SRC_A, SRC_B], CANDIDATE_RAW) is None
    assert map_line(GENERATED, len(GENERATED.splitlines()), [SRC_A, SRC_B], CANDIDATE_RAW) is None


def test_escaped_literal_maps_through_the_ast():
    src = "void a() {\n\tx();\n}\n"
    py = 'S = """void a() {\n\\tx();\n}\n"""\n'  # \t escaped: the text is not in the .py verbatim
    assert py.find(src) < 0
    assert candidate_line(py, src, 1) == 2


def test_scrub_removes_judge_paths_and_tensor_printouts():
    text = ('File "/opt/kjudge/python/kjudge_harness/x.py", /job/ext/0123456789abcdef0123456789abcdef/main.cpp '
            "Invoked with: tensor([[ 0.1, -0.2],\n        [ 1.0,  nan]]), tensor([1., 2.], dtype=torch.float16)")
    out = scrub(text)
    assert "/opt/kjudge" not in out and "/job/ext" not in out and "main.cpp" in out
    assert out.endswith("Invoked with: tensor(...), tensor(...)")


def test_compile_diagnosis_names_the_candidate_line(tmp_path):
    build = tmp_path / "ext"
    build.mkdir()
    gen_line = GENERATED.splitlines().index("  y(po);") + 1
    (build / "main.cpp").write_text(GENERATED)
    py = tmp_path / "candidate.py"
    py.write_text(CANDIDATE_RAW)
    out = GCC.replace("main.cpp:8:3", f"main.cpp:{gen_line}:3").replace("    8 |", f"    {gen_line} |")
    d = diagnose(ExtensionBuildError("Error building extension 'x': " + out, str(build), [SRC_A, SRC_B], []),
                 str(py))
    py_line = CANDIDATE_RAW.splitlines().index("  y(po);") + 1
    assert d["message"] == f"C++ error at candidate.py:{py_line}: 'y' was not declared in this scope"
    assert f"candidate.py:{py_line}:3: error:" in d["feedback"] and "main.cpp" not in d["feedback"]
    assert "1 more error(s)" in d["feedback"]
    assert "/job/" not in d["compiler_output"] and "-MMD" not in d["compiler_output"]


def test_runtime_diagnosis_keeps_only_the_candidates_frames(tmp_path):
    py = tmp_path / "candidate.py"
    py.write_text("def f(x):\n    return x[3]\n")
    ns = {}
    exec(compile(py.read_text(), str(py), "exec"), ns)
    try:
        ns["f"]([1])
    except IndexError as exc:
        d = diagnose(exc, str(py))
    assert d["message"] == "IndexError: list index out of range"
    assert d["feedback"].splitlines()[-1] == "  at candidate.py:2 in f: return x[3]"
    assert "test_feedback_units" not in d["feedback"]


def test_value_classes():
    assert [value_class(x) for x in (1.5, -2.0, 0.0, math.nan, math.inf, -math.inf)] == [
        "a positive number", "a negative number", "zero", "NaN", "+Inf", "-Inf"]


def test_worst_elements_nonfinite_first_then_furthest_beyond_tolerance():
    e = torch.tensor([[1.0, -1.0, 2.0], [3.0, 4.0, -5.0]])
    a = e.clone()
    a[0, 1] += 0.5       # beyond tolerance
    a[1, 2] += 3.0       # further beyond
    a[1, 0] = math.inf
    r = compare(e.reshape(-1), a.reshape(-1), 1e-4, 1e-4, shape=[2, 3])
    assert (r["mismatches"], r["nan_outputs"], r["inf_outputs"]) == (3, 0, 1)
    assert [(w["position"], w["expected"]) for w in r["worst"]] == [
        ("[1, 0]", "a positive number"), ("[1, 2]", "a negative number"), ("[0, 1]", "a negative number")]
    assert r["worst"][0]["got"] == "inf" and r["worst"][1]["got"] == "-2"
    assert all(set(w) == {"position", "got", "expected"} for w in r["worst"])  # no expected value


def test_all_nan_output_counts_every_element():
    e = torch.randn(64)
    r = compare(e, torch.full((64,), math.nan), 1e-4, 1e-4, shape=[8, 8])
    assert r["nan_outputs"] == 64 and r["mismatches"] == 64
    assert [w["position"] for w in r["worst"]] == ["[0, 0]", "[0, 1]", "[0, 2]"]


def test_nvcc_diagnosis_maps_cuda_cu_to_the_candidate_line(tmp_path):
    cuda_src = "\n__global__ void k(float* o) {\n  int i = blockIdy.x;\n}\n"
    py = tmp_path / "candidate.py"
    py.write_text(f'CUDA = r"""{cuda_src}"""\n')
    build = tmp_path / "ext"
    build.mkdir()
    generated = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + cuda_src
    (build / "cuda.cu").write_text(generated)
    gen_line = generated.splitlines().index("  int i = blockIdy.x;") + 1
    out = NVCC.replace("cuda.cu(12)", f"cuda.cu({gen_line})")
    d = diagnose(ExtensionBuildError("Error building extension 'x': " + out, str(build), [], [cuda_src]), str(py))
    assert d["message"] == 'C++ error at candidate.py:3: identifier "blockIdy" is undefined'
    assert d["feedback"].startswith('candidate.py:3: error: identifier "blockIdy" is undefined')


def test_error_in_a_header_names_the_candidate_line_it_was_required_from(tmp_path):
    build = tmp_path / "ext"
    build.mkdir()
    (build / "main.cpp").write_text(GENERATED)
    py = tmp_path / "candidate.py"
    py.write_text(CANDIDATE_RAW)
    gen_line = GENERATED.splitlines().index("  y(po);") + 1
    py_line = CANDIDATE_RAW.splitlines().index("  y(po);") + 1
    key = "0123456789abcdef0123456789abcdef"
    out = (f"/usr/lib/python3/dist-packages/torch/include/ATen/core/T.h: In instantiation of 'void f(T) [with T = int]':\n"
           f"/job/ext/{key}/main.cpp:{gen_line}:4:   required from here\n"
           "/usr/lib/python3/dist-packages/torch/include/ATen/core/T.h:5:3: error: no match for 'operator+'\n")
    d = diagnose(ExtensionBuildError(out, str(build), [SRC_A, SRC_B], []), str(py))
    assert d["message"] == (f"C++ error at torch/include/ATen/core/T.h:5 (from candidate.py:{py_line}): "
                            "no match for 'operator+'")
    assert f"candidate.py:{py_line}:4:   required from here" in d["feedback"]


NOISE = "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n"


def test_torchs_no_cuda_runtime_line_is_not_feedback(tmp_path):
    assert scrub(NOISE + "real error\n") == "real error\n"
    d = diagnose(ExtensionBuildError("Error building extension 'x': " + NOISE + "/usr/bin/ld: cannot find -lfoo\n",
                                     str(tmp_path), [], []), None)
    assert "No CUDA runtime" not in d["message"] + d["feedback"] and "cannot find -lfoo" in d["message"]
    d = diagnose(ExtensionBuildError(NOISE + NVCC, str(tmp_path), [], ["x"]), None)
    assert "No CUDA runtime" not in d["feedback"] + d["compiler_output"]
