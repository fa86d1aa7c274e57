#!/bin/bash
# The main job on the built-in sample: install, build, simulate a 4D-STEM dataset, load it and write
# BF, ADF, CoM, DPC, iDPC and SSB images (PNG + .npy + provenance JSON) to out/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p out
"$BUILD_DIR"/qgpu sample out/sample.h5 --scan 64 64 --detector 96 96 --defocus 0
"$BUILD_DIR"/qgpu info out/sample.h5
backend=${QGPU_BACKEND:-}
if [ -z "$backend" ]; then
  if "$BUILD_DIR"/qgpu info out/sample.h5 | grep -q "^gpu         none"; then
    echo "no usable GPU here: running the CPU reference explicitly (--backend cpu)"
    backend=cpu
  else
    backend=cuda
  fi
fi
"$BUILD_DIR"/qgpu image out/sample.h5 --backend "$backend" --mean --bf --adf --com --dpc --idpc -o out/demo
"$BUILD_DIR"/qgpu ssb out/sample.h5 --backend "$backend" --fit 60 --fit-range -300 300 -o out/demo
echo "demo: results in out/demo"
