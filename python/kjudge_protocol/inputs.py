"""Input sets. Strict mode: every set is a fresh draw of get_inputs() under a per-run secret seed
chosen by the daemon; the extra sets transform their draw (sign flips, x8 scale, one spike) so that
kernels which only work on get_inputs()'s range are caught, inside the problem's input contract
(input_contract.py: structural zeros, symmetry, probability rows, value sets and constants are
kept). Compat mode reproduces KernelBench's seeds."""
import contextlib
import functools
import threading

import torch

from . import input_contract as contract

PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}  # the task's dtype by name

_nonzero, _equal = torch.nonzero, torch.equal  # bound before candidate code runs

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


# Reentrant: a reference's Model(...) under a seed may itself set the generators back (fork_rng),
# through the guarded setters below.
_RNG = threading.RLock()


@contextlib.contextmanager
def seeded(seed):
    """torch's global generators seeded and held: the worker makes sets and models for several
    jobs in threads at once, and draws interleaved between threads are neither the seed's values
    (weights differ from the candidate's own draw) nor made again the same (a remade set differs
    from the one handed over). Nothing else is acquired while it is held."""
    with _RNG:
        set_seed(seed)
        yield


def guard_generator_restores():
    """Makes torch's generator-state setters wait for the seeded draws' lock (once per process;
    the trusted worker's). torch.compile's first call saves the global generators and sets them
    back when it ends (Dynamo's preserve_global_state); set back while another thread draws under
    a seed, that rewound the draw midway: weights unlike the candidate's, an honest kernel judged
    wrong on almost every element (4 H100 run 18). The whole compile held the lock before, and
    every job loading a problem or making a set beside it waited (10-15 of a cold step's first 16
    jobs spent 5.6-6.1 s in `reference_init`, the others 0.7-0.9 s: bench/results/rlstep-20261208-h100-steady)."""
    for module in (torch, torch.random, torch.cuda, torch.cuda.random):
        setter = module.set_rng_state
        if not getattr(setter, "waits_for_seeded_draws", False):
            module.set_rng_state = _waiting_for_seeded_draws(setter)


def _waiting_for_seeded_draws(setter):
    @functools.wraps(setter)
    def set_rng_state(*args, **kwargs):
        with _RNG:
            return setter(*args, **kwargs)
    set_rng_state.waits_for_seeded_draws = True
    return set_rng_state


def generate(module, seed, device, on_device):
    """get_inputs() under `seed`. on_device: create tensors directly on the GPU (torch >= 2.0),
    which is how strict mode avoids generating large inputs on the CPU."""
    with seeded(seed):
        if on_device and device.type != "cpu" and hasattr(torch, "get_default_device"):
            with torch.device(device):
                values = list(module.get_inputs())
        else:
            values = list(module.get_inputs())
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def transform(values, kind, seed):
    """A variant of a declared set, inside the problem's input contract (input_contract.py):
    returns (values, notes), notes naming each input the variant left as drawn or changed in a
    structure-keeping way. Integer tensors and scalars are left as they are."""
    if kind in ("", "none", None):
        return values, []
    if kind not in VARIANTS:
        raise ValueError(f"unknown input transform '{kind}'")
    out, notes, seen, gens = [], [], [], {}
    for i, v in enumerate(values):
        if not (isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 0):
            out.append(v)
            continue
        twin = next(((j, new) for j, old, new in seen if old.shape == v.shape and old.dtype == v.dtype
                     and torch.equal(old, v)), None)
        if twin is not None:  # the same tensor passed twice: one variant for both
            notes.append(f"input {i} equals input {twin[0]}: the same variant")
            out.append(twin[1])
            continue
        shape = contract.structure(v)
        if shape in contract.FROZEN:
            notes.append(f"input {i} {STRUCTURE_WORDS[shape]}: kept as drawn")
            new = v
        else:
            # drawn on the tensor's own device: a 6.4 GB input's signs made on the host took 13 GB there
            if v.device not in gens:
                gens[v.device] = torch.Generator(device=v.device).manual_seed(seed & 0x7FFFFFFFFFFFFFFF)
            new = VARIANTS[kind](v, gens[v.device], shape == "symmetric")
            if shape == "symmetric":
                notes.append(f"input {i} symmetric: kept symmetric")
        seen.append((i, v, new))
        out.append(new)
    return out, notes


STRUCTURE_WORDS = {"constant": "is constant", "discrete": "takes few distinct values",
                   "simplex": "has rows on the probability simplex"}


def _signflip(v, gen, symmetric):
    if symmetric:
        return v * contract.symmetric_signs(v, gen)
    # signs drawn chunk by chunk: a 6.4 GB input's whole mask, cast, took 2.6x its size
    src, step = v.reshape(-1), contract.CHUNK
    out = torch.empty_like(src)
    for i in range(0, src.numel(), step):
        part = src[i:i + step]
        signs = torch.randint(0, 2, part.shape, generator=gen, device=v.device, dtype=torch.int8)
        torch.mul(part, signs.mul_(2).sub_(1), out=out[i:i + step])
    return out.view(v.shape)


