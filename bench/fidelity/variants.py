"""Distinct model-style candidates for the RL-step throughput benchmark (issue 24), made from the
honest corpus (corpus.json) by changing what a model varies between samples of one prompt: block
size and launch configuration, tile sizes, items per thread, loop unrolling, kernel and extension
names, comments, -O level. Every knob below only takes values that keep the kernel correct for any
input size (each file's shared arrays, reductions and launch math were checked for every value);
the extension name always changes, so every variant is its own source text and its own build.

Deterministic: the same corpus and arguments give the same files, byte for byte.

Usage: python3 bench/fidelity/variants.py OUT_DIR [--n 160] [--layout both|corpus|kb-runs] [--problems K]
  --problems K: only K of the corpus's problems, spread evenly over it, each with many samples (a
                GRPO-shaped batch: the per-problem work, the reference and its baselines, paid once)
  OUT_DIR/<slug>/<candidate>_v<k>.py   and OUT_DIR/manifest.json (corpus.json's fields + variant_of,
                                        usable as fidelity.py --manifest)
  OUT_DIR/runs/level_<L>_problem_<P>_sample_<S>_kernel.py   KernelBench's runs/ layout (kjudge-bench --generations)
OUT_DIR must be outside the repository or git-ignored (e.g. .fid_variants/, excluded by bench/fidelity/stage)."""
import argparse
import itertools
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# knobs per corpus file: (original text, [alternatives]); every alternative keeps the file correct.
# The register-tiled SGEMMs stay at <= 512 threads per block (no __launch_bounds__: 1024 could run out of registers).
THREADS_256 = ("const int threads = 256;", ["const int threads = 128;", "const int threads = 512;", "const int threads = 1024;"])
KNOBS = {
    "l1_01_square_matmul/naive.py": [("dim3 block(16, 16);", ["dim3 block(32, 8);", "dim3 block(32, 32);", "dim3 block(8, 32);"])],
    "l1_01_square_matmul/tiled_4x4.py": [("#define BM 64", ["#define BM 128", "#define BM 32"]), ("#define BN 64", ["#define BN 32"]),
                                         ("#define BK 16", ["#define BK 8", "#define BK 32"])],
    "l1_04_matvec/warp_shuffle.py": [("matvec_kernel<512><<<M, 512>>>", ["matvec_kernel<256><<<M, 256>>>", "matvec_kernel<1024><<<M, 1024>>>", "matvec_kernel<128><<<M, 128>>>"])],
    "l1_05_matrix_scalar/float4.py": [THREADS_256, ("65535LL * 16", ["65535LL * 4", "65535LL * 32"])],
    "l1_12_diag_matmul/naive.py": [("const int block_size = 256;", ["const int block_size = 128;", "const int block_size = 512;", "const int block_size = 1024;"])],
    "l1_13_symmetric_matmul/tiled_smem.py": [("#define TILE 32", ["#define TILE 16", "#define TILE 8"])],
    "l1_13_symmetric_matmul/exploit_symmetry.py": [("#define TILE 32", ["#define TILE 16", "#define TILE 8"])],
    "l1_14_upper_triangular_matmul/naive_krange.py": [("dim3 block(16, 16);\n    dim3 grid((N + 15) / 16, (N + 15) / 16);",
                                                       ["dim3 block(32, 8);\n    dim3 grid((N + 31) / 32, (N + 7) / 8);",
                                                        "dim3 block(32, 32);\n    dim3 grid((N + 31) / 32, (N + 31) / 32);",
                                                        "dim3 block(8, 8);\n    dim3 grid((N + 7) / 8, (N + 7) / 8);"])],
    "l1_14_upper_triangular_matmul/tiled_skip.py": [("#define TS 32", ["#define TS 16"]), ("#pragma unroll 8", ["#pragma unroll 4", "#pragma unroll", "#pragma unroll 16"])],
    "l1_15_lower_triangular_matmul/tiled_skip.py": [("#define TILE_DIM 32", ["#define TILE_DIM 16", "#define TILE_DIM 8"])],
    "l1_19_relu/naive.py": [("const int block_size = 256;", ["const int block_size = 128;", "const int block_size = 512;", "const int block_size = 1024;"])],
    "l1_19_relu/float4_gridstride.py": [("(long long)sms * 8);", ["(long long)sms * 4);", "(long long)sms * 16);", "(long long)sms * 32);"])],
    "l1_23_softmax/online_block.py": [("#define THREADS 1024", ["#define THREADS 512", "#define THREADS 256", "#define THREADS 128"])],
    "l1_23_softmax/naive_three_pass.py": [("int threads = 256;", ["int threads = 128;", "int threads = 512;", "int threads = 1024;"])],
    "l1_24_log_softmax/block_per_row.py": [("log_softmax_kernel<512><<<rows, 512>>>", ["log_softmax_kernel<256><<<rows, 256>>>", "log_softmax_kernel<1024><<<rows, 1024>>>", "log_softmax_kernel<128><<<rows, 128>>>"])],
    "l1_26_gelu/float4_erf.py": [THREADS_256],
    "l1_36_rms_norm/thread_per_position.py": [THREADS_256],
    "l1_37_frobenius_norm/two_kernels.py": [("<<<sms * 4, 512>>>", ["<<<sms * 2, 1024>>>", "<<<sms * 8, 256>>>", "<<<sms * 16, 128>>>"]),
                                            ("<<<sms * 8, 256>>>(x.data_ptr<float>(), y.data_ptr<float>()", ["<<<sms * 4, 512>>>(x.data_ptr<float>(), y.data_ptr<float>()"])],
    "l1_40_layer_norm/block_per_sample.py": [("#define BLOCK 1024", ["#define BLOCK 512", "#define BLOCK 256"])],
    "l1_42_max_pool_2d/thread_per_output.py": [THREADS_256],
    "l1_47_sum_reduction/thread_per_output.py": [THREADS_256, ("for (long long r = 0; r < reduce; ++r) acc", ["#pragma unroll 4\n    for (long long r = 0; r < reduce; ++r) acc"])],
    "l1_49_max_reduction/thread_per_output.py": [THREADS_256],
    "l1_51_argmax/thread_per_output.py": [("const int threads = 128;", ["const int threads = 256;", "const int threads = 64;", "const int threads = 512;"])],
    "l1_52_argmin/thread_per_output.py": [THREADS_256, ("#pragma unroll 4", ["#pragma unroll 8", "#pragma unroll 2"])],
    "l1_88_mingpt_new_gelu/naive_tanh.py": [("int threads = 512;", ["int threads = 256;", "int threads = 128;", "int threads = 1024;"])],
    "l1_89_cumsum/thread_per_row.py": [("const int threads = 128;", ["const int threads = 64;", "const int threads = 256;", "const int threads = 32;"])],
    "l1_91_cumsum_reverse/thread_per_row.py": [("const int threads = 128;", ["const int threads = 64;", "const int threads = 256;", "const int threads = 32;"])],
    "l1_91_cumsum_reverse/block_scan.py": [("#define THREADS 512", ["#define THREADS 256", "#define THREADS 1024"]), ("#define ITEMS 4", ["#define ITEMS 2", "#define ITEMS 8"])],
    "l1_92_cumsum_exclusive/block_scan.py": [("#define THREADS 512", ["#define THREADS 256", "#define THREADS 1024"]), ("#define ITEMS 4", ["#define ITEMS 2", "#define ITEMS 8"])],
    "l1_93_masked_cumsum/thread_per_row.py": [("const int threads = 128;", ["const int threads = 64;", "const int threads = 256;", "const int threads = 32;"])],
    "l1_93_masked_cumsum/block_scan.py": [("#define THREADS 512", ["#define THREADS 256", "#define THREADS 1024"]), ("#define ITEMS 4", ["#define ITEMS 2", "#define ITEMS 8"])],
    "l1_94_mse_loss/grid_stride_reduce.py": [("const int threads = 512;", ["const int threads = 256;", "const int threads = 1024;"]), ("(long long)sms * 4);", ["(long long)sms * 2);", "(long long)sms * 8);"])],
    "l1_95_cross_entropy/block_per_row.py": [("#define BLOCK 256", ["#define BLOCK 128", "#define BLOCK 512", "#define BLOCK 1024"])],
    "l1_96_huber_loss/grid_stride_reduce.py": [("const int threads = 512;", ["const int threads = 256;", "const int threads = 1024;"]), ("(long long)sms * 4);", ["(long long)sms * 2);", "(long long)sms * 8);"])],
    "l1_98_kl_div/fused_batchmean.py": [("int blocks = 1024, threads = 256;", ["int blocks = 2048, threads = 256;", "int blocks = 1024, threads = 512;", "int blocks = 512, threads = 1024;"])],
    "l1_99_triplet_margin/block_per_row.py": [("#define THREADS 256", ["#define THREADS 128", "#define THREADS 512"])],
    "l1_100_hinge_loss/grid_stride_reduce.py": [("const int threads = 512;", ["const int threads = 256;", "const int threads = 1024;"]), ("(long long)sms * 4);", ["(long long)sms * 2);", "(long long)sms * 8);"])],
    "l2_09_matmul_subtract_multiply_relu/fused_sgemm.py": [("#define BM 64", ["#define BM 128", "#define BM 32"]), ("#define BK 16", ["#define BK 8", "#define BK 32"])],
    "l2_12_gemm_multiply_leakyrelu/fused_sgemm.py": [("#define BN 64", ["#define BN 128", "#define BN 32"]), ("#define BK 16", ["#define BK 8", "#define BK 32"])],
    "l2_63_gemm_relu_divide/naive_fused.py": [("dim3 block(16, 16);\n    dim3 grid((out_features + 15) / 16, (batch + 15) / 16);",
                                              ["dim3 block(32, 8);\n    dim3 grid((out_features + 31) / 32, (batch + 7) / 8);",
                                               "dim3 block(32, 32);\n    dim3 grid((out_features + 31) / 32, (batch + 31) / 32);",
                                               "dim3 block(64, 4);\n    dim3 grid((out_features + 63) / 64, (batch + 3) / 4);"])],
    "l2_71_conv2d_divide_leakyrelu/naive_direct_conv.py": [("int threads = 256;", ["int threads = 128;", "int threads = 512;", "int threads = 1024;"])],
    "l3_01_mlp/matmul_fused_bias_relu.py": [THREADS_256],
    "l3_02_shallow_wide_mlp/fused_sgemm_mlp.py": [("#define BM 64", ["#define BM 128"]), ("#define BN 64", ["#define BN 32"])],
    "l3_03_deep_narrow_mlp/linear_inplace_relu.py": [("<<<(n + 1023) / 1024, 1024>>>", ["<<<(n + 255) / 256, 256>>>", "<<<(n + 511) / 512, 512>>>", "<<<(n + 127) / 128, 128>>>"])],
    "l3_43_mingpt_causal_attention/fused_causal_softmax.py": [("const int warps_per_block = 8;", ["const int warps_per_block = 4;", "const int warps_per_block = 16;", "const int warps_per_block = 32;"])],
}
# the torch_partial epilogue files share one launch shape
for _k in ("l2_01_conv2d_relu_biasadd/cudnn_conv_fused_relu_bias.py", "l2_40_matmul_scaling_residual_add/linear_fused_scale_residual.py",
           "l2_57_conv2d_relu_hardswish/cudnn_conv_fused_relu_hardswish.py", "l2_59_matmul_swish_scaling/linear_fused_swish.py",
           "l2_70_gemm_sigmoid_scaling_residual_add/linear_fused_sigmoid_residual.py", "l2_76_gemm_add_relu/torch_matmul_fused_bias_relu.py",
           "l2_86_matmul_divide_gelu/addmm_fused_div_gelu.py"):
    KNOBS[_k] = [THREADS_256, ("65535LL * 8", ["65535LL * 4", "65535LL * 16"])]

