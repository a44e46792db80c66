#!/usr/bin/env bash
# poll.sh SECONDS: waits, then copies every result so far into $OUT and prints the state
sleep "${1:-0}"
OUT=$OUT bench/fidelity/run status | tail -n 6
grep -c "alone rep" /tmp/kjfid/run.log
timeout 5 find /sys/fs/cgroup -maxdepth 7 -name 'kjsbx-*' 2>/dev/null | head -40 | while read -r c; do echo "$(cat $c/cpu.weight 2>/dev/null)"; done | sort | uniq -c
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
