"""Holds every byte of one GPU's free memory until killed (bench/gpu_multi): stands in for a GPU
that can no longer serve a new context, so the canary after a fault fails for a real reason.
Usage: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=<nvidia-smi index> python3 hog.py"""
import time

import torch

held, chunk = [], 1 << 30
while chunk >= 1 << 20:
    try:
        held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        chunk //= 2
free, total = torch.cuda.mem_get_info()
print(f"hog: holding {sum(t.numel() for t in held) / 2**30:.1f} GiB of {total / 2**30:.1f} GiB; "
      f"{free / 2**20:.0f} MiB left free", flush=True)
time.sleep(3600)
