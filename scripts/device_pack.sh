#!/bin/bash
# Packs what a device run needs into .devbin (our binaries) and .devlib (Debian libraries the H200 image lacks,
# and the bitshuffle HDF5 plugin); both are git-ignored and travel with `carry`. Run after scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
rm -rf .devbin .devlib
mkdir -p .devbin .devlib/plugins
cp "$BUILD_DIR"/qgpu "$BUILD_DIR"/libquantem_gpu.so .devbin/
find "$BUILD_DIR"/tests "$BUILD_DIR"/bench -maxdepth 2 -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' -o -name 'replay_cuda_decoder' \) \
  ! -name '*.cmake' -exec cp {} .devbin/ \;
# The test and benchmark executables travel without their symbol tables (the library keeps its own: cuobjdump and
# backtraces name its functions), so that the tree and the pack stay under the 64 MiB a device call carries.
strip --strip-unneeded .devbin/test_* .devbin/bench_* .devbin/replay_cuda_decoder 2>/dev/null || true
cp /usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so .devlib/plugins/
# Every shared library the binaries and the plugin need, except the C library itself and CUDA's own.
for f in .devbin/* .devlib/plugins/*; do ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'; done | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so|/usr/local/cuda|libquantem_gpu' |
  while read -r lib; do cp -L "$lib" .devlib/; done
# Headers the Python binding needs besides ours, pybind11 and Python's (scripts/device_python.sh builds the module
# there for the image's own Python).
rm -rf .devinc && mkdir -p .devinc/hdf5
cp -r /usr/include/nlohmann .devinc/
cp -r /usr/include/hdf5/serial .devinc/hdf5/
du -sh .devbin .devlib
# The FFmpeg libraries pull in many codec libraries: what travels is compressed (.devpack, under the 64 MiB limit);
# scripts/device_env.sh unpacks it on the device machine.
rm -rf .devpack && mkdir -p .devpack
tar cf - .devbin | xz -T0 -9e > .devpack/devbin.tar.xz
tar cf - .devlib | xz -T0 -9e > .devpack/devlib.tar.xz  # -9e: the tree and the pack stay under 64 MiB
tar cf - .devinc | xz -T0 -6 > .devpack/devinc.tar.xz
du -sh .devpack