def _scale8(v, gen, symmetric):
    return v * 8


def _spike(v, gen, symmetric):
    """One element far outside the draw, on a non-zero position (zeros are structural)."""
    v = v.clone()
    flat = v.view(-1)
    at = contract.spike_position(flat, gen)
    if at is None:
        return v
    low, high = torch.aminmax(flat)  # no |v| temporary of the input's size
    peak = max(abs(float(low)), abs(float(high)))
    flat[at] = 8 * (peak if peak > 0 else 1.0)
    if symmetric:
        flat[contract.mirror(at, v.shape)] = flat[at]
    return v


VARIANTS = {"signflip": _signflip, "scale8": _scale8, "spike": _spike}


def cast(values, dtype, every_tensor=False):
    """Precision: floating inputs take the task's dtype; integer and bool inputs keep theirs.
    every_tensor (compat): every tensor input takes it, as KernelBench's evaluator casts them (its
    `_process_input_tensor`): a bool mask or int64 labels become floating there too.
    Returns (values, notes): a note for each input whose dtype was not floating before."""
    if dtype == torch.float32 and not every_tensor:
        return values, []  # fp32 (the default): the problem's own dtypes, float64 included
    def takes(v):
        return isinstance(v, torch.Tensor) and (v.is_floating_point() or every_tensor) and v.dtype != dtype
    notes = [f"input {k} cast from {str(v.dtype).replace('torch.', '')} to {str(dtype).replace('torch.', '')}"
             for k, v in enumerate(values) if takes(v) and not v.is_floating_point()]
    return [v.to(dtype) if takes(v) else v for v in values], notes


PERTURB_WINDOW = 4096  # elements of a row searched for two non-zero values to swap
PERTURB_ROWS_TRIED = 4


def perturb(values, seed, call):
    """Before timed call `call`: in every floating input two non-zero elements of one row swap
    values (their mirror images too where the matrix is symmetric), so no two timed calls see the
    same inputs while zeros, row sums, value sets and symmetry stay as the problem made them.
    A pure function of (values, seed, call): the worker replays it for the audited calls.
    Returns an undo list."""
    undo = []
    for k, v in enumerate(values):
        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 1 and v.is_contiguous():
            undo += _swap_in_row(v, splitmix64(seed ^ splitmix64((call << 8) | k)))
    return undo


def _swap_in_row(v, h):
    flat = v.view(-1)
    width = v.shape[-1] if v.dim() and v.shape[-1] > 1 else flat.numel()
    rows = flat.numel() // width
    for t in range(PERTURB_ROWS_TRIED):
        r = (h + t * (h >> 20 | 1)) % rows
        off = (h >> 12) % max(1, width - PERTURB_WINDOW + 1) if width > PERTURB_WINDOW else 0
        start = r * width + off
        nz = _nonzero(flat[start:start + min(width, PERTURB_WINDOW)]).view(-1)
        if nz.numel() >= 2:
            i = (h >> 32) % nz.numel()
            j = (i + 1 + (h >> 48) % (nz.numel() - 1)) % nz.numel()
            a, b = start + int(nz[i]), start + int(nz[j])
            return _swap(flat, a, b, _mirrored(v, flat, r, width))
    return []


def _mirrored(v, flat, r, width):
    """Row r of a square matrix that equals its column: the matrix is symmetric (mirror the swap)."""
    if v.dim() < 2 or v.shape[-1] != v.shape[-2] or width != v.shape[-1]:
        return None
    n = width
    base, i = (r // n) * n * n, r % n
    matrix = flat[base:base + n * n].view(n, n)
    return v.shape if _equal(matrix[i], matrix[:, i]) else None


def _swap(flat, a, b, symmetric_shape):
    new = {a: flat[b].clone(), b: flat[a].clone()}
    if symmetric_shape is not None:
        new[contract.mirror(a, symmetric_shape)] = new[a]
        new[contract.mirror(b, symmetric_shape)] = new[b]
    undo = [(flat, at, flat[at].clone()) for at in new]
    for at, value in new.items():
        flat[at] = value
    return undo


def restore(undo):
    for flat, a, old in reversed(undo):
        flat[a] = old


def kernelbench_trial_seeds(count, base=42):
    """The correctness-trial seeds KernelBench draws: seed the CPU generator with 42, then one
    torch.randint(0, 2**32 - 1) per trial. Drawn from a generator of its own seeded the same way
    (the same values): reseeding torch's global one here, unheld, raced the worker's other threads
    drawing a model's weights or a set under `seeded`."""
    gen = torch.Generator().manual_seed(base)
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=gen).item()) for _ in range(count)]
