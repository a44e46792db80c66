#!/usr/bin/env bash
# poll.sh SECONDS: waits, copies every result so far into $OUT, prints the state
sleep "${1:-0}"
mkdir -p "$OUT/fid" "$OUT/cmp"
OUT=$OUT/fid bash /tmp/kjrepo/bench/fidelity/run status | tail -n 4
cp /tmp/kjcmp/* "$OUT/cmp/" 2>/dev/null
cat /tmp/kjstart.log
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
