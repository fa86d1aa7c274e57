#!/bin/bash
# The whole test suite: install, build, then every C++ (GoogleTest) and Python (pytest) test through ctest,
# then the browser end-to-end tests (viewer, local-file WebGPU page) when they exist, then the fuzz harnesses
# (scripts/fuzz.sh: seed replay and FUZZ_SECONDS, default 60, of fuzzing each) when clang and libFuzzer are installed. CUDA tests skip with a
# message where no GPU is usable.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# A failed test is run once more (--repeat until-pass:2): cli.pytest failed once in three full runs on the 2-core
# machine (2026-12-04) and passed alone and under load; a real failure fails both runs.
# The tests choose their backends themselves: a QGPU_BACKEND set for everyday use (README) must not change them.
(cd "$BUILD_DIR" && env -u QGPU_BACKEND ctest -j"$(nproc)" --output-on-failure --timeout 600 --repeat until-pass:2)
if [ -x tests/remote/e2e/run.sh ]; then
  bash tests/remote/e2e/run.sh
fi
if command -v clang++ >/dev/null && compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  # fuzz_inspect replays its seeds only here: fuzzing it can reach crashes inside HDF5 1.10 itself
  # (tests/fuzz/known_hdf5_crashes/, docs/reliability.md); longer campaigns run it by hand.
  FUZZ_SECONDS_fuzz_inspect=${FUZZ_SECONDS_fuzz_inspect:-0} bash scripts/fuzz.sh
else
  echo "fuzz harnesses skipped: clang and libFuzzer not installed (scripts/install-deps.sh installs them)"
fi
