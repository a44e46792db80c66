"""python3 -m kjudge_worker <root> <cuda|cpu> [lock file] [cache fraction] [idle seconds] [rehearsal GiB]

The trusted worker kjudged keeps per GPU and tenant (its own sandbox, the GPU's device profile):
torch imported and CUDA initialised once, references and input sets cached on the device.
`root` is its directory (/job in the sandbox): the control socket, the references kjudged puts
there, the jobs' channel sockets and clock sockets. `rehearsal GiB` (cpu only, default 0): admit
candidates by device memory as if the device had that much (kernelbench.cpu_rehearsal_device_gib)."""
import os
import sys

# Before torch's allocator starts: the worker's sets come and go in many sizes (KBs to 7 GiB), and
# with fixed segments the freed ones stayed reserved in pieces no large set fits (an H100 under
# 16 jobs, fidelity run 19: 5-17 GiB "reserved but unallocated" beside failed output checks).
# Expandable segments give whole freed ranges back.
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

from .server import Worker  # noqa: E402 -- after the allocator's setting


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, kind = argv[1], argv[2]
    lock = argv[3] if len(argv) > 3 else ""
    fraction = float(argv[4]) if len(argv) > 4 else 0.3
    idle = float(argv[5]) if len(argv) > 5 else 600.0
    rehearsal = int(float(argv[6]) * (1 << 30)) if len(argv) > 6 else 0
    return Worker(root, kind, lock, fraction, idle, rehearsal).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
