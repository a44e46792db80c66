"""Sums the py-spy samples of a trusted worker (bench/rlstep/run PROFILE=1): how much of the time
some thread held the GIL, and where the samples fall, self and inclusive.

Usage: python3 bench/rlstep/worker_profile.py out/pyspy-g1.txt [--rate 20] [--top 15]
(its `-gil` twin, the samples of threads holding the GIL, is read beside it when present)."""
import argparse
import collections
import os


def read_collapsed(path):
    """[(frames outermost first, count)] of py-spy's raw (collapsed) format: `a;b;c N` per line."""
    stacks = []
    with open(path) as f:
        for line in f:
            head, _, count = line.rstrip("\n").rpartition(" ")
            if head and count.isdigit():
                stacks.append((head.split(";"), int(count)))
    return stacks


def frame_name(frame):
    """`func (file.py:line)` without the line: one name per function."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.split(':')[0].rsplit('/', 1)[-1]}" + ")" if where else name


def tally(stacks):
    """(self counts, inclusive counts, total) by function; thread frames (--threads) dropped."""
    own, incl, total = collections.Counter(), collections.Counter(), 0
    for frames, n in stacks:
        names = [frame_name(f) for f in frames if not f.startswith("thread (")]
        total += n
        if names:
            own[names[-1]] += n
        for name in set(names):
            incl[name] += n
    return own, incl, total


def report(path, rate, top):
    own, incl, total = tally(read_collapsed(path))
    # without native frames py-spy sees a thread blocked in a socket or a condition as not idle:
    # these samples are where the threads were, waits included, not where they worked
    lines = [f"{path}: {total} samples of threads py-spy did not see idle"]
    gil_path = path[:-4] + "-gil.txt"
    if os.path.exists(gil_path):
        _, gil_incl, gil_total = tally(read_collapsed(gil_path))
        lines.append(f"  GIL held in {gil_total} samples = {gil_total / rate:.1f} s at {rate}/s")
        lines += [f"    {n:6d}  {name}" for name, n in gil_incl.most_common(top)]
    lines.append("  self (all threads):")
    lines += [f"    {n:6d}  {name}" for name, n in own.most_common(top)]
    lines.append("  inclusive (all threads):")
    lines += [f"    {n:6d}  {name}" for name, n in incl.most_common(top)]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--rate", type=int, default=20)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    print(report(a.path, a.rate, a.top))


if __name__ == "__main__":
    main()
