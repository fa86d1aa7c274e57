#!/bin/bash
# Configures and builds quantem-gpu (library, qgpu CLI, tests, Python module, benchmarks) into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
ninja -C "$BUILD_DIR" -j"$(nproc)"
