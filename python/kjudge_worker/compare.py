"""The comparator of src/pipeline/checks/compare.cpp, on the tensors' own device (no host copy): the same
tolerance rules and the same report fields. In float64, in chunks, so memory stays bounded, with
two host syncs per output, three when it has wrong elements (docs/gpu-worker.md). On a GPU the
tallies and the scale come from one kernel pass (compare_kernel.py) once it has agreed with the
torch path here on this device and dtype; the first and worst wrong elements always from here.
  pass  |a - e| <= atol * (scale_aware ? max(1, max finite |e|) : 1) + rtol * |e|
  NaN   matches NaN only when nan_equal; a NaN where a number was expected is counted apart
  Inf   must equal exactly"""
import math
import sys
import threading

import torch

from . import compare_kernel

CHUNK = 1 << 24  # elements per pass: 128 MB of float64 per temporary, about 1 GB for all of a pass's
WORST = 3        # wrong elements named in feedback


def _flat(t):
    t = t.detach().reshape(-1)
    return t.to(torch.float64) if t.dtype != torch.float64 else t


def _scale(expected):
    """max(1, the largest finite |expected|), on the device: one sync for the whole tensor."""
    fused = compare_kernel.finite_abs_max(expected) if _kernel_agrees(expected) else None
    if fused is not None:
        return max(1.0, float(fused))
    return _scale_by_torch(expected)


def _scale_by_torch(expected):
    best = torch.ones((), dtype=torch.float64, device=expected.device)
    for i in range(0, expected.numel(), CHUNK):
        e = _flat(expected[i:i + CHUNK]).abs()  # not in place: a float64 chunk is the output's own
        best = torch.maximum(best, torch.where(torch.isfinite(e), e, 0.0).max())
    return float(best)


