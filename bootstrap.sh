#!/bin/sh
# Fresh machine to first decode: install what the build and the tests need (Debian packages),
# build (with the CUDA backend when nvcc is on the PATH, the HIP backend with clang 19 and
# Debian's HIP headers and device libraries; no GPU needed to build), then decode the
# shared TAEF2 latents to PNG files in out/ (on the GPU when there is one, else on the CPU).
set -eu
cd "$(dirname "$0")"
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    gcc g++ pkg-config meson ninja-build libdnnl-dev \
    libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev gstreamer1.0-tools \
    gstreamer1.0-plugins-base gstreamer1.0-plugins-base-apps gstreamer1.0-plugins-good \
    gstreamer1.0-plugins-ugly gstreamer1.0-libav python3-gi python3-numpy gir1.2-gst-plugins-base-1.0 \
    clang-19 clang-tools-19 llvm-19 lld-19 libamdhip64-dev rocm-device-libs >/dev/null
[ -d build ] || meson setup build
ninja -C build
pipelines/decode-to-png.sh out
