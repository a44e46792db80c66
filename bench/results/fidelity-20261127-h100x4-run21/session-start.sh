#!/usr/bin/env bash
# Session of 2026-11-27 (run 21): strict 4 and the widened interval, alone, on GPUs 0-2 (3 shards);
# the GPU cheat suite on GPU 3 from the start; the timing probe on the first shard's GPU done.
set -u
R=$(pwd)
SHARDS=3 FRESH=1 PHASES=probe,warm,alone WORKERS=16 bench/fidelity/run start --repeats 2 --repeats-subset 3 \
  --noise --concurrency 16 --resume .fid_resume/results.jsonl --resume-phases kb
rm -rf /tmp/kjcheat && mkdir -p /tmp/kjcheat/out && cp -a "$R" /tmp/kjcheat/repo
setsid bash -c '
  echo "cheat suite on GPU 3 from $(date -u +%T)" >/tmp/kjcheat/run.log
  cd /tmp/kjcheat/repo && GPU=3 OUT=/tmp/kjcheat/out KB_CACHE=/tmp/kjcheat/cache bench/kernelbench/gpu_run --jobs 4 \
    --only activation_relu activation_sigmoid softmax_rows matmul_batched matmul_square >>/tmp/kjcheat/run.log 2>&1
  echo "rc $? at $(date -u +%T)" >/tmp/kjcheat/done' </dev/null >/dev/null 2>&1 &
echo started
