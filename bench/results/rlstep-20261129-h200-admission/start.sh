#!/usr/bin/env bash
# this session's GPU run: gpu_engine --quick (stop 45's C++ on a GPU) beside rlstep b's build phase,
# then rlstep b's GPU phase twice against one build store: share 0.3 (before), the worker's (after)
cd /tmp/kjrepo || exit 1
echo "start $(date -u +%FT%T)"
scripts/device_install >/tmp/kjinstall.log 2>&1 || { echo "device_install failed"; tail /tmp/kjinstall.log; }
mkdir -p /tmp/ge
( echo "start $(date -u +%T)"; GPU_ENGINE_REPEAT=2 GPU_ENGINE_TIMEOUT=120 OUT=/tmp/ge bench/gpu_engine --quick; echo "rc $? end $(date -u +%T)" ) >/tmp/ge/gpu_engine.txt 2>&1 &
FRESH=1 N=64 PHASES=b B_GPUS="1:0.3 1" TIMEOUT_S=900 bench/rlstep/run start
