#!/bin/sh
# Decode the shared TAEF2 latents (two real 832x480 frames, FLUX.2 latent space) to PNG files,
# on the GPU when the CUDA backend is built and a GPU is present, else on the CPU: latentparse
# splits the .latent file into latent frames, vaedecode runs the real TAEF2 decoder, pngenc
# writes one file per frame.
#
#   pipelines/decode-to-png.sh [OUTDIR]        (default: out/)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${VAE_SHARED_DIR:-$here/../shared}
out=${1:-out}
mkdir -p "$out"
export GST_PLUGIN_PATH="$here/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
gst-launch-1.0 -q filesrc location="$shared/reference/taef2/full.latent" ! latentparse \
    ! vaedecode model-file="$shared/models/taef2_decoder.safetensors" \
    ! videoconvert ! pngenc ! multifilesink location="$out/frame-%02d.png"
echo "wrote $(ls "$out"/frame-*.png | wc -l) frames to $out/"
