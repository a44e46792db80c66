"""Median and max seconds per pipeline stage of a bench/gpu_multi run's jobs, per batch prefix.
Usage: stages.py RESULTS_DIR [PREFIX...]  (RESULTS_DIR: the run's results/ with <id>.json per job)"""
import glob
import json
import statistics
import sys


def main(results, prefixes):
    for prefix in prefixes:
        files = sorted(glob.glob(f"{results}/{prefix}-*.json"))
        stages = {}
        for f in files:
            for s in json.load(open(f)).get("stages", []):
                stages.setdefault(s["stage"].replace("STAGE_", "").lower(), []).append(s.get("seconds", 0.0))
        cols = "  ".join(f"{k} {statistics.median(v):.2f}/{max(v):.2f}" for k, v in stages.items() if max(v) >= 0.005)
        print(f"{prefix}: {len(files)} jobs, seconds median/max: {cols}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["b1", "b2", "b3", "b4"])
