"""Takes every byte of one GPU's free memory and keeps taking what is freed until killed
(bench/gpu_multi): stands in for a GPU that can no longer serve a new context. Memory a faulted
job gives back is taken again within about a millisecond, before the canary after that job starts.
Usage: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=<nvidia-smi index> python3 hog.py"""
import time

import torch

MIN_CHUNK = 2 << 20
held = []


def grab():
    """Allocates what it can; True if it got anything (the driver may report a little free memory
    that no allocation can have)."""
    before, chunk = len(held), 1 << 30
    while chunk >= MIN_CHUNK:
        try:
            held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            chunk //= 2
    return len(held) > before


grab()
free, total = torch.cuda.mem_get_info()
print(f"hog: holding {sum(t.numel() for t in held) / 2**30:.1f} GiB of {total / 2**30:.1f} GiB; "
      f"{free / 2**20:.0f} MiB left free", flush=True)
retakes = 0
while True:
    if torch.cuda.mem_get_info()[0] >= MIN_CHUNK and grab():
        retakes += 1
        if retakes <= 3 or retakes % 1000 == 0:
            print(f"hog: took freed memory ({retakes} times), holding "
                  f"{sum(t.numel() for t in held) / 2**30:.1f} GiB", flush=True)
    time.sleep(0.0005)
