#!/usr/bin/env bash
# 2026-11-26 GPU session 3: the memory guard (nvcc_steps.MemoryGuard) under kjudge eval's real sandbox.
W=$1; cd "$W/repo"; export PYTHONUNBUFFERED=1; o=$W/out
OUT=$o bench/kernelbench/cuda_feedback > $o/cuda_feedback.log 2>&1; echo "cuda_feedback $?" >> $o/progress
mkdir -p $o/suite; KJUDGE_BIN=.device/bin OUT=$o/suite bench/kernelbench/gpu_run --jobs 8 --only elementwise_add elementwise_mul_add elementwise_scale_bias activation_gelu activation_hardtanh activation_leaky_relu activation_silu activation_tanh > $o/suite.log 2>&1; echo "suite $?" >> $o/progress
echo done > $o/done
