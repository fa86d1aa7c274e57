#!/bin/bash
# usage: cli_cache.sh QGPU DIR. `qgpu cache` on a sample, the file checked with h5ls/h5dump, then `qgpu image` from
# the cache alone (source removed): the .npy equal the raw run's byte for byte; a missing product is named.
set -euo pipefail
qgpu=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
"$qgpu" sample "$dir/scan.h5" --scan 10 12 --detector 48 48 >/dev/null 2>&1
"$qgpu" cache "$dir/scan.h5" -o "$dir/products.h5" --backend cpu --bf 5 --adf 10 20 > "$dir/cache.out"
grep -qF "wrote 16 products to $dir/products.h5" "$dir/cache.out" || { cat "$dir/cache.out"; exit 1; }
listing=$(h5ls -r "$dir/products.h5")
for path in /patterns/sum_pattern /patterns/mean_pattern /scan/frame_totals /virtual/bf /virtual/abf /virtual/adf \
            /virtual/bf_r5 /virtual/adf_10_20 /dpc/com_row /dpc/dpc_col /dpc/field_row /dpc/idpc /dpc/rotation /geometry; do
  grep -q "^$path " <<<"$listing" || { echo "missing $path in:"; echo "$listing"; exit 1; }
done
grep -q "^/virtual/bf  *Dataset {10, 12}" <<<"$listing" || { echo "$listing"; exit 1; }
h5dump -A -a /cache_format_version "$dir/products.h5" | grep -q "(0): 1" || { echo "no cache_format_version 1"; exit 1; }
h5dump -H -d /virtual/bf "$dir/products.h5" | grep -q "H5T_STD_U64LE" || { echo "bf is not uint64"; exit 1; }
h5dump -A -a /virtual/bf/provenance "$dir/products.h5" | grep -q '\\"operation\\":\\"detector' ||
  h5dump -A -a /virtual/bf/provenance "$dir/products.h5" | grep -q 'operation' || { echo "bf has no provenance"; exit 1; }
# The raw run and the cache run give the same numbers.
"$qgpu" image "$dir/scan.h5" --backend cpu --bf --adf 10 20 --com --idpc --mean -o "$dir/raw" >/dev/null
mv "$dir/scan.h5" "$dir/scan.moved.h5"
"$qgpu" image "$dir/products.h5" --bf --adf 10 20 --com --idpc --mean -o "$dir/cached" > "$dir/image.out"
grep -qF "cache $dir/products.h5 (format 1): 16 products" "$dir/image.out" || { cat "$dir/image.out"; exit 1; }
for n in bf adf com_row com_col idpc mean_pattern; do
  cmp "$dir/raw/$n.npy" "$dir/cached/$n.npy" || { echo "$n differs between the raw and the cached run"; exit 1; }
done
info=$("$qgpu" info "$dir/products.h5")
grep -qF "source      $dir/scan.h5 (absent)" <<<"$info" && grep -q "^product     adf_10_20      uint64, annulus 10.000..20.000" <<<"$info" ||
  { echo "qgpu info on the cache:"; echo "$info"; exit 1; }
# A product the cache does not hold: named, exit 1.
if "$qgpu" image "$dir/products.h5" --adf 11 30 -o "$dir/x" >/dev/null 2>"$dir/err"; then echo "absent annulus answered"; exit 1; fi
grep -qF "annulus 11..30 is not available in cache" "$dir/err" || { cat "$dir/err"; exit 1; }
if "$qgpu" image "$dir/products.h5" --bf --bin-scan 2 -o "$dir/x" >/dev/null 2>"$dir/err"; then echo "binning a cache accepted"; exit 1; fi
grep -qF "needs the raw data" "$dir/err" || { cat "$dir/err"; exit 1; }
if "$qgpu" cache "$dir/products.h5" -o "$dir/again.h5" >/dev/null 2>"$dir/err"; then echo "cache of a cache accepted"; exit 1; fi
grep -qF "is already a product cache" "$dir/err" || { cat "$dir/err"; exit 1; }
# Stale: the source back, modified.
mv "$dir/scan.moved.h5" "$dir/scan.h5"
printf 'x' >> "$dir/scan.h5"
"$qgpu" image "$dir/products.h5" --bf -o "$dir/stale" >/dev/null 2>"$dir/err"
grep -qF "is stale: source file '$dir/scan.h5' size" "$dir/err" || { cat "$dir/err"; exit 1; }
# qgpu serve on the cache alone (source moved away again): what the viewer asks first answers.
mv "$dir/scan.h5" "$dir/scan.moved.h5"
"$qgpu" serve "$dir/products.h5" --port 0 > "$dir/serve.out" 2> "$dir/serve.err" &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null || true' EXIT  # the server may be gone already: the trap must not set the exit status
for _ in $(seq 300); do grep -q "listening on" "$dir/serve.out" 2>/dev/null && break; sleep 0.1; done  # up to 30 s on a loaded machine
url=$(sed -n 's/^qgpu serve: listening on \(http:[^ ]*\)$/\1/p' "$dir/serve.out")
[ -n "$url" ] || { echo "qgpu serve on a cache did not start"; cat "$dir/serve.err"; exit 1; }
curl -sf "${url}api/datasets" | grep -qF '"representation":"product cache"' || { echo "no product cache listed"; exit 1; }
curl -sf -o "$dir/mean.png" "${url}api/datasets/products/mean_pattern?format=png&scale=log" || { echo "no mean pattern"; exit 1; }
[ "$(head -c 8 "$dir/mean.png" | od -An -tx1 | tr -d ' ')" = "89504e470d0a1a0a" ] || { echo "mean pattern is not a PNG"; exit 1; }
fit=$(curl -sf "${url}api/datasets/products/disk_fit")
q=$(python3 -c "import json,sys; f=json.loads(sys.argv[1]); print('kind=disk&cr=%.2f&cc=%.2f&r=%.2f' % (f['center_row'], f['center_col'], f['radius']))" "$fit")
code=$(curl -s -o /dev/null -w '%{http_code}' -D "$dir/headers" "${url}api/datasets/products/virtual?$q&format=png&tolerance=0.01")
[ "$code" = 200 ] && grep -qi "^X-Cached-Product: bf" "$dir/headers" || { echo "viewer's BF from the cache: $code"; cat "$dir/headers"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}api/datasets/products/frame?row=1&col=1")
[ "$code" = 404 ] || { echo "a frame from a cache answered $code"; exit 1; }
kill $serve_pid; wait $serve_pid 2>/dev/null || true
echo "qgpu cache + qgpu image / qgpu serve from the cache: ok"
