#!/usr/bin/env bash
# Session 43 plan (one H200 or H100; needs the bundle of 47d58ae or later: scripts/device_bundle):
# the compat run of 2026-11-28 13:12 again (bench/results/compat-deadlock-20261128-h200): the 25
# candidates KernelBench never evaluated, compat warm + alone, then KernelBench's evaluator on the
# same card. Look at: a stall (smi.csv flat at 0 % while jobs are in flight), job.retry, INVALID_JOB
# "own budget", oracle.waited_for_others, "lock while holding" (LockOrderError) in kjudged.log;
# then compat vs KB for the 16 not yet compared (the 9 compared are seeded from that run's rows, so
# the kb phase skips them). ~20-25 min on one GPU.
# Start: rm -rf /tmp/kjrepo && cp -a . /tmp/kjrepo && (setsid nohup bash /tmp/kjrepo/.gpu_session/start.sh > /tmp/kjstart.log 2>&1 &)
set -u
cd /tmp/kjrepo
mkdir -p /tmp/kjcmp
rm -rf /tmp/kjfid && mkdir -p /tmp/kjfid/out && chmod 711 /tmp/kjfid
grep '"phase": "kb"' bench/results/compat-deadlock-20261128-h200/results.jsonl > /tmp/kjfid/out/results.jsonl
PHASES=warm,alone,kb WORKERS=16 bench/fidelity/run start --modes compat --repeats 1 --repeats-subset 1 \
  --only l1_49_max_reduction/thread_per_output.py l1_89_cumsum/thread_per_row.py l1_91_cumsum_reverse/block_scan.py l1_91_cumsum_reverse/thread_per_row.py l1_93_masked_cumsum/block_scan.py l1_93_masked_cumsum/thread_per_row.py l1_94_mse_loss/grid_stride_reduce.py l1_96_huber_loss/grid_stride_reduce.py l1_98_kl_div/fused_batchmean.py l1_99_triplet_margin/block_per_row.py l2_01_conv2d_relu_biasadd/cudnn_conv_fused_relu_bias.py l2_09_matmul_subtract_multiply_relu/fused_sgemm.py l2_12_gemm_multiply_leakyrelu/fused_sgemm.py l2_40_matmul_scaling_residual_add/linear_fused_scale_residual.py l2_57_conv2d_relu_hardswish/cudnn_conv_fused_relu_hardswish.py l2_59_matmul_swish_scaling/linear_fused_swish.py l2_63_gemm_relu_divide/naive_fused.py l2_70_gemm_sigmoid_scaling_residual_add/linear_fused_sigmoid_residual.py l2_71_conv2d_divide_leakyrelu/naive_direct_conv.py l2_76_gemm_add_relu/torch_matmul_fused_bias_relu.py l2_86_matmul_divide_gelu/addmm_fused_div_gelu.py l3_01_mlp/matmul_fused_bias_relu.py l3_02_shallow_wide_mlp/fused_sgemm_mlp.py l3_03_deep_narrow_mlp/linear_inplace_relu.py l3_43_mingpt_causal_attention/fused_causal_softmax.py
