#!/bin/bash
# Writes tests/gpu-emu/gmma-layouts.txt, test-gmma's oracle, from gmma-layouts.cpp compiled on the
# host against CuTe (the nvidia-cutlass wheel's headers), CCCL (nvidia-cuda-cccl-cu12's) and the CUDA
# runtime's headers (nvidia-cuda-runtime-cu12's: CuTe includes them), from PyPI into a temporary
# folder (no CUDA install needed). Needs pip (python3 -m pip or a venv's) and g++. Not run by
# the build: the table it writes is committed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/gmma-layouts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" -q download --no-deps -d "$tmp" nvidia-cutlass==4.2.0.0 nvidia-cuda-cccl-cu12==12.9.27 \
    nvidia-cuda-runtime-cu12==12.9.79
for w in "$tmp"/*.whl; do
    unzip -q -o "$w" -d "$tmp/x"
done
g++ -std=c++17 -O1 -w -I"$tmp/x/cutlass_library/source/include" -I"$tmp/x/nvidia/cuda_cccl/include" \
    -I"$tmp/x/nvidia/cuda_runtime/include" \
    "$here/gmma-layouts.cpp" -o "$tmp/gen"
# (on the host CuTe cannot turn a shared pointer into an address: it says so on stdout, and the
# start offsets are printed from the tile's pointer instead)
"$tmp/gen" | grep -v '^ERROR: cast_smem_ptr_to_uint' > "$here/gmma-layouts.txt"
echo "wrote $here/gmma-layouts.txt"
