#!/bin/bash
# usage: cli_info_master.sh QGPU DIR. Writes a 4-file acquisition and checks what `qgpu info` reports about it.
set -euo pipefail
qgpu=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
"$qgpu" sample "$dir/scan_master.h5" --scan 6 8 --detector 16 16 --files 4 >/dev/null 2>&1
out=$("$qgpu" info "$dir/scan_master.h5")
expect() { grep -qF -- "$1" <<<"$out" || { echo "missing in qgpu info output: $1"; echo "$out"; exit 1; }; }
expect "shape       scan 6 x 8, detector 16 x 16 (metadata ntrigger x nimages)"
expect "frames      48 in 4 parts (linked files)"
expect "part      frames 24..35 <- $dir/scan_data_000003.h5 /entry/data/data"
expect "pixel mask  5 bad pixels"
expect "ready       yes (48 of 48 chunks written)"
out=$("$qgpu" info "$dir/scan_master.h5" --scan-shape 4 12)
expect "shape       scan 4 x 12, detector 16 x 16 (given)"
if "$qgpu" info "$dir/scan_master.h5" --scan-shape 5 10 >/dev/null 2>"$dir/err"; then
  echo "a scan shape of 5 x 10 for 48 frames was accepted"; exit 1
fi
grep -qF "given scan shape 5x10 does not match the 48 frames" "$dir/err" || { cat "$dir/err"; exit 1; }
rm "$dir/scan_data_000002.h5"
if "$qgpu" info "$dir/scan_master.h5" >/dev/null 2>"$dir/err"; then echo "missing data file accepted"; exit 1; fi
grep -qF "points to missing file '$dir/scan_data_000002.h5'" "$dir/err" || { cat "$dir/err"; exit 1; }
echo "qgpu info on a multi-file master: ok"
