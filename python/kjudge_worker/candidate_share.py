"""How much of the device the node's candidates may hold together: kjudged admits each candidate
by the worker's estimate of its job beside the others running (src/worker/device_budget.h), within
this capacity. It is what the worker does not keep for itself: its jobs' preparations (a share of
the device) and a fixed part that does not grow with the device (the one large set in use with its
transients, the contexts). Of the worker's cache only a fixed part is kept from them (the sets of a
few problems' groups); the rest yields to them (`cache_ceiling`; kjudged tells the worker of each
candidate it admits before the candidate starts), so the cache holds what they leave. Before, the cache's whole budget was kept
from them, and on a GRPO-shaped batch an H200 peaked at 86 of its 140 GiB while candidates waited
a median 20.5 s for device memory (bench/results/rlstep-20261202-h200-grpo-b64)."""

MIN_SHARE = 0.3  # an 80 GB H100 judged 6.4 GB sets with 16 slots at 0.3; 0.5 ran it out of memory
# a 6.4 GB set in use with as much again in transients and a headroom (job.Heavy.make_room), and
# the contexts beyond each candidate's own slack: sized so that an 80 GB H100 keeps MIN_SHARE
FIXED_RESERVE = 24 << 30
# the part of the cache that never yields: on an 80 GB H100 its whole budget (the share it was
# judged at stays), on a larger device what the cache holds beyond it goes to the candidates first
CACHE_KEPT = 16 << 30


def candidate_capacity(total, cache_budget, prepare_budget):
    """Bytes the running candidates may hold together on a device of `total` bytes (0 off a GPU:
    no admission), beside a worker that caches up to `cache_budget` and prepares within
    `prepare_budget`."""
    if not total:
        return 0
    kept = min(cache_budget, CACHE_KEPT)
    return int(max(MIN_SHARE * total, total - kept - prepare_budget - FIXED_RESERVE))


def cache_ceiling(total, cache_budget, prepare_budget, admitted_bytes):
    """Bytes the worker's cache may hold while candidates admitted with `admitted_bytes` together
    run (None off a GPU: no ceiling)."""
    if not total:
        return None
    left = int(total - prepare_budget - FIXED_RESERVE - admitted_bytes)
    return max(min(cache_budget, CACHE_KEPT), left)
