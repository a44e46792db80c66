"""KernelBench-style one-kernel candidates: the shape of KernelBench's own example
(kb_elementwise_add.py: torch/extension.h and one __global__ kernel in the .cu, a one-line
declaration in cpp_sources, load_inline with its defaults), one per elementwise op, so N
distinct sources build cold side by side as N different model answers would."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = {"add": "a[idx] + b[idx]", "sub": "a[idx] - b[idx]", "mul": "a[idx] * b[idx]",
       "max": "fmaxf(a[idx], b[idx])", "min": "fminf(a[idx], b[idx])", "relu_add": "fmaxf(a[idx] + b[idx], 0.0f)",
       "fma": "a[idx] * b[idx] + a[idx]", "absdiff": "fabsf(a[idx] - b[idx])"}


def source(op):
    with open(os.path.join(HERE, "kb_elementwise_add.py")) as f:
        text = f.read()
    text = text.replace("a[idx] + b[idx]", OPS[op]).replace("elementwise_add", f"elementwise_{op}")
    return text.replace('name="elementwise_' + op + '"', f'name="kb_style_{op}"')


def write(work, count):
    """[(name, path)] of `count` distinct candidates written under `work`."""
    if count > len(OPS):
        raise SystemExit(f"--kb-style: at most {len(OPS)} distinct ops")
    out = []
    for op in list(OPS)[:count]:
        path = os.path.join(work, f"kb_style_{op}.py")
        with open(path, "w") as f:
            f.write(source(op))
        out.append((f"kb_style/{op}", path))
    return out
