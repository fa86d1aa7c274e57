#!/bin/bash
# Installs the Debian packages quantem-gpu builds and tests with (idempotent; needs root or sudo).
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libhdf5-dev hdf5-tools bitshuffle liblz4-dev libzstd-dev libfftw3-dev libpng-dev zlib1g-dev
          nlohmann-json3-dev libcli11-dev libssl-dev libfmt-dev libcpp-httplib-dev libgtest-dev pybind11-dev python3-dev python3-venv
          python3-numpy python3-pytest python3-h5py python3-pil python3-traitlets python3-nbclient python3-nbformat python3-ipykernel clang libfuzzer-14-dev libclang-rt-14-dev
          libavcodec-dev libavformat-dev libavutil-dev libswscale-dev ffmpeg curl libopenmpi-dev openmpi-bin
          libzmq3-dev cppzmq-dev python3-zmq
          libvulkan-dev glslc glslang-tools glslang-dev spirv-tools libvkfft-dev mesa-vulkan-drivers vulkan-tools)
# The last line is the vulkan backend: headers and loader, the GLSL -> SPIR-V compilers, VkFFT and glslang (VkFFT
# builds its kernels with it: iDPC), and lavapipe (Mesa's
# CPU Vulkan driver) so that the vulkan tests really run on machines without a GPU.
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "error: the CUDA toolkit (nvcc) is required at /usr/local/cuda to build quantem-gpu" >&2
  exit 1
fi
