#!/usr/bin/env bash
# Session 44 (one nvidia-h200-x4 lease, ~25 min):
# part 1 (~4 min, GPU 0): compat now casts every input as KernelBench does (470c378): the level1/93
#   candidates (bool mask) and level1/95 (int64 targets) in compat, alone, beside KernelBench's rows of
#   bench/results/compat-verify-20261128-h200 (seeded: the kb phase skips them). Expected: l1_93
#   compat not OK (as KernelBench), l1_95 INVALID_JOB (its reference fails on the cast).
# part 2 (~18 min): issue 24's 128-candidate RL step, builds supplied, 1 GPU then 4 GPUs.
# Start: rm -rf /tmp/kjrepo && cp -a . /tmp/kjrepo && (setsid nohup bash /tmp/kjrepo/.gpu_session/start.sh > /tmp/kjstart.log 2>&1 &)
set -u
cd /tmp/kjrepo
mkdir -p /tmp/kjcmp
rm -rf /tmp/kjfid && mkdir -p /tmp/kjfid/out && chmod 711 /tmp/kjfid
grep '"phase": "kb"' bench/results/compat-verify-20261128-h200/results.jsonl > /tmp/kjfid/out/results.jsonl
echo "[$(date -u +%T)] part 1"
PHASES=alone,kb WORKERS=16 bench/fidelity/run start --modes compat --repeats 1 --repeats-subset 1 \
  --only l1_93_masked_cumsum/block_scan.py l1_93_masked_cumsum/thread_per_row.py l1_95_cross_entropy/block_per_row.py
for _ in $(seq 600); do [[ -f /tmp/kjfid/done ]] && break; sleep 1; done
echo "[$(date -u +%T)] part 1 done: $(cat /tmp/kjfid/done 2>/dev/null)"
FRESH=1 N=128 PHASES=b B_GPUS="1 4" TIMEOUT_S=900 bench/rlstep/run start
echo "[$(date -u +%T)] part 2 started"
