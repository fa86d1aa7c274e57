#!/bin/bash
# usage: cli_representation.sh QGPU DIR. `qgpu image --representation encoded` writes the same BF/CoM arrays as
# dense, with the representation in their provenance; `qgpu info` says what auto would choose; a bad value fails.
set -euo pipefail
qgpu=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
"$qgpu" sample "$dir/s.h5" --scan 24 24 --detector 32 32 >/dev/null 2>&1
"$qgpu" info "$dir/s.h5" | grep -qE "^load +would be dense on (cpu|cuda) \(dense 1.18 MB" || {
  echo "qgpu info does not say what the load would choose"; "$qgpu" info "$dir/s.h5"; exit 1; }
for rep in dense encoded; do
  "$qgpu" image "$dir/s.h5" --backend cpu --representation $rep --bf --com -o "$dir/$rep" >/dev/null
  grep -qF "\"representation\": \"$rep\"" "$dir/$rep/bf.json" || { echo "bf.json lacks representation $rep"; exit 1; }
  grep -qF '"dense_bytes": 1179648' "$dir/$rep/bf.json" || { echo "bf.json lacks dense_bytes"; exit 1; }
done
for f in bf com_row com_col; do
  cmp "$dir/dense/$f.npy" "$dir/encoded/$f.npy" || { echo "$f differs between dense and encoded"; exit 1; }
done
if "$qgpu" image "$dir/s.h5" --backend cpu --representation sparse --bf -o "$dir/x" >/dev/null 2>&1; then
  echo "--representation sparse accepted"; exit 1
fi
echo "qgpu --representation: ok"
