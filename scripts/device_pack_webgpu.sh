#!/bin/bash
# Packs what the device step `webgpu` (issue 34 item 4: the WebGPU kernels on the H200's real adapter through Dawn's
# Node binding) needs into .devpack-webgpu/devwebgpu.tar.xz (git-ignored; carry it with .devpack and .gl):
#   .devwebgpu/bin/node                 this machine's node
#   .devwebgpu/lib/                     the libraries node and dawn.node link that a CUDA image may lack (not the C library)
#   .devwebgpu/harness/harness.mjs      tests/webgpu_node/harness.ts bundled with the src/*/webgpu kernel modules
#   .devwebgpu/harness/node_modules/webgpu/   the npm package `webgpu` with only its linux-x64 dawn.node
# The sample file is written there by .devbin/qgpu sample (scripts/device_webgpu.sh), which also makes the CPU references.
set -euo pipefail
cd "$(dirname "$0")/.."
w=tests/webgpu_node
[ -f $w/node_modules/webgpu/index.js ] || (cd $w && npm ci --no-audit --no-fund --loglevel=error)
rm -rf .devwebgpu && mkdir -p .devwebgpu/bin .devwebgpu/lib .devwebgpu/harness/node_modules/webgpu/dist/linux-x64
cp -L "$(command -v node)" .devwebgpu/bin/node
node $w/build.mjs .devwebgpu/harness/harness.mjs >/dev/null
pkg=$w/node_modules/webgpu
cp $pkg/package.json $pkg/index.js $pkg/LICENSE.md .devwebgpu/harness/node_modules/webgpu/
cp $pkg/dist/linux-x64/dawn.node .devwebgpu/harness/node_modules/webgpu/dist/linux-x64/
ldd .devwebgpu/bin/node .devwebgpu/harness/node_modules/webgpu/dist/linux-x64/dawn.node | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' | while read -r lib; do cp -L "$lib" .devwebgpu/lib/; done
du -sh .devwebgpu
rm -rf .devpack-webgpu && mkdir -p .devpack-webgpu
tar cf - .devwebgpu | xz -T0 -9e > .devpack-webgpu/devwebgpu.tar.xz
ls -la .devpack-webgpu
