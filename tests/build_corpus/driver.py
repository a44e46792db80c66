"""Builds build-corpus programs (tests/build_corpus/programs/<name>/) the way kjudge builds them
(light_headers.build) and as plain load_inline does, in the interpreter it runs in (the GPU nodes'
torch, 2.11: tests/python/builds/test_build_corpus.py, bench/build_bench/corpus.py). One JSON line per
program on stdout.

CPU is spent only where a comparison can tell something (issue 53):
- the scan gives no shortcut: kjudge's build is plain load_inline's call, unchanged (checked with a
  recording load_inline; --compile-unshortcut compiles it once all the same, for the bench's table);
- a shortcut try failed: kjudge redid it with the full headers, which IS plain's build (its result
  is plain's, not compiled a third time);
- a shortcut compiled: plain load_inline compiles it too, and must succeed.
"plain" means load_inline's own arguments with the full precompiled torch/extension.h first on the
include path (what kjudge's full build does, --pch; the .gch is that header's own text, and GCC
reads the text where its flags differ)."""
import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# KJUDGE_CORPUS_HARNESS: another checkout's python/ (an earlier light_headers.py, to show a bug it had)
sys.path.insert(0, os.environ.get("KJUDGE_CORPUS_HARNESS") or os.path.join(HERE, "..", "..", "python"))

from kjudge_harness import light_headers, pch as pch_role  # noqa: E402

PROGRAMS = os.path.join(HERE, "programs")


def program_names():
    return sorted(d for d in os.listdir(PROGRAMS) if os.path.isfile(os.path.join(PROGRAMS, d, "program.json")))


def load_program(name):
    """(the load_inline arguments, program.json)."""
    d = os.path.join(PROGRAMS, name)
    with open(os.path.join(d, "program.json")) as f:
        meta = json.load(f)
    bound = {"cpp_sources": [read(os.path.join(d, "cpp.cpp"))], "cuda_sources": [read(os.path.join(d, "cuda.cu"))],
             "functions": meta["functions"], "verbose": False}
    for key in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        if key in meta:
            bound[key] = list(meta[key])
    return bound, meta


def read(path):
    with open(path) as f:
        return f.read()


def scan(bound, pch_dir):
    """The shortcut light_headers.build will try: the .cu's header and main.cpp's."""
    light_cu = light_headers._light_cu(bound)
    cu = ("minimal" if light_headers.minimal_fits(bound) else "light") if light_cu else "full"
    main = "light" if light_headers.light_main_dir(pch_dir, bound) else "full"
    return {"cu": cu, "main": main}


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def compiled(build):
    """(result, mode, CPU-s of the compilers, wall s, the error's last lines): build() raises or
    returns (module, mode)."""
    cpu, wall = cpu_seconds(), time.monotonic()
    try:
        _, mode = build()
        result, error = "compiles", ""
    except Exception as exc:  # noqa: BLE001 - a build that fails is a result here
        result, mode, error = "fails", None, tail(exc)
    return result, mode, round(cpu_seconds() - cpu, 1), round(time.monotonic() - wall, 1), error


def tail(exc):
    """The compiler's first error lines (torch's message holds the whole ninja output)."""
    text = str(exc) or traceback.format_exc()
    lines = [ln for ln in text.splitlines() if re.search(r"\berror\b", ln) and not ln.startswith("Error building")]
    return "\n".join((lines or text.splitlines())[:4])[-1200:]


def unchanged_call(bound, ext_dir, pch_dir):
    """light_headers.build with no shortcut to try calls load_inline once, with plain's arguments
    and nvcc's environment as it was."""
    calls = []
    before = os.environ.get("NVCC_PREPEND_FLAGS")

    def recording(**kwargs):
        calls.append((kwargs, os.environ.get("NVCC_PREPEND_FLAGS")))
        return "module"

    result = light_headers.build(recording, light_headers.fresh(bound), ext_dir, pch_dir)
    return result == ("module", "") and calls == [(light_headers.included(bound, pch_dir), before)]


def run_program(name, work, pch_dir, compile_unshortcut):
    from torch.utils.cpp_extension import load_inline
    bound, meta = load_program(name)
    ext_dir = os.path.join(work, name)
    kj = dict(bound, name=f"kjc_{name}", build_directory=os.path.join(ext_dir, "kjudge"))
    plain = dict(bound, name=f"kjp_{name}", build_directory=os.path.join(ext_dir, "plain"))
    for b in (kj, plain):
        os.makedirs(b["build_directory"])
    row = {"program": name, "scan": scan(kj, pch_dir), "expected": meta.get("plain_load_inline")}
    no_shortcut = row["scan"] == {"cu": "full", "main": "full"}
    if no_shortcut:
        row["unchanged_call"] = unchanged_call(kj, ext_dir, pch_dir)
        if not compile_unshortcut:
            return row
    result, mode, cpu, wall, error = compiled(lambda: light_headers.build(load_inline, kj, ext_dir, pch_dir))
    row.update(kjudge=result, kjudge_mode=mode, kjudge_cpu_s=cpu, kjudge_wall_s=wall, kjudge_error=error)
    if mode in ("minimal", "light"):  # a shortcut compiled: plain load_inline must compile it too
        result, _, cpu, wall, error = compiled(lambda: (load_inline(**light_headers.included(plain, pch_dir)), ""))
        row.update(plain=result, plain_how="compiled", plain_cpu_s=cpu, plain_wall_s=wall, plain_error=error)
    else:  # "" (the same call) or "full"/a failure: the full try is plain's build
        row.update(plain=result, plain_how="the same build" if mode == "" or no_shortcut else "kjudge's full retry")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("programs", nargs="*", help="program names (default: all)")
    ap.add_argument("--work", help="build dir (default: a temporary one, removed)")
    ap.add_argument("--no-pch", action="store_true", help="no precompiled headers (main.cpp then has no light try)")
    ap.add_argument("--compile-unshortcut", action="store_true",
                    help="compile programs the scan gives no shortcut too (their only build is plain's)")
    ap.add_argument("--pch-dir", help="the pch dir an earlier run made (kept), instead of making one")
    ap.add_argument("--scan-only", action="store_true", help="the scan's decisions, no compile")
    args = ap.parse_args()
    import torch
    print(json.dumps({"torch": torch.__version__, "python": sys.version.split()[0]}), flush=True)
    if args.scan_only:  # as with a pch made (its light .gch dir is all the scan looks for)
        with tempfile.TemporaryDirectory() as fake_pch:
            os.makedirs(os.path.join(fake_pch, "light", "torch", "extension.h.gch"))
            for name in args.programs or program_names():
                print(json.dumps({"program": name, "scan": scan(load_program(name)[0], fake_pch)}))
        return
    with tempfile.TemporaryDirectory(prefix="kj-build-corpus-", dir=args.work) as work:
        pch_dir = args.pch_dir
        if not args.no_pch and not pch_dir:
            cpu = cpu_seconds()
            report = pch_role.run({"pch_out": work, "with_cuda": True, "variants": ["O0"],
                                   "arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")}, {})
            pch_dir = os.path.join(work, "pch")
            print(json.dumps({"pch": pch_dir, "light": report.get("light"), "cpu_s": round(cpu_seconds() - cpu, 1)}),
                  flush=True)
        for name in args.programs or program_names():
            print(json.dumps(run_program(name, work, pch_dir, args.compile_unshortcut)), flush=True)


if __name__ == "__main__":
    main()
