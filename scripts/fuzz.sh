#!/bin/bash
# Builds the fuzz harnesses of tests/fuzz with clang (libFuzzer, ASan+UBSan; only the sources they need, no CUDA)
# into ${FUZZ_BUILD_DIR:-build-fuzz}, then for each harness: writes its seed corpus, replays it, and fuzzes for
# FUZZ_SECONDS (default 60) from the seeds and the corpus kept in $FUZZ_BUILD_DIR/corpus/<harness>. Inputs
# that once failed live in tests/fuzz/regressions/<harness>/ and are replayed as seeds.
# Prints one summary line per harness; exits non-zero when any input crashes, hangs (10 s), runs out of memory
# or leaks, naming the reproducer (run the harness binary on it to reproduce).
# Needs clang and libFuzzer (Debian: clang libfuzzer-14-dev libclang-rt-14-dev; scripts/install-deps.sh).
# FUZZ_HARNESSES="fuzz_inspect" runs a subset; FUZZ_SECONDS_<harness> overrides the time of one harness
# (0 = replay its seeds only).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
B=${FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
HARNESSES=${FUZZ_HARNESSES:-"fuzz_bitshuffle_host fuzz_chunk_index fuzz_inspect fuzz_npy_header fuzz_merlin_header fuzz_empad_xml fuzz_live_stream fuzz_dm_tags fuzz_mrc fuzz_csr_toml"}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S tests/fuzz -B "$B" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
ninja -C "$B" >"$B/build.log" 2>&1 || { cat "$B/build.log" >&2; echo "fuzz build failed" >&2; exit 1; }
# HDF5 itself leaks on some error paths of malformed files (see the file); our own leaks stay reported.
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan_hdf5.supp:print_suppressions=0"
# HDF5 (C, malloc) asks for absurd sizes read from damaged metadata; a real malloc returns NULL and HDF5 fails with
# an error, ASan would report allocation-size-too-big instead. C++ new (ours) still reports.
export ASAN_OPTIONS="allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

seed_writer() {
  case $1 in
    fuzz_bitshuffle_host) echo fuzz_make_codec_seeds ;;
    fuzz_chunk_index) echo fuzz_make_index_seeds ;;
    fuzz_inspect) echo fuzz_make_inspect_seeds ;;
    fuzz_npy_header) echo fuzz_make_npy_seeds ;;
    fuzz_merlin_header) echo fuzz_make_merlin_seeds ;;
    fuzz_empad_xml) echo fuzz_make_empad_seeds ;;
    fuzz_live_stream) echo fuzz_make_live_seeds ;;
    fuzz_dm_tags) echo fuzz_make_dm_seeds ;;
    fuzz_mrc) echo fuzz_make_mrc_seeds ;;
    fuzz_csr_toml) echo fuzz_make_csr_seeds ;;
    *) echo "unknown harness $1" >&2; exit 2 ;;
  esac
}

stat_of() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }

status=0
summary=()
for h in $HARNESSES; do
  seeds="$B/seeds/$h" corpus="$B/corpus/$h" art="$B/artifacts/$h" log="$B/logs/$h.log"
  rm -rf "$seeds" "$art"
  mkdir -p "$seeds" "$corpus" "$art" "$B/logs"
  extra=(); [ "$h" = fuzz_mrc ] && extra=("$root/../shared/data/mrc")  # the mrc seeds add the real DE files
  "$B/$(seed_writer "$h")" "$seeds" "${extra[@]}" >/dev/null
  result=ok
  # Inputs that once failed (tests/fuzz/regressions/<harness>/, committed with their fix) count as seeds.
  if [ -d "tests/fuzz/regressions/$h" ]; then cp tests/fuzz/regressions/"$h"/* "$seeds"/; fi
  nseeds=$(find "$seeds" -type f | wc -l)
  # 1. Replay: every seed once (a libFuzzer binary given files runs each and exits non-zero on a failure).
  if ! "$B/$h" -artifact_prefix="$art/" "$seeds"/* >"$log" 2>&1; then result="FAILED on a seed"; fi
  # 2. Fuzz for a bounded time from the seeds and the kept corpus.
  secs_var="FUZZ_SECONDS_$h"
  secs=${!secs_var:-$SECONDS_EACH}
  if [ "$secs" = 0 ]; then
    :  # replay only
  elif [ "$result" = ok ] && ! "$B/$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$art/" "$corpus" "$seeds" >>"$log" 2>&1; then
    result=FAILED
  fi
  execs=$(stat_of number_of_executed_units "$log"); execs=${execs:-?}
  rate=$(stat_of average_exec_per_sec "$log"); rate=${rate:-?}
  crashes=$(find "$art" -type f | wc -l)
  ncorpus=$(find "$corpus" -type f | wc -l)
  line=$(printf '%-22s %4ss  seeds %3d replayed  executions %9s (%s/s)  corpus %5d  crashes %d  %s' \
         "$h" "$secs" "$nseeds" "$execs" "$rate" "$ncorpus" "$crashes" "$result")
  summary+=("$line")
  if [ "$result" != ok ] || [ "$crashes" -ne 0 ]; then
    status=1
    echo "== $h FAILED; last lines of $log:" >&2
    tail -40 "$log" >&2
    for a in "$art"/*; do
      [ -e "$a" ] && echo "reproducer: $a   (reproduce: $B/$h $a)" >&2
    done
  fi
done
echo "== fuzz summary (FUZZ_SECONDS=$SECONDS_EACH, logs in $B/logs)"
for l in "${summary[@]}"; do echo "fuzz: $l"; done
exit $status
