#!/usr/bin/env bash
# rlstep b twice, each from a cold build store (a resubmitted batch rebuilt on the GPU node: not
# understood yet): the candidates' share of device memory 0.3 (before), then the worker's (after)
cd /tmp/kjrepo || exit 1
mkdir -p /tmp/kjres
fresh=1
for s in 1:0.3 1; do
  echo "[$(date -u +%T)] run B_GPUS=$s"
  FRESH=$fresh N=${N:-32} PHASES=b B_GPUS="$s" TIMEOUT_S=600 bench/rlstep/run start
  until [[ -f /tmp/kjrl/done ]]; do sleep 2; done
  d=/tmp/kjres/${s/:/-}; mkdir -p "$d"
  (cd /tmp/kjrl && tar czf "$d/kjrl.tgz" out/*.jsonl out/*.json out/smi.csv out/cpu.txt out/top.txt out/table.md ./*.log ./*.toml 2>/dev/null)
  cp /tmp/kjrl/out/table.md /tmp/kjrl/run.log "$d/" 2>/dev/null
  fresh=0  # the second keeps the warm-up's header and appends its rows: one table of both
  echo "[$(date -u +%T)] done $s: $(cat /tmp/kjrl/done)"
done
echo ALLDONE
