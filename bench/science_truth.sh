#!/bin/bash
# Issue 31 truth table: qgpu's parallax fit, SSB aberration fit (C1 + A1, bin 1, rotation and transpose given) and
# rotation calibration (qgpu image --dpc) against the simulated truth (qgpu sample: 48 x 48 scan, 64 x 64 detector,
# 22 mrad, A1 = 30 A at 20 deg, the detector turned by 17 deg, transposed in half the cases, no defocus in the file's
# calibration), beside py4DSTEM-style results on the same frames (bench/science_truth_peer.py, numpy: its CoM-curl
# rotation search and a port of its parallax alignment and aberration fit).
# Usage: bench/science_truth.sh [QGPU] [WORKDIR]; prints markdown rows. CPU reference (QGPU_BACKEND=cpu) by default.
set -euo pipefail
B=${1:-build/qgpu}
W=${2:-$(mktemp -d)}
mkdir -p "$W"
export QGPU_BACKEND=${QGPU_BACKEND:-cpu}
PY=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
echo "| kV | C1 | geometry | counts | parallax C1 / A1 / A1 angle / rotation, T (determined) | SSB fit: C1 / A1 / A1 angle | SSB truth correlation: ours (auto) / py4DSTEM Gamma/\|Gamma\| | rotation calibration +- its uncertainty (decided by, confidence, determined) | py4DSTEM-style CoM curl | py4DSTEM-style parallax: C1 (error) / A1 / A1 angle / rotation, T |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for kv in 300 80; do for c1 in 120 -200 0; do for dose in 500 5000 100000; do
  geo=R17; g="--rotation 17"; t=""
  if { [ "$c1" -gt 0 ] && [ $kv = 300 ]; } || { [ "$c1" -le 0 ] && [ $kv = 80 ]; }; then
    geo=T17; g="--rotation 17 --transpose"; t="--transpose"
  fi
  f=$W/m_${kv}_${c1}_${dose}_${geo}
  opts=(--scan 48 48 --detector 64 64 --energy $kv --semiangle 22 --defocus $c1 $g --astigmatism 30 20 --dose $dose --no-defocus-hint)
  [ -f "$f.h5" ] || "$B" sample "$f.h5" "${opts[@]}" >/dev/null
  [ -f "$f.npy" ] || "$B" sample "$f.npy" --format npy "${opts[@]}" >/dev/null
  "$B" parallax "$f.h5" -o "$W/px" >/dev/null 2>&1
  "$B" ssb "$f.h5" --fit 200 --fit-astigmatism --fit-bin 1 --rotation 17 $t -o "$W/s1" >/dev/null 2>&1
  "$B" ssb "$f.h5" --fit 200 --fit-astigmatism --fit-bin 1 --rotation 17 $t --weighting phase -o "$W/sp" >/dev/null 2>&1
  "$B" image "$f.h5" --dpc -o "$W/im" >/dev/null 2>&1
  "$PY" "$here/science_truth_peer.py" "$W" "$f.h5" "$f.npy" $kv $c1 $geo $dose
done; done; done
