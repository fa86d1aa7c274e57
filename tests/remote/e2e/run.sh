#!/usr/bin/env bash
# Browser end-to-end tests: `qgpu serve` + the WebGPU viewer (viewer.e2e.mjs), then the local-file page with no
# server (local.e2e.mjs: TypeScript HDF5 reader, WGSL bitshuffle+LZ4 decoder and virtual detector), then the notebook
# widget's ES module against a mock model with a real Python side (widget.e2e.mjs, widget_bridge.py), then
# `qgpu serve --live` fed by the detector simulator (live.e2e.mjs: the image filling while the scan runs), a scan
# with positions never scanned (missing.e2e.mjs: drawn hatched, "missing" on hover), the display scan bin of a scan
# wider than 1024 positions (scan_bin.test.mjs: the bin choice; scanbin.e2e.mjs: the viewer), then the WebGPU kernels in Node
# on Dawn's binding (tests/webgpu_node/run.sh).
#   tests/remote/e2e/run.sh [BUILD_DIR]     (default: $QGPU_BUILD_DIR or ./build; built here if qgpu is missing)
# Installs what it needs (Debian chromium, npm packages), builds the viewer, runs viewer.e2e.mjs (screenshots
# and the server log go to BUILD_DIR/test-tmp/e2e, or $QGPU_E2E_OUT), and ends
# with the line `e2e: N passed, M failed` (exit status non-zero on failure).
# Chromium runs with --enable-unsafe-webgpu: headless with --disable-gpu that is SwiftShader's software adapter,
# a smoke test of the WGSL path. QGPU_E2E_WEBGPU=off leaves WebGPU out.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
build=${1:-${QGPU_BUILD_DIR:-$repo/build}}
web=$repo/src/remote/web
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

fail() { echo "e2e setup: $*" >&2; echo "e2e: 0 passed, 1 failed"; exit 1; }
step() { echo "== $*" >&2; }

apt_install() {
  step "apt-get install $*"
  $SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# npm ci unless node_modules is already newer than package-lock.json.
npm_ready() {
  local dir=$1
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    step "npm ci in ${dir#$repo/}"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || return 1
  fi
}

[ -x /usr/bin/chromium ] || apt_install chromium || fail "cannot install chromium"
command -v npm >/dev/null || apt_install nodejs npm || fail "cannot install nodejs/npm"

qgpu=$build/qgpu
fixtures=$build/tests/io/write_webgpu_fixtures
if [ ! -x "$qgpu" ] || [ ! -x "$fixtures" ]; then
  step "building qgpu and write_webgpu_fixtures in $build"
  cmake -S "$repo" -B "$build" -G Ninja -DQGPU_BUILD_PYTHON=OFF -DQGPU_BUILD_BENCH=OFF >/dev/null \
    && ninja -C "$build" qgpu write_webgpu_fixtures >/dev/null || fail "cannot build qgpu"
fi

npm_ready "$web" || fail "npm ci failed in src/remote/web"
step "building the viewer"
(cd "$web" && npm run --silent build >/dev/null) || fail "viewer build failed"
npm_ready "$here" || fail "npm ci failed in tests/remote/e2e"

step "running viewer.e2e.mjs"
node "$here/viewer.e2e.mjs" --qgpu "$qgpu" --web "$web/dist" --out "${QGPU_E2E_OUT:-$build/test-tmp/e2e}" --webgpu "${QGPU_E2E_WEBGPU:-auto}"
viewer_rc=$?
step "running local.e2e.mjs"
node "$here/local.e2e.mjs" --qgpu "$qgpu" --fixtures "$fixtures" --web "$web/dist" --webgpu "${QGPU_E2E_WEBGPU:-auto}" \
  --out "${QGPU_E2E_OUT:-$build/test-tmp/e2e}"
local_rc=$?
step "running widget.e2e.mjs"
if ls "$build"/python/quantem/gpu/_qgpu*.so >/dev/null 2>&1; then
  node "$here/widget.e2e.mjs" --qgpu "$qgpu" --python-path "$build/python" --web "$web/dist" \
    --out "${QGPU_E2E_OUT:-$build/test-tmp/e2e}"
  widget_rc=$?
else
  echo "SKIP widget.e2e.mjs: the Python module is not built in $build (QGPU_BUILD_PYTHON=ON)"; widget_rc=0
fi
step "running live.e2e.mjs"
node "$here/live.e2e.mjs" --qgpu "$qgpu" --web "$web/dist" --out "${QGPU_E2E_OUT:-$build/test-tmp/e2e}"
live_rc=$?
step "running missing.e2e.mjs"
node "$here/missing.e2e.mjs" --qgpu "$qgpu" --web "$web/dist" --out "${QGPU_E2E_OUT:-$build/test-tmp/e2e}"
missing_rc=$?
step "running scan_bin.test.mjs and scanbin.e2e.mjs"
node "$here/scan_bin.test.mjs" --web "$web"
scanbin_rc=$?
node "$here/scanbin.e2e.mjs" --qgpu "$qgpu" --web "$web/dist" --out "${QGPU_E2E_OUT:-$build/test-tmp/e2e}"
[ $? = 0 ] || scanbin_rc=1
# The same WebGPU kernels outside the browser: Dawn's Node binding on SwiftShader's Vulkan ICD (tests/webgpu_node).
step "running tests/webgpu_node (Dawn's Node binding)"
npm_ready "$repo/tests/webgpu_node" || fail "npm ci failed in tests/webgpu_node"
bash "$repo/tests/webgpu_node/run.sh" "$qgpu"
node_rc=$?; [ "$node_rc" = 77 ] && node_rc=0
[ "$viewer_rc" = 0 ] && [ "$local_rc" = 0 ] && [ "$widget_rc" = 0 ] && [ "$live_rc" = 0 ] && [ "$missing_rc" = 0 ] && [ "$scanbin_rc" = 0 ] &&
  [ "$node_rc" = 0 ]
