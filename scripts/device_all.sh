#!/bin/bash
# One device call: every test binary (CUDA tests included), then the benchmarks of docs/benchmarks.md.
set -o pipefail
source scripts/device_env.sh
if ! ldconfig -p | grep -q libcufft.so.12 && [ ! -e /usr/local/cuda/lib64/libcufft.so.12 ]; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname $(find / -name 'libcufft.so.12' 2>/dev/null | head -1))
fi
OUT=${OUT:-/tmp/qb/out}; mkdir -p $OUT /tmp/qb
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for t in test_device test_io test_detector test_dpc test_display; do
  timeout 150 .devbin/$t --gtest_brief=1 > $OUT/$t.log 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' $OUT/$t.log | tr '\n' ' ')"
  grep -E "FAILED|Failure|error" $OUT/$t.log | head -20
done
timeout 200 .devbin/bench_load /tmp/qb/s512.h5 512 192 uint16 2>&1 | tee $OUT/bench_load.log
timeout 120 .devbin/bench_detector /tmp/qb/s512.h5 2>&1 | tee $OUT/bench_detector.log
