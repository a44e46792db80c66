#!/usr/bin/env bash
# 2026-11-26 GPU session 2: nvcc_steps A/B build benchmarks, cuda_feedback, the GPU suite.
W=$1; cd "$W/repo"; export PYTHONUNBUFFERED=1 KJ_BENCH_PYTHON=$(command -v python3)
o=$W/out
B="bench/build_bench/run --preimported"
T="--tasks elementwise_add elementwise_mul_add elementwise_scale_bias activation_gelu activation_hardtanh activation_leaky_relu activation_silu activation_tanh --only cuda_ok"
$B --only kb_style --kb-style 8 --jobs 8 --pch-variants O0 --peer > $o/bb-kb8-halves.txt 2>&1; echo "kb8-halves $?" >> $o/progress
$B --only kb_style --kb-style 8 --jobs 8 --pch-variants O0 --serial-nvcc > $o/bb-kb8-serial.txt 2>&1; echo "kb8-serial $?" >> $o/progress
$B --only kb_style --kb-style 2 --jobs 1 --pch-variants O0 > $o/bb-kb-alone-halves.txt 2>&1; echo "kb-alone $?" >> $o/progress
$B $T --jobs 8 --pch-variants O2 > $o/bb-tests8-halves.txt 2>&1; echo "tests8-halves $?" >> $o/progress
OUT=$o bench/kernelbench/cuda_feedback > $o/cuda_feedback.log 2>&1; echo "cuda_feedback $?" >> $o/progress
mkdir -p $o/suite; KJUDGE_BIN=.device/bin OUT=$o/suite bench/kernelbench/gpu_run --jobs 6 > $o/suite.log 2>&1; echo "suite $?" >> $o/progress
echo done > $o/done
# session 1 (m1-*), before nvcc_steps existed, ran from the device call itself:
#   bench/build_bench/run --only kb_style --kb-style 8 --jobs 8 --preimported --peer --pch-variants O0 O2
#   bench/build_bench/run --tasks <the 8 tasks above> --only cuda_ok --jobs 8 --preimported --peer --pch-variants O0 O2