PY_COMMENTS = ["", "# Optimized implementation with custom CUDA kernels.\n",
               "# The hot path is replaced by an inline CUDA extension (torch.utils.cpp_extension.load_inline).\n",
               "# Custom CUDA kernel version of the model; tuned launch configuration.\n"]
CU_COMMENTS = ["", "// Launch parameters chosen for H100 (132 SMs).\n", "// Each thread handles independent work; no atomics on the hot path unless noted.\n",
               "// Kernel(s) below are compiled once by load_inline and cached.\n"]
RENAMES = [None, "{}_opt", "{}_v2", "fast_{}"]
OPT = [None, ('"-O3"', '"-O2"')]


def variant_text(text, rel, combo, idx, style):
    """Apply knob choices `combo` (one index per knob, 0 = original) and the style choices."""
    for (orig, alts), choice in zip(KNOBS.get(rel, []), combo):
        if choice:
            assert orig in text, "%s: knob text %r not found (the corpus changed: update variants.py)" % (rel, orig)
            text = text.replace(orig, alts[choice - 1])
    py_c, cu_c, ren, opt = style
    text = text.replace("from torch.utils.cpp_extension import load_inline\n",
                        "from torch.utils.cpp_extension import load_inline\n" + ("\n" + PY_COMMENTS[py_c] if PY_COMMENTS[py_c] else ""), 1)
    if CU_COMMENTS[cu_c]:
        text = text.replace("#include <cuda_runtime.h>\n", "#include <cuda_runtime.h>\n" + CU_COMMENTS[cu_c], 1)
    if RENAMES[ren]:
        for name in sorted(set(re.findall(r"__global__\s+void\s+(\w+)", text)), key=len, reverse=True):
            text = re.sub(r"\b%s\b" % re.escape(name), RENAMES[ren].format(name), text)
    if OPT[opt]:
        text = text.replace(*OPT[opt])
    names = re.findall(r'name="([A-Za-z0-9_]+)"', text)
    assert names, "%s: no load_inline name" % rel
    for n in set(names):
        text = text.replace('name="%s"' % n, 'name="%s_s%d"' % (n, idx))
    return text


