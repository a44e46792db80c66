"""How much of the device the node's candidates may hold together: kjudged admits each candidate
by the worker's estimate of its job beside the others running (src/pipeline/worker/device_budget.h), within
this capacity. It is what the worker does not keep for itself. The worker's parts are shares of the
device (its cache, its jobs' preparations) and a fixed part that does not grow with the device (the
one large set in use with its transients, the contexts), so a larger device gives candidates a
larger share: a flat 30 % left an H200 at most 93 of its 140 GiB in use while 16 slots queued for
admission (bench/results/rlstep-20261128-h200x4-n128-g1: device-memory wait, median 41 s a job)."""

MIN_SHARE = 0.3  # an 80 GB H100 judged 6.4 GB sets with 16 slots at 0.3; 0.5 ran it out of memory
# a 6.4 GB set in use with as much again in transients and a headroom (job.Heavy.make_room), and
# the contexts beyond each candidate's own slack: sized so that an 80 GB H100 keeps MIN_SHARE
FIXED_RESERVE = 24 << 30


def candidate_capacity(total, cache_budget, prepare_budget):
    """Bytes the running candidates may hold together on a device of `total` bytes (0 off a GPU:
    no admission), beside a worker that caches up to `cache_budget` and prepares within
    `prepare_budget`."""
    if not total:
        return 0
    return int(max(MIN_SHARE * total, total - cache_budget - prepare_budget - FIXED_RESERVE))


def worker_kept_bytes(total, cache_budget, prepare_budget):
    """What torch may keep cached for the worker between its uses of the device (job.Heavy.give_back):
    what the candidates' capacity leaves beside the fixed reserve (the contexts, the large set in
    use), which is its cache's and its preparations' parts unless MIN_SHARE gave candidates more."""
    if not total:
        return 0
    return int(max(0, total - candidate_capacity(total, cache_budget, prepare_budget) - FIXED_RESERVE))