def value_class(x):
    """What kind of value an expected element is, never the value (strict mode keeps it secret)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return "zero" if x == 0 else "a positive number" if x > 0 else "a negative number"


def _wrong_rows(base, wrong, finite, d, lim, e, a):
    """Device rows (score, index, got, expected) of the candidates for the worst wrong elements of one
    chunk: its first WORST non-finite ones (score inf) and its WORST finite ones furthest beyond their
    tolerance (score |a - e| / tolerance); rows of score -1 fill the places no element takes."""
    k = min(WORST, wrong.numel())
    at = torch.arange(wrong.numel(), device=wrong.device, dtype=torch.float64)
    first_key, first_at = torch.topk(torch.where(wrong & ~finite, -at, -math.inf), k)  # lowest index first
    score, top_at = torch.topk(torch.where(wrong & finite, d / lim.clamp_min(1e-300), -1.0), k)
    at = torch.cat([first_at, top_at])
    score = torch.cat([torch.full_like(first_key, -1.0).masked_fill_(first_key > -math.inf, math.inf), score])
    return torch.stack([score, at.to(torch.float64) + base, a[at], e[at]], 1)


def _first_and_worst(expected, actual, rows, floor, rtol, nan_equal):
    """For an output with wrong elements: the index of the first and the WORST worst of them
    [(score, index, got, expected class)]: non-finite ones first (in order), then the finite ones
    furthest beyond their tolerance. The chunks with wrong elements are judged again, until WORST
    non-finite ones are found; one host sync for all."""
    first, found, nonfinite = None, [], 0
    for i, row in zip(range(0, expected.numel(), CHUNK), rows):
        if not row[0]:
            continue
        wrong, finite, d, lim, e, a = _judged(expected, actual, i, floor, rtol, nan_equal)
        if first is None:
            first = torch.argmax(wrong.to(torch.uint8)).to(torch.float64) + i  # argmax: its first maximum
        found.append(_wrong_rows(i, wrong, finite, d, lim, e, a))
        nonfinite += row[5]
        if nonfinite >= WORST:  # the later chunks' elements come after these
            break
    if first is None:
        return -1, []
    head, *picked = torch.cat([first.reshape(1, 1).expand(1, 4), *found]).tolist()
    worst = [(s, int(at), got, value_class(exp)) for s, at, got, exp in picked if s >= 0]
    return int(head[0]), sorted(worst, key=lambda w: (-w[0], w[1]))[:WORST]


def _position(index, shape):
    coords = []
    for dim in reversed(list(shape) or [1]):
        coords.append(index % dim)
        index //= dim
    return "[" + ", ".join(str(c) for c in reversed(coords)) + "]"


def _judged(expected, actual, i, floor, rtol, nan_equal, chunk=None):
    """The chunk from element i (of `chunk` elements, default CHUNK): (wrong, finite, |a - e|,
    tolerance, e, a), the last four in float64. NaN matches NaN only when nan_equal; an infinity
    only itself."""
    chunk = chunk or CHUNK
    e, a = expected[i:i + chunk].detach(), actual[i:i + chunk].detach()
    finite = torch.isfinite(e) & torch.isfinite(a)
    ok = torch.isinf(e) & (a == e)
    if nan_equal:
        ok |= torch.isnan(a) & torch.isnan(e)
    e, a = _flat(e), _flat(a)
    d = (a - e).abs_()
    lim = e.abs().mul_(rtol).add_(floor)
    ok |= finite & (d <= lim)
    return ~ok, finite, d, lim, e, a


def _tallies(expected, actual, i, floor, rtol, nan_equal, chunk=None):
    """Device scalars of the chunk from element i, float64: [wrong, NaN given where wrong, Inf given
    where wrong, max finite |a - e|, max finite |a - e| / |e| (e != 0), wrong where either side is
    not finite]. No host sync."""
    wrong, finite, d, lim, e64, a64 = _judged(expected, actual, i, floor, rtol, nan_equal, chunk)
    del lim
    rel = torch.where(finite & (e64 != 0), d / e64.abs(), 0.0).max()
    f64 = torch.float64
    return torch.stack([wrong.sum(dtype=f64), (wrong & torch.isnan(a64)).sum(dtype=f64),
                        (wrong & torch.isinf(a64)).sum(dtype=f64), torch.where(finite, d, 0.0).max(), rel,
                        (wrong & ~finite).sum(dtype=f64)])


def _chunk_tallies(expected, actual, floor, rtol, nan_equal):
    """[[the _tallies of each chunk]]: by compare_kernel's one pass where it runs and agrees with
    the torch path, else by the torch path. One host sync."""
    fused = None
    if _kernel_agrees(expected):
        fused = compare_kernel.chunk_tallies(expected, actual, floor, rtol, nan_equal, CHUNK)
    if fused is not None:
        return fused.tolist()
    return _chunk_tallies_by_torch(expected, actual, floor, rtol, nan_equal)


def _chunk_tallies_by_torch(expected, actual, floor, rtol, nan_equal, chunk=None):
    chunk = chunk or CHUNK
    per_chunk = [_tallies(expected, actual, i, floor, rtol, nan_equal, chunk) for i in range(0, expected.numel(), chunk)]
    return torch.stack(per_chunk).tolist() if per_chunk else []


USE_KERNEL = True   # False: the torch path only (bench/timing_probe/compare_cost.py sets it to compare the two)
_agreement = {}     # (device, dtype) -> did the kernel's tallies equal the torch path's (_self_check)
_agreement_lock = threading.Lock()


def _kernel_agrees(t):
    """Whether compare_kernel may judge tensors like t: it runs on t's device and dtype and gave
    exactly the torch path's tallies and scale there, on values made to sit on every rule's edge
    (checked once per process, device and dtype; a disagreement is reported on stderr)."""
    if not USE_KERNEL or not compare_kernel.usable(t):
        return False
    key = (str(t.device), t.dtype)
    with _agreement_lock:
        if key not in _agreement:
            _agreement[key] = _self_check(t.device, t.dtype)
        return _agreement[key]


SELF_CHECK_CHUNK = 4 * compare_kernel.ITEMS  # small chunks: the check's many chunks take milliseconds


def _self_check_values(device, dtype):
    """(expected, actual) of 3 SELF_CHECK_CHUNKs and a ragged tail: random values, NaN and Inf on
    either side, zeros, subnormals, huge values, and elements exactly on and one step beyond their
    tolerance."""
    g = torch.Generator(device="cpu").manual_seed(1)
    n = 3 * SELF_CHECK_CHUNK + 3 * compare_kernel.ITEMS + 77
    e = (torch.randn(n, generator=g, dtype=torch.float64) * torch.pow(10.0, torch.randint(-6, 6, (n,), generator=g).double())).to(dtype)
    a = (e.to(torch.float64) * (1 + torch.randn(n, generator=g, dtype=torch.float64) * 1e-3)).to(dtype)
    special = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-40, 1e300, -1e300], dtype=torch.float64)
    k = n // 16
    idx = torch.randint(0, n, (k,), generator=g)
    e[idx] = special[torch.randint(0, len(special), (k,), generator=g)].to(dtype)
    idx = torch.randint(0, n, (k,), generator=g)
    a[idx] = special[torch.randint(0, len(special), (k,), generator=g)].to(dtype)
    edge = torch.randint(0, n, (k,), generator=g)  # |a - e| == the tolerance, or a step beyond it
    e64 = e[edge].to(torch.float64)
    lim = e64.abs().mul_(1e-3).add_(1e-3)
    a[edge] = torch.where(torch.rand(k, generator=g) < 0.5, e64 + lim, torch.nextafter(e64 + lim, e64 + 2 * lim)).to(dtype)
    return e.to(device), a.to(device)


def _self_check(device, dtype):
    try:
        e, a = _self_check_values(device, dtype)
        scale, by_torch = compare_kernel.finite_abs_max(e), _scale_by_torch(e)
        agree = scale is not None and max(1.0, float(scale)) == by_torch
        for nan_equal in (True, False):
            for floor in (1e-3, 1e-3 * by_torch):
                fused = compare_kernel.chunk_tallies(e, a, floor, 1e-3, nan_equal, SELF_CHECK_CHUNK)
                agree = agree and fused is not None and \
                    fused.tolist() == _chunk_tallies_by_torch(e, a, floor, 1e-3, nan_equal, SELF_CHECK_CHUNK)
    except Exception as exc:  # noqa: BLE001 -- any failure leaves the torch path in charge
        print(f"compare: the comparator kernel failed its check on {device} {dtype}: {exc}", file=sys.stderr)
        return False
    if not agree:
        print(f"compare: the comparator kernel disagrees with the torch path on {device} {dtype}: not used",
              file=sys.stderr)
    return agree


def compare(expected, actual, atol, rtol, scale_aware=True, nan_equal=True, shape=None):
    """expected, actual: flat tensors of one dtype and size on one device. Returns the
    TensorComparison fields as a dict. One pass of device work without a host sync, then, only
    for an output with wrong elements, its wrong chunks again for the first and worst of them."""
    n = expected.numel()
    out = {"arg": "output", "atol": atol, "rtol": rtol, "elements": n, "first_mismatch_index": -1,
           "mismatches": 0, "max_abs_error": 0.0, "max_rel_error": 0.0, "passed": False, "problem": ""}
    if actual.numel() != n:
        out["problem"] = f"output has {actual.numel()} elements, expected {n}"
        out["mismatches"] = n
        return out
    floor = atol * _scale(expected) if scale_aware else atol
    rows = _chunk_tallies(expected, actual, floor, rtol, nan_equal)
    bad, nan_bad, inf_bad = (int(sum(r[k] for r in rows)) for k in range(3))
    first, worst = _first_and_worst(expected, actual, rows, floor, rtol, nan_equal) if bad else (-1, [])
    out.update({"mismatches": bad, "first_mismatch_index": first,
                "max_abs_error": max((r[3] for r in rows), default=0.0),
                "max_rel_error": max((r[4] for r in rows), default=0.0), "passed": bad == 0,
                "nan_outputs": nan_bad, "inf_outputs": inf_bad,
                "worst": [{"position": _position(w[1], shape if shape is not None else [n]), "got": f"{w[2]:.6g}",
                           "expected": w[3]} for w in worst]})
    if nan_bad:
        out["problem"] = f"{nan_bad} elements are NaN where a number was expected (unwritten output?)"
    return out


def described(expected, actual, desc, tol):
    """Shape and dtype first (a problem in words), then the elements."""
    exp_desc = {"dtype": str(expected.dtype).replace("torch.", ""), "shape": list(expected.shape)}
    if list(desc.get("shape", [])) != exp_desc["shape"]:
        return {"arg": "output", "passed": False, "first_mismatch_index": -1,
                "problem": f"output shape {desc.get('shape')} differs from the reference's {exp_desc['shape']}"}
    if desc.get("dtype") != exp_desc["dtype"]:
        return {"arg": "output", "passed": False, "first_mismatch_index": -1,
                "problem": f"output dtype {desc.get('dtype')} differs from the reference's {exp_desc['dtype']}"}
    return compare(expected.reshape(-1), actual.reshape(-1), tol["atol"], tol["rtol"], tol.get("scale_aware", True),
                   tol.get("nan_equal", True), shape=list(expected.shape))


def identical(a, b):
    """Bitwise equality (NaN-safe): did a shared input copy change? Chunk by chunk: torch.equal on
    the device makes a mask of the whole tensor (6 GB for a 6 GB input)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    x, y = a.detach().reshape(-1).view(torch.uint8), b.detach().reshape(-1).view(torch.uint8)
    step = 8 * CHUNK
    return all(torch.equal(x[i:i + step], y[i:i + step]) for i in range(0, x.numel(), step))
