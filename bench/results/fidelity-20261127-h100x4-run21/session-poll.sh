#!/usr/bin/env bash
# poll.sh SECONDS: waits, then copies every result so far into $OUT and prints the state
sleep "${1:-0}"
OUT=$OUT bench/fidelity/run status | tail -n 14
mkdir -p "$OUT/cheat" && cp -r /tmp/kjcheat/out/. "$OUT/cheat/" 2>/dev/null; cp /tmp/kjcheat/run.log "$OUT/cheat/" 2>/dev/null
[ -f /tmp/kjcheat/run.log ] && { echo "-- cheat:"; tail -n 6 /tmp/kjcheat/run.log; cat /tmp/kjcheat/done 2>/dev/null; }
[ -d /tmp/kjrl ] && { OUT=$OUT/rl bench/rlstep/run status | tail -n 8; }
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