def combos_for(rel):
    knobs = KNOBS.get(rel, [])
    per = [range(len(alts) + 1) for _, alts in knobs]
    styles = list(itertools.product(range(len(PY_COMMENTS)), range(len(CU_COMMENTS)), range(len(RENAMES)), range(len(OPT))))
    out = []
    for i, combo in enumerate(itertools.product(*per)):
        out.append((combo, styles[(i * 7 + 3) % len(styles)]))
    # the knob combinations first (different kernels), then the same kernels with other styles
    for i, s in enumerate(styles):
        out.append((tuple(0 for _ in per), s))
    return out


def problem_ids(problem):
    level = int(problem.split("/")[0].replace("level", ""))
    pid = int(os.path.basename(problem).split("_")[0])
    return level, pid


def spread_evenly(items, n):
    """n of items, evenly spaced over them in their order; n = 0 or n >= len(items): all."""
    if not n or n >= len(items):
        return items
    return [items[i * len(items) // n] for i in range(n)]


def of_problems(entries, k):
    """The entries of k problems spread evenly over the corpus's distinct problems, in its order
    (problem by problem, level 1 first); k = 0: all."""
    keep = set(spread_evenly(list(dict.fromkeys(e["problem"] for e in entries)), k))
    return [e for e in entries if e["problem"] in keep]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=160)
    ap.add_argument("--manifest", default=os.path.join(HERE, "corpus.json"))
    ap.add_argument("--layout", choices=("both", "corpus", "kb-runs"), default="both")
    ap.add_argument("--problems", type=int, default=0)
    a = ap.parse_args()
    out = os.path.abspath(a.out_dir)
    repo = os.path.normpath(os.path.join(HERE, "../.."))
    if out.startswith(repo + os.sep):
        ignored = subprocess.run(["git", "-C", repo, "check-ignore", "-q", out], capture_output=True).returncode == 0
        if not ignored:
            sys.exit("variants.py: %s is inside the repository and not git-ignored" % out)
    entries = of_problems(json.load(open(a.manifest)), a.problems)
    plans = {e["candidate"]: combos_for(e["candidate"][len("corpus/"):]) for e in entries}
    # round robin over the candidates, so every problem gets variants before any gets many
    picked, k = [], 0
    while len(picked) < a.n:
        progressed = False
        for e in entries:
            plan = plans[e["candidate"]]
            if k < len(plan) and len(picked) < a.n:
                picked.append((e, k, plan[k]))
                progressed = True
        if not progressed:
            sys.exit("variants.py: only %d variants possible" % len(picked))
        k += 1
    manifest, texts, samples = [], set(), {}
    for idx, (e, k, (combo, style)) in enumerate(picked):
        rel = e["candidate"][len("corpus/"):]
        text = variant_text(open(os.path.join(HERE, e["candidate"])).read(), rel, combo, idx, style)
        assert text not in texts, "duplicate variant text"
        texts.add(text)
        compile(text, rel, "exec")  # still Python
        slug, base = rel.split("/")
        row = dict(e, variant_of=e["candidate"], knobs=list(combo), style=list(style))
        if a.layout in ("both", "corpus"):
            path = os.path.join(out, slug, "%s_v%d.py" % (base[:-3], k))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write(text)
            row["candidate"] = path
        if a.layout in ("both", "kb-runs"):
            level, pid = problem_ids(e["problem"])
            s = samples.get((level, pid), 0)
            samples[(level, pid)] = s + 1
            path = os.path.join(out, "runs", "level_%d_problem_%d_sample_%d_kernel.py" % (level, pid, s))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write(text)
            row["kb_runs_file"] = path
            row.setdefault("candidate", path)
        manifest.append(row)
    json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)
    print("variants.py: %d distinct candidates over %d problems in %s" % (len(manifest), len({m["problem"] for m in manifest}), out))


if __name__ == "__main__":
    main()
