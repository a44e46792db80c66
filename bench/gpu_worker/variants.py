"""N distinct candidates of one problem (KernelBench's level-1 square matmul at its shipped size):
the honest tiled-matmul candidate of tests/kernelbench with a different tile, shared-memory padding
and unroll factor each, so every one is its own build and its own kernel, as the samples of an RL
group are. Writes <dir>/matmul_v<i>.py."""
import itertools
import os
import sys


def main(src, out_dir, n):
    text = open(src).read()
    os.makedirs(out_dir, exist_ok=True)
    marks = ("#define KB_TILE 16", "[KB_TILE + 1]", "#pragma unroll\n", 'name="kb_matmul_square_cuda_ok"')
    assert all(m in text for m in marks), "the candidate changed: update the variants"
    combos = list(itertools.product((8, 16, 32), (0, 1), (1, 2, 4, 8, 16, 32)))
    assert n <= len(combos)
    for i, (tile, pad, unroll) in enumerate(combos[:n]):
        v = text.replace("#define KB_TILE 16", f"#define KB_TILE {tile}")
        v = v.replace("[KB_TILE + 1]", f"[KB_TILE + {pad}]")
        v = v.replace("#pragma unroll\n", f"#pragma unroll {unroll}\n")
        v = v.replace('name="kb_matmul_square_cuda_ok"', f'name="kb_matmul_v{i}"')
        open(os.path.join(out_dir, f"matmul_v{i}.py"), "w").write(v)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
