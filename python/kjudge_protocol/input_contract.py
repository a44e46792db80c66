"""What a problem's inputs structurally are, read off one draw of get_inputs(), so that the judge's
derived sets and per-call perturbations stay inside the problem's contract (docs/input-contract.md).

A derived set is always a fresh draw from the problem's own generator under its own seed; a variant
(sign flips, x8, one spike) then changes that draw only where nothing structural forbids it:
  constant tensor       no change (a constant is part of the problem, e.g. torch.ones)
  few distinct values   no change (masks, one-hot rows, labels stored as floats)
  rows on the simplex   no change (probability rows: non-negative, each row sums to 1)
  symmetric matrices    the same sign for [i, j] and [j, i]; a spike at both
  exact zeros           kept zero (sign flips and scaling keep them; a spike lands on a non-zero)
  the same tensor twice the second argument gets the first one's variant
Non-negative inputs (torch.rand) still get sign flips: a ReLU that returns its input must fail."""
import torch

DISCRETE_VALUES = 16         # at most this many distinct values in a sample: a discrete tensor
DISCRETE_SAMPLE = 1 << 20    # elements sampled for that count
MIN_DISCRETE_ELEMENTS = 64   # fewer elements tell nothing about a value set
SIMPLEX_TOL = 1e-3


def sample(flat, size=DISCRETE_SAMPLE):
    """At most `size` elements of a flat tensor, evenly strided (a view: nothing copied)."""
    if flat.numel() <= size:
        return flat
    return flat[::flat.numel() // size][:size]


CHUNK = 1 << 24  # elements per pass of a whole-tensor test or variant: no temporary of a 6 GB input's size


def every(flat, test):
    """test(part) holds for every element of a flat tensor: a strided sample first (it settles
    most tensors without a pass over a 6 GB input), then chunk by chunk, never a mask of the
    whole tensor."""
    if not bool(test(sample(flat)).all()):
        return False
    return all(bool(test(flat[i:i + CHUNK]).all()) for i in range(0, flat.numel(), CHUNK))


def is_constant(v):
    flat = v.reshape(-1)
    first = flat[0]
    return every(flat, lambda part: part == first) or every(flat, torch.isnan)


def f64_total(flat, nan_as_zero=False):
    """The float64 sum of a flat tensor, chunk by chunk on its device (one sync at the end)."""
    add = torch.nansum if nan_as_zero else torch.sum
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    for i in range(0, flat.numel(), CHUNK):
        total += add(flat[i:i + CHUNK], dtype=torch.float64)
    return float(total)


def is_discrete(v):
    if v.numel() < MIN_DISCRETE_ELEMENTS:
        return False
    return torch.unique(sample(v.reshape(-1))).numel() <= DISCRETE_VALUES


def is_simplex_rows(v):
    if v.dim() == 0 or v.shape[-1] < 2 or not every(v.reshape(-1), lambda part: part >= 0):
        return False
    # each row's float64 sum, a chunk of rows at a time: torch's reductions cast their whole input
    # to the accumulation type first, so one sum(dtype=float64) of a 6 GiB set was a 12 GiB copy
    rows = v.reshape(-1, v.shape[-1])
    step = max(1, CHUNK // v.shape[-1])
    return all(bool(((torch.sum(rows[i:i + step], -1, dtype=torch.float64) - 1).abs() <= SIMPLEX_TOL).all())
               for i in range(0, rows.shape[0], step))


def is_symmetric(v):
    return v.dim() >= 2 and v.shape[-1] == v.shape[-2] and v.shape[-1] > 1 and torch.equal(v, v.transpose(-1, -2))


def structure(v):
    """The first rule that holds for this floating tensor: 'constant', 'discrete', 'simplex',
    'symmetric', or '' (free: sign flips, scaling and spikes allowed; zeros stay zero anyway)."""
    if v.numel() < 2:
        return "constant"
    for name, test in (("constant", is_constant), ("discrete", is_discrete), ("simplex", is_simplex_rows),
                       ("symmetric", is_symmetric)):
        if test(v):
            return name
    return ""


FROZEN = ("constant", "discrete", "simplex")  # structures no value transform keeps


def symmetric_signs(v, gen):
    """A +-1 mask with mask[..., i, j] == mask[..., j, i]."""
    signs = torch.randint(0, 2, v.shape, generator=gen, device=v.device, dtype=torch.int8) * 2 - 1
    upper = torch.triu(signs)
    return upper + torch.triu(signs, 1).transpose(-1, -2)


SPIKE_DRAWS = 64  # uniform positions tried before listing the non-zeros


def spike_position(flat, gen):
    """A random position holding a non-zero value (structural zeros stay zero); None if all are zero.
    Uniform positions are drawn first and the first non-zero one taken (uniform over the non-zeros):
    listing the non-zeros of a 1.6 G-element input would take 13 GB of indices. Only a tensor so
    sparse that every draw hit a zero is listed, and its list is short."""
    draws = torch.randint(0, flat.numel(), (SPIKE_DRAWS,), generator=gen, device=flat.device)
    hits = draws[flat[draws] != 0]
    if hits.numel():
        return int(hits[0])
    nonzero = torch.nonzero(flat)
    if nonzero.numel() == 0:
        return None
    pick = int(torch.randint(0, nonzero.shape[0], (1,), generator=gen, device=flat.device))
    return int(nonzero[pick, 0])


def mirror(at, shape):
    """Flat index of [.., j, i] for the flat index of [.., i, j]."""
    n = shape[-1]
    base, i, j = at - at % (n * n), (at % (n * n)) // n, at % n
    return base + j * n + i
