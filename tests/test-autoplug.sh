#!/bin/bash
# latent files as any media file: gst-discoverer-1.0, gst-play-1.0 and playbin (the typefinder,
# latentparse and vaedecode auto-plugged by decodebin) with the decoder chosen from the model
# path (GST_VAE_MODEL_PATH), on ../shared's TAEF2 images and Wan 2.1 video (with the random-weight
# Wan fixture in a model directory of its own; gst-play-1.0 on the fixture's own latents); the ComfyUI workflow's VAE taken by name from a
# file written here; and the errors when the model path holds no decoder or several.
. "$(dirname "$0")/vae-test-lib.sh"

# expect NAME NEEDLE... : every needle (a fixed string) in $tmp/out
expect() {
    local name=$1 needle
    shift
    for needle in "$@"; do
        if ! grep -qF -- "$needle" "$tmp/out"; then
            bad "$name: no '$needle' in:"; tr '\r' '\n' <"$tmp/out" | grep -v '^ *$' | tail -20
            return
        fi
    done
    ok "$name"
}

taef2=$shared/reference/taef2/full.latent
wan=$shared/media/wan21_cheesecake.latent
mkdir "$tmp/wan" "$tmp/dup" "$tmp/named"
cp "$data/wan21_b4.orig.safetensors" "$tmp/wan/wan_2.1_vae.safetensors"
cp "$shared/models/taef2_decoder.safetensors" "$tmp/dup/other.safetensors"
cp "$data/taef2_z32_w16.orig.safetensors" "$tmp/named/chosen.safetensors"
cp "$data/taef2_z32_w16.orig.safetensors" "$tmp/named/tiny_decoder.safetensors"
cp "$shared/models/taef2_decoder.safetensors" "$tmp/named/other.safetensors"

# a ComfyUI SaveLatent file of the 32-channel fixture's latents whose workflow loaded VAE $1
comfy_latent() {
    python3 - "$data/taef2_z32_w16.latent" "$1" "$2" <<'PY'
import json, struct, sys
src, vae, out = sys.argv[1:]
f = open(src, 'rb'); n = struct.unpack('<Q', f.read(8))[0]; hdr = json.loads(f.read(n)); body = f.read()
prompt = {"3": {"inputs": {"seed": 1, "model": ["4", 0]}, "class_type": "KSampler"},
          "8": {"inputs": {"vae_name": vae}, "class_type": "VAELoader", "_meta": {"title": "Load VAE"}},
          "9": {"inputs": {"samples": ["3", 0], "filename_prefix": "latents/x"}, "class_type": "SaveLatent"}}
hdr["__metadata__"] = {"prompt": json.dumps(prompt), "workflow": json.dumps({"nodes": []})}
h = json.dumps(hdr).encode(); h += b' ' * (-len(h) % 8)
open(out, 'wb').write(struct.pack('<Q', len(h)) + h + body)
PY
}
comfy_latent chosen.safetensors "$tmp/chosen.latent"
comfy_latent tiny "$tmp/tiny.latent"
comfy_latent missing.safetensors "$tmp/missing.latent"

export GST_VAE_MODEL_PATH=$shared/models
timeout 60 gst-discoverer-1.0 -v "$taef2" >"$tmp/out" 2>&1
expect "gst-discoverer-1.0, TAEF2 images" "Duration: 0:00:00.125000000" "Seekable: yes" \
    "Width: 832" "Height: 480" "Frame rate: 16/1" "frame count: 2"
timeout 60 gst-play-1.0 --videosink=fakesink "$taef2" >"$tmp/out" 2>&1
[ $? -eq 0 ] && ! grep -q ERROR "$tmp/out" && expect "gst-play-1.0, TAEF2 images" "Reached end of play list"
timeout 60 gst-launch-1.0 -m playbin uri="file://$taef2" video-sink="fakesink silent=false" -v >"$tmp/out" 2>&1
[ "$(grep -c 'last-message = chain.*1198080 bytes' "$tmp/out")" = 2 ] &&
    expect "playbin, TAEF2 images: 2 frames of 832x480 RGB" \
        "vaedecode-model, file=(string)$shared/models/taef2_decoder.safetensors, family=(string)taef2" ||
    bad "playbin, TAEF2 images: $(grep -c 'last-message = chain' "$tmp/out") frames"

