#!/bin/bash
# The WebGPU kernels on the device's real adapter (issue 34 item 4): Dawn's Node binding from .devwebgpu (unpacked
# from .devpack-webgpu by scripts/device_env.sh; made by scripts/device_pack_webgpu.sh) runs tests/webgpu_node's
# harness on a qgpu sample: parity with the CPU references and qgpu's CPU outputs, the adapter and median times.
#   bash scripts/device_webgpu.sh QGPU WORKDIR [FILE [HARNESS OPTIONS]]   (device_run.sh step webgpu)
# Without FILE it writes a qgpu sample; HARNESS OPTIONS e.g. --scan-region 0,0,64,64 --bin-detector 2 (the load request).
# Env: QGPU_WEBGPU_SCAN (default 128: a 128x128 scan), QGPU_WEBGPU_DETECTOR (default 96), QGPU_WEBGPU_RUNS (5);
#      QGPU_WEBGPU_ICD: a Vulkan ICD json to use instead of NVIDIA's; QGPU_WEBGPU_SOFTWARE_OK=1 accepts a software
#      adapter (testing this script with SwiftShader). Without it a SwiftShader/llvmpipe adapter or none fails (rc 2).
set -uo pipefail
qgpu=${1:?usage: device_webgpu.sh QGPU WORKDIR [FILE [OPTIONS]]} work=${2:?usage: device_webgpu.sh QGPU WORKDIR [FILE [OPTIONS]]}
file=${3:-}; shift 2; [ $# -gt 0 ] && shift
W=${QGPU_DEVWEBGPU:-$PWD/.devwebgpu}
[ -x "$W/bin/node" ] && [ -f "$W/harness/harness.mjs" ] ||
  { echo "FAIL webgpu: no $W/bin/node or harness: carry .devpack-webgpu (bash scripts/device_pack_webgpu.sh)"; exit 2; }
[ -x "$qgpu" ] || { echo "FAIL webgpu: no qgpu at $qgpu (carry .devpack)"; exit 2; }
[ -z "$file" ] || [ -f "$file" ] || { echo "FAIL webgpu: no file $file"; exit 2; }
mkdir -p "$work"
if [ -n "${QGPU_WEBGPU_ICD:-}" ]; then
  icd=$QGPU_WEBGPU_ICD
else
  # NVIDIA's ICD as the vulkan step finds it; the loader itself comes from .gl (libvulkan1 and glvnd, device README).
  for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done; ldconfig 2>/dev/null
  icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd*.json \
           /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null | head -1)
  [ -n "$icd" ] || { echo "FAIL webgpu: no NVIDIA Vulkan ICD json found"; exit 2; }
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 ' || echo "note: ldconfig lists no libvulkan.so.1 (carry .gl)"
echo "Vulkan ICD: $icd"
export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
scan=${QGPU_WEBGPU_SCAN:-128} det=${QGPU_WEBGPU_DETECTOR:-96}
sample=${file:-$work/webgpu_${scan}_${det}.h5}
[ -f "$sample" ] || [ -n "$file" ] || "$qgpu" sample "$sample" --scan "$scan" "$scan" --detector "$det" "$det" >/dev/null ||
  { echo "FAIL webgpu: qgpu sample $sample"; exit 2; }
hw=--require-hardware; [ "${QGPU_WEBGPU_SOFTWARE_OK:-0}" = 1 ] && hw=
LD_LIBRARY_PATH=$W/lib:${LD_LIBRARY_PATH:-} "$W/bin/node" "$W/harness/harness.mjs" "$sample" --qgpu "$qgpu" \
  --runs "${QGPU_WEBGPU_RUNS:-5}" --out "$work/out_$(basename "$sample" .h5)" $hw "$@"
