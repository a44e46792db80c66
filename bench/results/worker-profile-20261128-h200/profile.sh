#!/usr/bin/env bash
# Session 44, lease 2 (one H200, ~8 min): where the trusted worker's CPU goes. On one GPU it runs at
# ~91 % of a core through the judging phase (3.3 CPU-s per job, rlstep 128 of 2026-11-28 17:56):
# py-spy (GIL holders only) on the judging phase's worker for 60 s of a 32-candidate RL step.
set -u
cd /tmp/kjrepo
python3 -m pip install -q --no-index --no-deps --target /tmp/pyspy .pyspy/*.whl
FRESH=1 N=32 PHASES=b B_GPUS=1 TIMEOUT_S=400 bench/rlstep/run start
mkdir -p /tmp/kjprof
for _ in $(seq 900); do [[ -f /tmp/kjrl/judge-b-g1.log ]] && break; sleep 1; done
echo "[$(date -u +%T)] judging phase"
w=""
for _ in $(seq 120); do w=$(pgrep -n -f "kjudge_worker /job cuda"); [[ -n $w ]] && break; sleep 1; done
echo "worker $w"; sleep 10
/tmp/pyspy/bin/py-spy record --pid "$w" --duration 60 --rate 100 --gil --format raw --output /tmp/kjprof/worker-gil.folded --nonblocking > /tmp/kjprof/pyspy.log 2>&1
/tmp/pyspy/bin/py-spy record --pid "$w" --duration 30 --rate 100 --format raw --output /tmp/kjprof/worker-all.folded --nonblocking >> /tmp/kjprof/pyspy.log 2>&1
echo "[$(date -u +%T)] profiles done"
