#!/usr/bin/env bash
# Session of 2026-11-27 (run 20): the fidelity run on 4 GPUs; the GPU cheat suite on the second
# GPU whose shard finishes (the first runs the timing probe).
set -u
R=$(pwd)
SHARDS=4 FRESH=1 PHASES=probe,warm,alone,loaded WORKERS=16 bench/fidelity/run start --repeats 2 --repeats-subset 3 \
  --noise --fill-settle-s 3 --concurrency 16 --loaded-at-once 4 --resume .fid_resume/results.jsonl --resume-phases kb
rm -rf /tmp/kjcheat && mkdir -p /tmp/kjcheat/out && cp -a "$R" /tmp/kjcheat/repo
setsid bash -c '
  log=/tmp/kjfid/run.log
  until [ "$(grep -c "kjudged [0-9] stopped" $log)" -ge 2 ]; do sleep 5; done
  g=$(grep -o "kjudged [0-9] stopped" $log | sed -n 2p | cut -d" " -f2)
  echo "cheat suite on GPU $g from $(date -u +%T)" >/tmp/kjcheat/run.log
  cd /tmp/kjcheat/repo && GPU=$g OUT=/tmp/kjcheat/out KB_CACHE=/tmp/kjcheat/cache bench/kernelbench/gpu_run --jobs 4 \
    --only activation_relu activation_sigmoid softmax_rows matmul_batched matmul_square >>/tmp/kjcheat/run.log 2>&1
  echo "rc $? at $(date -u +%T)" >/tmp/kjcheat/done' </dev/null >/dev/null 2>&1 &
echo started
