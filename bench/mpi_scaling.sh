#!/bin/bash
# Strong scaling of the MPI scan split (issue 13): load + BF + CoM of one file with 1, 2, 4, 8 ranks, one GPU each
# (each rank's device = its local rank mod the device count), every rank reading its slab of the same file.
# One markdown table row per rank count: wall = the whole mpirun (MPI start, slab loads, products, gathers at
# rank 0, outputs); load = the slowest rank's slab load; products = BF + CoM on the slabs, gathers and outputs at
# rank 0 (qgpu's "mpi:" line). Speed-up is against the first rank count's wall time.
#
# usage: bench/mpi_scaling.sh [FILE] [SCAN] [DET]
#   FILE  default /tmp/qb/s2048.h5, written with `qgpu sample` when missing (SCAN x SCAN x DET x DET uint16,
#         default 2048 and 192: 309 GB decoded, ~9 GB on disk; the sample is simulated on every core: minutes)
#   env   RANKS="1 2 4 8"  BACKEND=cuda  REPRESENTATION=auto (auto: encoded where a slab does not fit one GPU dense)
#         REPEAT=2 (best of)  QGPU=build/qgpu  MPIRUN=mpirun  READ_THREADS (default: cores / ranks)
#         SHARE_GPU=1: more ranks than GPUs share them (the one lent GPU: issue 33)
# Every product file (.npy) of each rank count must be byte-identical to the first rank count's: a difference is
# printed as DIFFERS and the script exits 1 at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=${1:-/tmp/qb/s2048.h5}
SCAN=${2:-2048}
DET=${3:-192}
QGPU=${QGPU:-build/qgpu}
MPIRUN=${MPIRUN:-mpirun}
RANKS=${RANKS:-"1 2 4 8"}
BACKEND=${BACKEND:-cuda}
REPRESENTATION=${REPRESENTATION:-auto}
REPEAT=${REPEAT:-2}
command -v "$MPIRUN" >/dev/null || { echo "mpi_scaling: $MPIRUN not found (apt-get install openmpi-bin)" >&2; exit 1; }
root=(); [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
gpus=$(nvidia-smi -L 2>/dev/null | wc -l || true)
echo "# mpi_scaling: $FILE, backend $BACKEND, representation $REPRESENTATION, $gpus GPUs, $(nproc) cores, $(date -u +%FT%TZ)"
if [ ! -f "$FILE" ]; then
  mkdir -p "$(dirname "$FILE")"
  echo "# writing $FILE (${SCAN}x${SCAN}x${DET}x${DET})"
  /usr/bin/time -f "# sample written in %e s" "$QGPU" sample "$FILE" --scan "$SCAN" "$SCAN" --detector "$DET" "$DET"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| ranks | GPUs used | wall s | slowest slab load s | products + gathers + outputs s | speed-up |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
first=""; same=0; differ=""
for n in $RANKS; do
  if [ "$BACKEND" = cuda ] && [ "$n" -gt "$gpus" ] && [ -z "${SHARE_GPU:-}" ]; then echo "| $n | (only $gpus GPUs: skipped) | | | | |"; continue; fi
  threads=${READ_THREADS:-$(( $(nproc) / n > 0 ? $(nproc) / n : 1 ))}
  best=""; best_line=""
  for _ in $(seq "$REPEAT"); do
    t0=$(date +%s.%N)
    "$MPIRUN" "${root[@]}" --oversubscribe --bind-to none -n "$n" "$QGPU" image "$FILE" --backend "$BACKEND" \
      --representation "$REPRESENTATION" --read-threads "$threads" --bf --com -o "$out/n$n" >"$out/log" 2>&1 ||
      { cat "$out/log" >&2; exit 1; }
    wall=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print a - b }')
    line=$(grep '^mpi: .*slowest slab load' "$out/log" | tail -1)
    if [ -z "$best" ] || awk -v w="$wall" -v b="$best" 'BEGIN { exit !(w < b) }'; then best=$wall; best_line=$line; fi
  done
  load=$(sed -E 's/.*slowest slab load ([0-9.]+) s.*/\1/' <<<"$best_line")
  prod=$(sed -E 's/.*outputs ([0-9.]+) s.*/\1/' <<<"$best_line")
  [ -z "$first" ] && first=$best
  used=$(( n < gpus ? n : gpus )); [ "$BACKEND" = cuda ] || used=0
  printf "| %s | %s | %.2f | %.2f | %.2f | %.2f |\n" "$n" "$used" "$best" "$load" "$prod" "$(awk -v f="$first" -v b="$best" 'BEGIN { print f / b }')"
  [ "$n" = "${RANKS%% *}" ] && continue
  for f in "$out/n${RANKS%% *}"/*.npy; do
    if cmp -s "$f" "$out/n$n/$(basename "$f")"; then same=$((same + 1)); else echo "# DIFFERS: $(basename "$f") with $n ranks"; differ=1; fi
  done
done
echo "# products byte-identical to ${RANKS%% *} rank(s): $same file comparisons equal$([ -n "$differ" ] && echo ', SOME DIFFER')"
[ -z "$differ" ]
