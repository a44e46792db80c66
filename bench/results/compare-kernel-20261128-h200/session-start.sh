#!/usr/bin/env bash
# Session 41b (one H200): the comparator kernel: (1) compare_cost.py (agreement of its two paths, cost);
# (2) a few corpus candidates through kjudged (the kernel in the sandboxed worker), warm + alone strict.
set -u
cd /tmp/kjrepo
mkdir -p /tmp/kjcmp
PYTHONPATH=python timeout 400 python3 bench/timing_probe/compare_cost.py > /tmp/kjcmp/compare_cost.json 2>/tmp/kjcmp/err.txt
echo "compare_cost rc $?"
FRESH=1 PHASES=warm,alone WORKERS=16 bench/fidelity/run start --modes strict --repeats 1 --repeats-subset 1 \
  --only l1_19_relu/float4 l1_23_softmax/online l1_37_frobenius_norm/two_k l1_95_cross_entropy/block l1_14_upper_triangular_matmul/tiled_skip l1_93_masked_cumsum/block l2_12_gemm_multiply_leakyrelu/fused
