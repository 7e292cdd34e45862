#!/bin/sh
# Decode a Wan 2.1 latent video (ComfyUI .latent, [B, 16, T, H, W]) to an H.264 mp4 on the CPU:
# latentparse splits it into latent frames stamped for the frames they decode to (1 for the
# first latent frame, 4 for each later one, at 16 fps), vaedecode runs the Wan 2.1 VAE, which
# outputs I420 for x264enc itself. T latent frames of HxW give 1 + 4 (T - 1) frames of 8Hx8W.
# Further arguments are vaedecode properties, e.g. latent-space=normalized for latents taken
# from the diffusion model (diffusers output_type="latent"; ComfyUI's LATENT is raw, the
# default for Wan). gst-launch-1.0 -e: Ctrl-C sends EOS, so that mp4mux finishes a playable file of
# the frames decoded so far.
#
#   pipelines/wan-to-mp4.sh MODEL LATENT OUTPUT [PROPERTY=VALUE ...]
#   pipelines/wan-to-mp4.sh wan_2.1_vae.safetensors ../shared/media/wan21_cheesecake.latent \
#       out/cheesecake.mp4 latent-space=normalized
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 MODEL LATENT OUTPUT [vaedecode PROPERTY=VALUE ...]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
model=$1 latent=$2 out=$3
shift 3
mkdir -p "$(dirname "$out")"
export GST_PLUGIN_PATH="$here/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
gst-launch-1.0 -q -e filesrc location="$latent" ! latentparse \
    ! vaedecode model-file="$model" "$@" \
    ! video/x-raw,format=I420 ! x264enc pass=qual quantizer=18 ! mp4mux ! filesink location="$out"
echo "wrote $out"
