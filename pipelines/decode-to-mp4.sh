#!/bin/sh
# Decode the shared TAEF2 latents to an H.264 mp4 (x264enc and mp4mux from Debian's GStreamer
# packages). The decoder outputs I420 itself, so videoconvert has nothing left to do. gst-launch-1.0 -e:
# Ctrl-C sends EOS, so that mp4mux finishes a playable file of the frames decoded so far.
#
#   pipelines/decode-to-mp4.sh [FILE]           (default: out/taef2.mp4)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${VAE_SHARED_DIR:-$here/../shared}
out=${1:-out/taef2.mp4}
mkdir -p "$(dirname "$out")"
export GST_PLUGIN_PATH="$here/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
gst-launch-1.0 -q -e filesrc location="$shared/reference/taef2/full.latent" ! latentparse framerate=2/1 \
    ! vaedecode model-file="$shared/models/taef2_decoder.safetensors" \
    ! video/x-raw,format=I420 ! x264enc pass=qual quantizer=18 ! mp4mux ! filesink location="$out"
echo "wrote $out"
