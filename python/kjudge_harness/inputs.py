"""Input sets. Strict mode: every set comes from a per-run secret seed chosen by the daemon; the
extra sets transform the declared distribution (sign flips, x8 scale, one spike) so that kernels
which only work on get_inputs()'s range are caught. Compat mode reproduces KernelBench's seeds."""
import torch

MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def set_seed(seed):
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def generate(module, seed, device, on_device):
    """get_inputs() under `seed`. on_device: create tensors directly on the GPU (torch >= 2.0),
    which is how strict mode avoids generating large inputs on the CPU."""
    set_seed(seed)
    if on_device and device.type != "cpu" and hasattr(torch, "get_default_device"):
        with torch.device(device):
            values = list(module.get_inputs())
    else:
        values = list(module.get_inputs())
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def transform(values, kind, seed):
    """A variant of a declared set; integer tensors and scalars are left as they are."""
    if kind in ("", "none", None):
        return values
    out = []
    gens = {}
    for v in values:
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 0:
            # drawn on the tensor's own device: a 6.4 GB input's signs made on the host took 13 GB there
            if v.device not in gens:
                gens[v.device] = torch.Generator(device=v.device).manual_seed(seed & 0x7FFFFFFFFFFFFFFF)
            gen = gens[v.device]
            if kind == "signflip":
                signs = torch.randint(0, 2, v.shape, generator=gen, device=v.device, dtype=torch.int8)
                v = v * (signs * 2 - 1)
            elif kind == "scale8":
                v = v * 8
            elif kind == "spike":
                v = v.clone()
                flat = v.view(-1)
                at = int(torch.randint(0, flat.numel(), (1,), generator=gen, device=v.device))
                peak = float(flat.abs().max()) if flat.numel() else 1.0
                flat[at] = 8 * (peak if peak > 0 else 1.0)
            else:
                raise ValueError(f"unknown input transform '{kind}'")
        out.append(v)
    return out


def cast(values, dtype):
    """Precision: floating inputs take the task's dtype, integer inputs stay integer."""
    if dtype == torch.float32:
        return values
    return [v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]


def perturb(values, seed, call):
    """Before timed call `call`: in every floating input one element takes another element's
    value, so no two timed calls see the same inputs. Returns an undo list."""
    undo = []
    for k, v in enumerate(values):
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 1 and v.is_contiguous():
            flat = v.view(-1)
            h = splitmix64(seed ^ splitmix64((call << 8) | k))
            a, b = h % flat.numel(), (h >> 32) % flat.numel()
            undo.append((flat, a, flat[a].clone()))
            flat[a] = flat[b]
    return undo


def restore(undo):
    for flat, a, old in reversed(undo):
        flat[a] = old


def kernelbench_trial_seeds(count, base=42):
    """The correctness-trial seeds KernelBench draws: seed the CPU generator with 42, then one
    torch.randint(0, 2**32 - 1) per trial."""
    torch.manual_seed(base)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(count)]
