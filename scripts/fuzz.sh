#!/bin/bash
# Builds the libFuzzer harnesses (clang, ASan+UBSan) into ${FUZZ_BUILD_DIR:-build-fuzz} and runs each for
# FUZZ_SECONDS (default 60) from a generated seed corpus. Crashes land in $FUZZ_BUILD_DIR/artifacts/<harness>/.
# Needs clang and libFuzzer (Debian: clang libfuzzer-14-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
cmake -S tests/fuzz -B "$B" -G Ninja -DQGPU_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$B"
status=0
for h in fuzz_bitshuffle_host; do
  seeds="$B/seeds/$h" corpus="$B/corpus/$h" art="$B/artifacts/$h"
  mkdir -p "$seeds" "$corpus" "$art"
  "$B/fuzz_make_seeds" "$seeds"
  echo "== $h for ${SECONDS_EACH}s"
  if ! "$B/$h" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$art/" "$corpus" "$seeds"; then
    echo "$h: FOUND A FAILURE, see $art" >&2
    status=1
  fi
done
exit $status
