#!/usr/bin/env bash
# 2026-11-26 GPU session 4: build bench A/B on one machine: nvcc halves vs nvcc serial vs KernelBench's load_inline.
W=$1; cd "$W/repo"; export PYTHONUNBUFFERED=1 KJ_BENCH_PYTHON=$(command -v python3); o=$W/out
B="bench/build_bench/run --preimported"
T="--tasks elementwise_add elementwise_mul_add elementwise_scale_bias activation_gelu activation_hardtanh activation_leaky_relu activation_silu activation_tanh --only cuda_ok"
$B --only kb_style --kb-style 8 --jobs 8 --pch-variants O0 --peer > $o/bb-kb8-halves.txt 2>&1; echo "kb8-halves $?" >> $o/progress
$B --only kb_style --kb-style 8 --jobs 8 --pch-variants O0 --serial-nvcc > $o/bb-kb8-serial.txt 2>&1; echo "kb8-serial $?" >> $o/progress
$B $T --jobs 8 --pch-variants O2 > $o/bb-tests8-halves.txt 2>&1; echo "tests8-halves $?" >> $o/progress
$B $T --jobs 8 --pch-variants O2 --serial-nvcc > $o/bb-tests8-serial.txt 2>&1; echo "tests8-serial $?" >> $o/progress
echo done > $o/done
