#!/usr/bin/env bash
# The WebGPU kernels through Dawn's Node binding (harness.ts) on SwiftShader's Vulkan ICD, so that CI keeps the
# harness the lead runs on the H200's real adapter (scripts/device_run.sh webgpu) working. Exit 77 (ctest: skipped)
# with the reason when node, the ICD or tests/webgpu_node/node_modules (npm ci there) is missing.
#   tests/webgpu_node/run.sh QGPU [WORKDIR]     (QGPU: the qgpu CLI, for the sample file and the CPU references)
# Env: VK_ICD_FILENAMES (default Chromium's SwiftShader ICD), QGPU_WEBGPU_SCAN / QGPU_WEBGPU_DETECTOR (default 16 / 48).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
qgpu=${1:?usage: run.sh QGPU [WORKDIR]}
skip() { echo "SKIP webgpu_node: $*"; exit 77; }
icd=${VK_ICD_FILENAMES:-/usr/lib/chromium/vk_swiftshader_icd.json}
command -v node >/dev/null || skip "node is not installed"
[ -f "$icd" ] || skip "no Vulkan ICD at $icd (Debian chromium ships SwiftShader's; or set VK_ICD_FILENAMES)"
[ -f "$here/node_modules/webgpu/index.js" ] && [ -f "$here/node_modules/esbuild/package.json" ] && [ -f "$here/node_modules/typescript/bin/tsc" ] ||
  skip "tests/webgpu_node/node_modules is missing: run 'npm ci' in tests/webgpu_node (tests/remote/e2e/run.sh does)"
work=${2:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${2:-}" ] || trap 'rm -rf "$work"' EXIT
node "$here/node_modules/typescript/bin/tsc" -p "$here" || { echo "FAIL webgpu_node: the harness does not type-check"; exit 1; }
node "$here/build.mjs" "$work/harness.mjs" >/dev/null || { echo "FAIL webgpu_node: the harness does not bundle"; exit 1; }
scan=${QGPU_WEBGPU_SCAN:-16} det=${QGPU_WEBGPU_DETECTOR:-48}
"$qgpu" sample "$work/sample.h5" --scan "$scan" "$scan" --detector "$det" "$det" >/dev/null || { echo "FAIL webgpu_node: qgpu sample"; exit 1; }
# The harness needs the bundle's `webgpu` import resolved: node_modules beside it.
ln -sfn "$here/node_modules" "$work/node_modules"
export VK_ICD_FILENAMES=$icd XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
node "$work/harness.mjs" "$work/sample.h5" --qgpu "$qgpu" --runs 2 --out "$work/out" || exit 1
# The load request path: a scan crop and an exact 2x2 detector bin (the CLI gets the same request).
node "$work/harness.mjs" "$work/sample.h5" --qgpu "$qgpu" --runs 1 --out "$work/out_crop" --scan-region 2,3,10,12 --bin-detector 2
