#!/usr/bin/env bash
# Session 41 (one H200): issue 23's remaining figures under strict 5 on the repeat5 subset and l1_12:
# warm, alone (5 repeats of repeat5, 3 of l1_12), loaded (4 measured + 12 fillers from the whole corpus,
# noisy neighbours among them), kb on the same card; then compare_cost.py (the comparator at 6.7 GB).
# Start: rm -rf /tmp/kjrepo && cp -a . /tmp/kjrepo && (setsid nohup bash /tmp/kjrepo/.gpu_session/start.sh > /tmp/kjstart.log 2>&1 &)
set -u
cd /tmp/kjrepo
ONLY="l1_01_square_matmul/tiled_4x4 l1_12_diag_matmul/naive l1_14_upper_triangular_matmul/tiled_skip l1_19_relu/float4 l1_23_softmax/online l1_37_frobenius_norm/two_k l1_91_cumsum_reverse/thread l1_93_masked_cumsum/block l1_95_cross_entropy/block l2_12_gemm_multiply_leakyrelu/fused l2_76_gemm_add_relu/torch_matmul l3_43_mingpt_causal_attention/fused"
FRESH=1 PHASES=warm,alone,loaded WORKERS=16 bench/fidelity/run start --modes strict --repeats 3 --repeats-subset 5 \
  --loaded-at-once 4 --noise --concurrency 16 --only $ONLY
for _ in $(seq 1800); do [[ -f /tmp/kjfid/done ]] && break; sleep 1; done
echo "fidelity done: $(cat /tmp/kjfid/done)"
mkdir -p /tmp/kjcmp
PYTHONPATH=python timeout 300 python3 bench/timing_probe/compare_cost.py > /tmp/kjcmp/compare_cost.json 2>/tmp/kjcmp/err.txt
echo "compare_cost rc $?"
