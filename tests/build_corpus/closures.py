"""What torch/extension.h declares that kjudge's light headers do not, in the interpreter it runs in
(the GPU nodes' torch): the system headers in the full header's closure and not the light one's,
and the macros only the full one defines, for each shortcut (the .cu's light header and the minimal
torch/types.h through nvcc, main.cpp's light header through g++). Prints one JSON object.
tests/python/builds/test_build_corpus.py requires no header and no macro a light header could read
differently: a missing header is one light_headers.py must include, a macro one its scan must
keep from a shortcut (light_headers.FULL_ONLY_NAMES)."""
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile

sys.path.insert(0, os.environ.get("KJUDGE_CORPUS_HARNESS") or os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from kjudge_harness import light_headers  # noqa: E402


def preprocess(compiler, source, shadow, work, macros):
    """The system headers `source` reads (macros: the names of the macros it defines)."""
    src = os.path.join(work, "probe.cu" if compiler == "nvcc" else "probe.cpp")
    with open(src, "w") as f:
        f.write(source)
    includes = [a for d in light_headers.cpp_extension_include_paths() for a in ("-isystem", d)]
    includes += ["-isystem", sysconfig.get_paths()["include"]]
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if compiler == "nvcc":
        cmd = [os.path.join(cuda_home, "bin", "nvcc"), "-x", "cu", "-std=c++17"]
        cmd += ["-E", "-Xcompiler", "-dM"] if macros else ["-M"]
    else:
        cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-isystem", os.path.join(cuda_home, "include")]
        cmd += ["-E", "-dM"] if macros else ["-M"]
    cmd += (["-I" + shadow] if shadow else []) + includes + [src]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    if macros:
        return {m.group(1) for m in re.finditer(r"^#define (\w+)", out, re.M)}
    # the system's headers and the interpreter's (Python's C API, wherever this python keeps it)
    roots = ("/usr/include/", os.path.join(sysconfig.get_paths()["include"], ""))
    return {p for p in out.replace("\\\n", " ").split() if p.startswith(roots)}


def only_in_full(compiler, full_source, light_source, shadow, work):
    headers = preprocess(compiler, full_source, None, work, False) - preprocess(compiler, light_source, shadow, work, False)
    macros = preprocess(compiler, full_source, None, work, True) - preprocess(compiler, light_source, shadow, work, True)
    return {"headers": sorted(headers), "macros": sorted(macros)}


def main():
    head, ext = light_headers.LOAD_INLINE_CU_HEAD, "#include <torch/extension.h>\n"
    with tempfile.TemporaryDirectory() as work:
        light_main = os.path.join(work, "light-main")
        os.makedirs(os.path.join(light_main, "torch"))
        with open(os.path.join(light_main, "torch", "extension.h"), "w") as f:
            f.write(light_headers.LIGHT_MAIN_H)
        print(json.dumps({
            "cu_light": only_in_full("nvcc", head + ext, head + ext, light_headers.shadow_dir(work), work),
            # a .cu that does not include torch/extension.h itself: load_inline's torch/types.h alone
            "cu_minimal": only_in_full("nvcc", head, head, light_headers.shadow_dir(work, True), work),
            "cu_minimal_ext": only_in_full("nvcc", head + ext, head + ext, light_headers.shadow_dir(work, True), work),
            "main_light": only_in_full("c++", ext, ext, light_main, work),
        }))


if __name__ == "__main__":
    main()
