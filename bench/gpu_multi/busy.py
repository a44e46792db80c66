"""Per-GPU busyness in each window of a bench/gpu_multi run, from nvidia-smi samples.
Usage: busy.py SMI_CSV MARKS GPUS  (SMI_CSV: timestamp, index, utilization.gpu, memory.used MiB,
one row per GPU per 0.5 s sample; MARKS: '<name>_start|_end <epoch seconds>' lines; GPUS: index,
device minor, ... per GPU: rows are named by the minor, as kjudged names GPUs)"""
import collections
import sys
import time
from datetime import datetime


def samples(path, minor_of):
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            t = time.mktime(datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timetuple())
            t += float("0." + parts[0].rsplit(".", 1)[1])
            yield t, minor_of[int(parts[1])], float(parts[2]), float(parts[3])
        except ValueError:
            continue


def windows(path):
    marks = dict(line.split() for line in open(path) if line.strip())
    for key in marks:
        if key.endswith("_start") and key[:-6] + "_end" in marks:
            yield key[:-6], float(marks[key]), float(marks[key[:-6] + "_end"])


def main(smi, marks, gpus):
    minor_of = {int(f[0]): int(f[1]) for f in (line.split(",") for line in open(gpus) if line.strip())}
    rows = list(samples(smi, minor_of))
    print(f"{'window':<18} {'gpu':>4} {'seconds':>8} {'samples':>8} {'busy%':>7} {'mean util%':>11} {'max MiB':>9}")
    for name, t0, t1 in windows(marks):
        # the whole window, then from its first kernel on (a cold batch builds first)
        first = min((t for t, _, util, _ in rows if t0 <= t <= t1 and util > 0), default=t0)
        for label, start in ((name, t0), (name + "/kernels", first)):
            per = collections.defaultdict(list)
            for t, minor, util, mem in rows:
                if start <= t <= t1:
                    per[minor].append((util, mem))
            for minor in sorted(per):
                s = per[minor]
                busy = 100 * sum(u > 0 for u, _ in s) / len(s)
                mean = sum(u for u, _ in s) / len(s)
                print(f"{label:<18} {minor:>4} {t1 - start:>8.1f} {len(s):>8} {busy:>7.1f} {mean:>11.1f} "
                      f"{max(m for _, m in s):>9.0f}")
    print("busy%: share of samples with utilization.gpu > 0 (a kernel ran in the sample period); "
          "<window>/kernels: from the window's first kernel on")


if __name__ == "__main__":
    main(*sys.argv[1:4])
