#!/bin/bash
# Packs what a device run needs into .devbin (our binaries) and .devlib (Debian libraries the H200 image lacks,
# and the bitshuffle HDF5 plugin), compressed into .devpack; the FFmpeg libraries that only the movie plugin needs go
# to .devpack-movie (carry it too for the movie steps). All are git-ignored and travel with `carry`. Run after
# scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
rm -rf .devbin .devlib
mkdir -p .devbin .devlib/plugins
rm -rf .devmovie && mkdir -p .devmovie
cp "$BUILD_DIR"/qgpu "$BUILD_DIR"/libquantem_gpu.so "$BUILD_DIR"/libquantem_gpu_movie.so .devbin/
find "$BUILD_DIR"/tests "$BUILD_DIR"/bench -maxdepth 2 -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' -o -name 'replay_cuda_decoder' \) \
  ! -name '*.cmake' -exec cp {} .devbin/ \;
# The test and benchmark executables travel without their symbol tables (the library keeps its own: cuobjdump and
# backtraces name its functions), so that the tree and the pack stay under the 64 MiB a device call carries.
strip --strip-unneeded .devbin/test_* .devbin/bench_* .devbin/replay_cuda_decoder 2>/dev/null || true
cp /usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5bshuf.so .devlib/plugins/
# Every shared library the binaries and the plugin need, except the C library itself and CUDA's own.
deps() { for f in "$@"; do ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'; done | sort -u |
         grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so|/usr/local/cuda|libquantem_gpu'; }
deps $(ls .devbin/* .devlib/plugins/* | grep -v libquantem_gpu_movie) | while read -r lib; do cp -L "$lib" .devlib/; done
# The movie plugin's own needs (FFmpeg and the codec libraries it pulls in), apart: most runs do not carry them.
deps .devbin/libquantem_gpu_movie.so | while read -r lib; do
  [ -e ".devlib/$(basename "$lib")" ] || cp -L "$lib" .devmovie/; done
# Headers the Python binding needs besides ours, pybind11 and Python's (scripts/device_python.sh builds the module
# there for the image's own Python).
rm -rf .devinc && mkdir -p .devinc/hdf5 .devinc/shared
# The real detector files the tests read from ../shared/data (a few hundred KB): device_env.sh puts them there.
cp -r ../shared/data .devinc/shared/
cp -r /usr/include/nlohmann .devinc/
cp -r /usr/include/hdf5/serial .devinc/hdf5/
du -sh .devbin .devlib .devmovie
# What travels is compressed (.devpack, and .devpack-movie for movies: the tree and both stay under the 64 MiB a call
# carries); scripts/device_env.sh unpacks them on the device machine.
rm -rf .devpack && mkdir -p .devpack
tar cf - .devbin | xz -T0 -9e > .devpack/devbin.tar.xz
tar cf - .devlib | xz -T0 -9e > .devpack/devlib.tar.xz  # -9e: the tree and the pack stay under 64 MiB
tar cf - .devinc | xz -T0 -6 > .devpack/devinc.tar.xz
rm -rf .devpack-movie && mkdir -p .devpack-movie
tar cf - .devmovie | xz -T0 -9e > .devpack-movie/devmovie.tar.xz
du -sh .devpack .devpack-movie
