#!/bin/bash
# Benchmarks on the device machine (see docs/benchmarks.md): carried binaries in .devbin, libraries in .devlib.
set -o pipefail
source scripts/device_env.sh
mkdir -p /tmp/qb
OUT=${OUT:-/tmp/qb/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader | tee $OUT/gpu.txt
.devbin/bench_load /tmp/qb/s64.h5 64 192 uint16 2>&1 | tee $OUT/bench_load_small.log
.devbin/bench_load /tmp/qb/s512.h5 512 192 uint16 2>&1 | tee $OUT/bench_load.log
.devbin/bench_detector /tmp/qb/s512.h5 2>&1 | tee $OUT/bench_detector.log
