#!/usr/bin/env bash
# Session of 2026-11-28 (run 23): issue 23's last targets: 5 repeats alone on the repeat5 subset and
# the loaded phase (4 measured at once, 12 fillers with the noisy neighbours) under strict, 4 shards.
set -u
SHARDS=4 FRESH=1 PHASES=warm,alone,loaded WORKERS=16 bench/fidelity/run start --modes strict --repeats 1 --repeats-subset 5 \
  --loaded-at-once 4 --noise --concurrency 16 --resume .fid_resume/results.jsonl --resume-phases kb
echo started