GST_VAE_MODEL_PATH=$tmp/wan timeout 60 gst-discoverer-1.0 -v "$wan" >"$tmp/out" 2>&1
expect "gst-discoverer-1.0, Wan 2.1 video" "Duration: 0:00:03.812500000" "Width: 512" "Height: 320" \
    "Frame rate: 16/1" "frame count: 61"
# (played whole, the fixture's own 4 latent frames: the 16 of the shared file take 25 s here)
GST_VAE_MODEL_PATH=$tmp/wan timeout 60 gst-play-1.0 --videosink=fakesink "$data/wan21_b4.latent" >"$tmp/out" 2>&1
[ $? -eq 0 ] && ! grep -q ERROR "$tmp/out" && expect "gst-play-1.0, Wan 2.1 video" "Reached end of play list" \
    "0:00:00.8 / 0:00:00.8"

# the workflow's VAE, by file name and by ComfyUI's TAESD name, where the channels alone would
# not choose; a named VAE that is missing: a warning, then the choice by channels
play_named() {
    GST_VAE_MODEL_PATH=$tmp/named timeout 60 gst-launch-1.0 -m playbin uri="file://$1" video-sink=fakesink \
        >"$tmp/out" 2>&1
}
play_named "$tmp/chosen.latent"
expect "the workflow's vae_name" "vaedecode-model, file=(string)$tmp/named/chosen.safetensors" \
    'ComfyUI\ workflow'
play_named "$tmp/tiny.latent"
expect "the workflow's vae_name of a TAESD decoder" "file=(string)$tmp/named/tiny_decoder.safetensors"
play_named "$tmp/missing.latent"
expect "a missing workflow VAE" "decoded with the VAE 'missing.safetensors', which is not in the model path" \
    "3 decoders in the model path ($tmp/named) take 32-channel image latents: $tmp/named/chosen.safetensors (taef2), $tmp/named/other.safetensors (taef2), $tmp/named/tiny_decoder.safetensors (taef2). Set model-file"

# a .pth decoder is a candidate where no .safetensors of the same name is beside it (../shared/models
# holds taef2_decoder in both formats: one candidate, above)
mkdir "$tmp/pth"
cp "$shared/models/taef2_decoder.pth" "$tmp/pth/"
GST_VAE_MODEL_PATH=$tmp/pth timeout 60 gst-launch-1.0 -m playbin uri="file://$taef2" video-sink=fakesink \
    >"$tmp/out" 2>&1
expect "a .pth decoder in the model path" "vaedecode-model, file=(string)$tmp/pth/taef2_decoder.pth, family=(string)taef2"

GST_VAE_MODEL_PATH=$shared/models:$tmp/dup timeout 60 gst-play-1.0 --videosink=fakesink "$taef2" >"$tmp/out" 2>&1
expect "two decoders" "2 decoders in the model path ($shared/models:$tmp/dup) take 32-channel image latents: $shared/models/taef2_decoder.safetensors (taef2), $tmp/dup/other.safetensors (taef2)"
GST_VAE_MODEL_PATH=$tmp/wan timeout 60 gst-play-1.0 --videosink=fakesink "$taef2" >"$tmp/out" 2>&1
expect "no decoder" "No decoder for 32-channel image latents in the model path ($tmp/wan), which holds $tmp/wan/wan_2.1_vae.safetensors (wan2.1, 16 channels, video)"
unset GST_VAE_MODEL_PATH
timeout 60 gst-play-1.0 --videosink=fakesink "$taef2" >"$tmp/out" 2>&1
expect "no model path" "No model file: set the model-file property to a decoder (.safetensors or .pth), or model-dir or the GST_VAE_MODEL_PATH"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
