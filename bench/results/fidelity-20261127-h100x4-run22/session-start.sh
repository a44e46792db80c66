#!/usr/bin/env bash
# Session of 2026-11-27 (run 22): the device's loop shift in the interval, live; strict only, 4 shards.
set -u
SHARDS=4 FRESH=1 PHASES=warm,alone WORKERS=16 bench/fidelity/run start --modes strict --repeats 2 --repeats-subset 2 \
  --concurrency 16 --resume .fid_resume/results.jsonl --resume-phases kb
echo started
