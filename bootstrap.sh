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
    gcc g++ pkg-config meson ninja-build python3-pip \
    libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev gstreamer1.0-tools \
    gstreamer1.0-plugins-base gstreamer1.0-plugins-base-apps gstreamer1.0-plugins-good \
    gstreamer1.0-plugins-ugly gstreamer1.0-libav python3-gi python3-numpy gir1.2-gst-plugins-base-1.0 \
    clang-19 clang-tools-19 llvm-19 lld-19 libamdhip64-dev rocm-device-libs >/dev/null
# oneDNN 3 (Debian 12 has 2.6 only): PyPI's onednn-cpu-gomp and onednn-devel-cpu-gomp wheels, oneDNN
# 3.2 built with GNU OpenMP, unpacked into ONEDNN_PREFIX (meson's onednn_prefix option), where the
# build finds it and the binaries find it at run time (RPATH)
ONEDNN_PREFIX=${ONEDNN_PREFIX:-/opt/onednn-3.2}
if [ ! -e "$ONEDNN_PREFIX/lib/libdnnl.so.3" ]; then
    whl=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$whl" onednn-cpu-gomp==2023.2.0 \
        onednn-devel-cpu-gomp==2023.2.0
    for w in "$whl"/*.whl; do python3 -m zipfile -e "$w" "$whl/x"; done
    $sudo mkdir -p "$ONEDNN_PREFIX"
    for d in "$whl"/x/*.data/data; do $sudo cp -r "$d"/. "$ONEDNN_PREFIX"/; done
    # (the wheel holds the library three times: links instead)
    $sudo ln -sf libdnnl.so.3.2 "$ONEDNN_PREFIX/lib/libdnnl.so.3"
    $sudo ln -sf libdnnl.so.3 "$ONEDNN_PREFIX/lib/libdnnl.so"
    rm -rf "$whl"
fi
[ -d build ] || meson setup build -Donednn_prefix="$ONEDNN_PREFIX"
ninja -C build
pipelines/decode-to-png.sh out
