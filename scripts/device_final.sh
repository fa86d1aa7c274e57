#!/bin/bash
# One device call: every test binary (CUDA tests included), then the SSB and service benchmarks.
set -o pipefail
source scripts/device_env.sh
OUT=${OUT:-/tmp/qb/out}; mkdir -p $OUT /tmp/qb
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for t in .devbin/test_*; do
  n=$(basename $t)
  timeout 200 $t --gtest_brief=1 > $OUT/$n.log 2>&1; echo "$n rc=$? $(grep -E 'PASSED|FAILED' $OUT/$n.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|rror" $OUT/$n.log | head -20
done
timeout 200 .devbin/bench_ssb /tmp/qb/s512.h5 2>&1 | tee $OUT/bench_ssb.log
[ -x .devbin/qgpu ] && timeout 120 python3 bench/bench_serve.py .devbin/qgpu /tmp/qb/s512.h5 2>&1 | tee $OUT/bench_serve.log
