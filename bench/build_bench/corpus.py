"""The whole build corpus (tests/build_corpus/programs) built by kjudge's path and by plain
load_inline, in the GPU nodes' torch (issue 53's target: 0 programs whose compile result differs).

  bench/build_bench/corpus.py --out bench/results/build-corpus-<date>-cpu [--python PY]
  bench/build_bench/corpus.py --out DIR --jsonl DIR/corpus.jsonl [--record-programs]

The first runs tests/build_corpus/driver.py (--compile-unshortcut: a program with no shortcut is
compiled once, its only build being plain's) into DIR/corpus.jsonl and writes DIR/table.md; the
second renders the table from a run's lines, and --record-programs writes each program's plain
result into its program.json (what tests/python/builds/test_build_corpus.py compares with)."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DRIVER = os.path.join(ROOT, "tests", "build_corpus", "driver.py")
PROGRAMS = os.path.join(ROOT, "tests", "build_corpus", "programs")


def run_driver(python, jsonl):
    env = dict(os.environ, MAX_JOBS=os.environ.get("MAX_JOBS", "2"), PYTHONPATH=os.path.join(ROOT, "python"))
    env["LD_LIBRARY_PATH"] = ":".join(p for p in ("/usr/local/cuda/lib64", os.environ.get("LD_LIBRARY_PATH")) if p)
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    with open(jsonl, "w") as out:
        subprocess.run([python, DRIVER, "--compile-unshortcut"], stdout=out, env=env, check=True)


def read_rows(jsonl):
    with open(jsonl) as f:
        lines = [json.loads(line) for line in f if line.startswith("{")]
    return [r for r in lines if "program" in r], [r for r in lines if "program" not in r]


def table(rows, head):
    out = ["| program | scan: .cu / main.cpp | kjudge's build | kjudge | plain load_inline | plain's build was |"
           " kjudge CPU-s | plain CPU-s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mode = r.get("kjudge_mode") or ("" if r["scan"] == {"cu": "full", "main": "full"} or r.get("kjudge") != "fails"
                                        else "full headers (retry)")
        out.append(f"| {r['program']} | {r['scan']['cu']} / {r['scan']['main']} | {mode or 'as plain'} | {r.get('kjudge')} | "
                   f"{r.get('plain')} | {r.get('plain_how')} | {r.get('kjudge_cpu_s', '')} | {r.get('plain_cpu_s', '')} |")
    differ = [r["program"] for r in rows if r.get("kjudge") != r.get("plain")]
    kj = sum(r.get("kjudge_cpu_s", 0) for r in rows)
    plain_separate = sum(r.get("plain_cpu_s", 0) for r in rows)
    summary = [f"- programs: {len(rows)}; compile result differs from plain load_inline: {len(differ)} {differ or ''}",
               f"- kjudge's builds: {kj:.0f} CPU-s in all; plain's own builds (where a shortcut compiled): "
               f"{plain_separate:.0f} CPU-s; precompiled headers: {sum(h.get('cpu_s', 0) for h in head):.0f} CPU-s",
               f"- torch: {next((h['torch'] for h in head if 'torch' in h), '?')}"]
    return "\n".join(summary + [""] + out) + "\n"


def record(rows):
    for r in rows:
        path = os.path.join(PROGRAMS, r["program"], "program.json")
        with open(path) as f:
            meta = json.load(f)
        meta["plain_load_inline"] = r["plain"]
        with open(path, "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default=os.environ.get("KJUDGE_TORCH2_PYTHON")
                    or os.path.expanduser("~/.cache/kjudge/torch-2.11.0/bin/python"))
    ap.add_argument("--jsonl", help="render this run's lines instead of running")
    ap.add_argument("--record-programs", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    jsonl = args.jsonl or os.path.join(args.out, "corpus.jsonl")
    if not args.jsonl:
        run_driver(args.python, jsonl)
    rows, head = read_rows(jsonl)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table(rows, head))
    if args.record_programs:
        record(rows)
    sys.stdout.write(table(rows, head))


if __name__ == "__main__":
    main()
