"""N distinct candidates of one problem (KernelBench's few-shot elementwise add): the same kernel
with a different block size each, so every one is its own build. Writes <dir>/add_v<i>.py."""
import os
import sys


def main(src, out_dir, n):
    text = open(src).read()
    os.makedirs(out_dir, exist_ok=True)
    assert "const int block_size = 256;" in text and 'name="elementwise_add"' in text
    for i in range(n):
        block = 32 * (1 + i % 32)
        v = text.replace("const int block_size = 256;", f"const int block_size = {block};")
        v = v.replace('name="elementwise_add"', f'name="elementwise_add_v{i}"')
        open(os.path.join(out_dir, f"add_v{i}.py"), "w").write(v)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
