#!/bin/bash
# An A/B of two builds of libquantem_gpu.so on one device machine: the pack's library (A, scripts/device_pack.sh) and
# another build's (B), swapped in turn under the same command, so that a change is kept only where it measures faster
# on the same GPU and file.
#
# Pack B (build machine; BUILD_DIR: the other build, default build): its library and any test binaries named, into
# .devpack-ab (git-ignored; carry it beside .devpack):
#   bash scripts/device_ab.sh pack [TEST_NAME...]          e.g. test_resident
# Run (device machine, after the steps that write the file, e.g. `bash scripts/device_run.sh s512 scale4096basis`):
#   AB_ORDER="B A B A" bash scripts/device_ab.sh run [CMD...]
#   (default CMD: .devbin/bench_scale /tmp/qb/s4096.h5 --basis-only --no-ssb): each turn's log ab_<i>_<A|B>.log with
#   its load line and how many answers equal the CPU reference; then each packed test binary's GPU tests with B in
#   place; A is back in place at the end. Logs in /tmp/qb/logs, returned in $OUT/logs.tar.gz.
set -o pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  pack)
    shift
    BUILD_DIR=${BUILD_DIR:-build}
    stage=$(mktemp -d)
    cp "$BUILD_DIR"/libquantem_gpu.so "$stage"/
    for t in "$@"; do cp "$(find "$BUILD_DIR"/tests -name "$t" -type f -perm -u+x | head -1)" "$stage"/; done
    strip --strip-unneeded "$stage"/test_* 2>/dev/null || true
    rm -rf .devpack-ab && mkdir -p .devpack-ab
    tar cf - -C "$stage" . | xz -T0 -9 > .devpack-ab/ab.tar.xz
    rm -rf "$stage"
    ls -la .devpack-ab ;;
  run)
    shift
    source scripts/device_env.sh
    LOG=${QGPU_DEVICE_TMP:-/tmp/qb}/logs; AB=/tmp/ab; OUT=${OUT:-/tmp/qb/out}
    mkdir -p "$LOG" "$AB/B" "$OUT"
    tar xJf .devpack-ab/ab.tar.xz -C "$AB/B"
    cp .devbin/libquantem_gpu.so "$AB/A.so"
    save() { tar czf "$OUT/logs.tar.gz.part" -C "$(dirname "$LOG")" logs && mv "$OUT/logs.tar.gz.part" "$OUT/logs.tar.gz"; }
    [ $# -gt 0 ] || set -- .devbin/bench_scale /tmp/qb/s4096.h5 --basis-only --no-ssb
    i=0
    for v in ${AB_ORDER:-B A B A}; do
      i=$((i + 1)); f="$LOG/ab_${i}_$v.log"
      if [ "$v" = B ]; then cp "$AB/B/libquantem_gpu.so" .devbin/; else cp "$AB/A.so" .devbin/libquantem_gpu.so; fi
      timeout 300 "$@" >"$f" 2>&1
      echo "ab_${i}_$v rc=$? $(grep -E '^\| load' "$f" | cut -d'|' -f4 | tr '\n' ' ')equal to the CPU reference:" \
           "$(grep -c 'CPU reference | equal' "$f") of $(grep -c 'CPU reference |' "$f")"
      save
    done
    cp "$AB/B/libquantem_gpu.so" .devbin/
    for t in "$AB"/B/test_*; do
      [ -e "$t" ] || continue
      n=$(basename "$t"); timeout 200 "$t" --gtest_brief=1 --gtest_filter='*Cuda*:*Gpu*:*GPU*' >"$LOG/${n}_B.log" 2>&1
      echo "$n (B) rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/${n}_B.log" | tr '\n' ' ')"
      grep -E '^\[  FAILED|Failure' "$LOG/${n}_B.log" | head -8
    done
    cp "$AB/A.so" .devbin/libquantem_gpu.so; save ;;
  *) echo "usage: bash scripts/device_ab.sh pack [TEST_NAME...] | run [CMD...]" >&2; exit 2 ;;
esac
