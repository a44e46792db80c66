#!/usr/bin/env bash
# poll.sh SECONDS: waits, then copies every result so far into $OUT and prints the state
sleep "${1:-0}"
OUT=$OUT bench/fidelity/run status | tail -n 8
echo "alone: $(grep -c "alone rep" /tmp/kjfid/run.log)  loaded: $(grep -c "fillers [0-9]" /tmp/kjfid/run.log)"
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
