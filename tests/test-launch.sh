#!/bin/bash
# gst-launch-1.0 on bad input of every kind: each run must fail with one error, not a crash or a
# hang (status 1, or 255 when the pipeline already refuses to pause), and print the cause. Runs
# are not retried: gst-launch-1.0 (1.22) misses an error posted from a streaming thread before its
# main loop runs, so what can fail before the first frame fails the state change itself
# (test-pipeline checks that). Then the test program of the elements without the plugin (it must
# fail, not crash), and the example scripts in pipelines/ for real.
# $1: the test-elements program.
. "$(dirname "$0")/vae-test-lib.sh"

# expect_error NAME NEEDLE PIPELINE...
expect_error() {
    local name=$1 needle=$2
    shift 2
    local rc
    timeout 20 gst-launch-1.0 -q "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ $rc -ne 1 ] && [ $rc -ne 255 ]; then
        bad "$name: exit status $rc (want 1 or 255; 124 = hang, >128 = crash)"; cat "$tmp/out"
    elif ! grep -qF -- "$needle" "$tmp/out"; then
        bad "$name: no '$needle' in:"; cat "$tmp/out"
    elif [ "$(grep -c '^ERROR: from element' "$tmp/out")" != 1 ]; then
        bad "$name: one error per cause, not $(grep -c '^ERROR: from element' "$tmp/out"):"; cat "$tmp/out"
    else
        ok "$name: $(grep -m1 -F -- "$needle" "$tmp/out")"
    fi
}

# a safetensors latent file of F32 values given as 4-byte escapes
latent() {
    local shape=$1 bytes=$2 values=$3 hdr
    hdr="{\"latent_tensor\":{\"dtype\":\"F32\",\"shape\":[$shape],\"data_offsets\":[0,$bytes]}}"
    { printf "$(printf '\\%03o' ${#hdr} 0 0 0 0 0 0 0)"; printf '%s' "$hdr"; printf "$values"; }
}

model=$shared/models/taef2_decoder.safetensors
full=$shared/reference/taef2/full.latent
sink="videoconvert ! fakesink"

head -c 1000000 "$model" >"$tmp/truncated.safetensors"
printf 'this is not a model file at all' >"$tmp/text.safetensors"
head -c 800000 "$full" >"$tmp/truncated.latent"
printf 'plain text, no latents here' >"$tmp/text.latent"
one4='\000\000\200\077\000\000\200\077\000\000\200\077\000\000\200\077'
nan4='\000\000\300\177\000\000\200\077\000\000\200\077\000\000\200\077'
# frame 0 decodes, frame 1 holds a NaN (an error in the data of the first frame comes while
# the pipeline prerolls, where gst-launch-1.0's own race remains: test-elements has that case)
latent "2,4,1,1" 32 "$one4$nan4" >"$tmp/nan.latent"
latent "1,4,0,1" 0 "" >"$tmp/empty.latent"
latent "1,4,1,100000" 1600000 "" >"$tmp/absurd.latent"

expect_error "missing model" "No such file or directory" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$tmp/none.safetensors" ! $sink
expect_error "truncated model" "truncated" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$tmp/truncated.safetensors" ! $sink
expect_error "malformed model" "header length" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$tmp/text.safetensors" ! $sink
expect_error "wrong-kind model" "is a TAESD encoder" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$shared/models/taef2_encoder.safetensors" ! $sink
# a latent file cut inside its second frame: the first is decoded, then warnings, no error
if timeout 60 gst-launch-1.0 filesrc location="$tmp/truncated.latent" ! latentparse \
        ! vaedecode model-file="$model" ! videoconvert ! pngenc ! multifilesink location="$tmp/cut-%d.png" \
        >"$tmp/out" 2>&1 &&
    grep -qF "Truncated latent file: tensor 'latent_tensor' needs 1597440 bytes" "$tmp/out" &&
    grep -qF "The stream ended early: 1 of 2 latent frames came" "$tmp/out" && [ -s "$tmp/cut-0.png" ] &&
    [ ! -e "$tmp/cut-1.png" ]; then
    ok "truncated latents: frame 0 decoded; $(grep -m1 -o 'The stream ended early[^.]*' "$tmp/out")"
else
    bad "truncated latents: want exit 0, frame 0 only and both warnings in:"; cat "$tmp/out"
fi
expect_error "malformed latents" "Not a safetensors latent file" \
    filesrc location="$tmp/text.latent" ! latentparse ! vaedecode model-file="$model" ! $sink
# a picture given as the latents or as the model is named as what it is (a PNG signature and a
# few of an IHDR's bytes)
printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000\000\040' >"$tmp/picture.png"
expect_error "a PNG as latents" "Not a safetensors latent file: this is a PNG image, not a safetensors file" \
    filesrc location="$tmp/picture.png" ! latentparse ! vaedecode model-file="$model" ! $sink
expect_error "a PNG as the model" "picture.png': this is a PNG image, not a safetensors file" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$tmp/picture.png" ! $sink
expect_error "zero-size latents" "is empty" \
    filesrc location="$tmp/empty.latent" ! latentparse ! vaedecode model-file="$model" ! $sink
expect_error "absurd latent size" "absurd size" \
    filesrc location="$tmp/absurd.latent" ! latentparse ! vaedecode model-file="$model" ! $sink
expect_error "channel mismatch" "The latents have 32 channels but the taesd decoder" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$data/taesd_z4_w16.orig.safetensors" ! $sink
expect_error "NaN latents" "latent frame 1: the latent frame holds 1 non-finite values (NaN or Inf); the first is nan" \
    filesrc location="$tmp/nan.latent" ! latentparse ! vaedecode model-file="$data/taesd_z4_w16.orig.safetensors" ! $sink
# backend=hip: refused where the build lacks it; where it has it, without the HIP runtime (as on a
# machine without ROCm: VAE_HIP_LIBRARY names a file that is not there), naming that
if gst-inspect-1.0 vaedecode | grep -qF 'HIP (AMD GPUs; not built)'; then
    expect_error "backend not built" "the hip backend is not built" \
        filesrc location="$full" ! latentparse ! vaedecode backend=hip model-file="$model" ! $sink
else
    export VAE_HIP_LIBRARY=/nonexistent/libamdhip64.so
    expect_error "hip without its runtime" "Could not start the hip backend: no HIP runtime: libamdhip64.so could not" \
        filesrc location="$full" ! latentparse ! vaedecode backend=hip model-file="$model" ! $sink
    unset VAE_HIP_LIBRARY
fi
expect_error "no raw constants" "taef2 has no constants to convert raw latents" \
    filesrc location="$full" ! latentparse ! vaedecode latent-space=raw model-file="$model" ! $sink

# the real decoder as a torch.save .pth decodes to the very bytes of its safetensors file; a .pth
# cut short is refused saying so
for ext in pth safetensors; do
    timeout 60 gst-launch-1.0 -q filesrc location="$shared/reference/taef2/small.latent" ! latentparse \
        ! vaedecode model-file="$shared/models/taef2_decoder.$ext" ! videoconvert ! video/x-raw,format=RGB \
        ! filesink location="$tmp/rgb.$ext" >"$tmp/out" 2>&1 || cat "$tmp/out"
done
if [ -s "$tmp/rgb.pth" ] && cmp -s "$tmp/rgb.pth" "$tmp/rgb.safetensors"; then
    ok "taef2_decoder.pth: $(stat -c %s "$tmp/rgb.pth") RGB bytes, the same as from taef2_decoder.safetensors"
else
    bad "taef2_decoder.pth: its RGB frames differ from those of taef2_decoder.safetensors (or are missing)"
fi
head -c 2000000 "$shared/models/taef2_decoder.pth" >"$tmp/truncated.pth"
expect_error "truncated .pth" "no end-of-central-directory record: the zip archive is truncated" \
    filesrc location="$full" ! latentparse ! vaedecode model-file="$tmp/truncated.pth" ! $sink

# without the plugin the element tests fail, saying why, and do not crash (no fork: a crash
# would kill the runner itself)
if [ -n "${1:-}" ]; then
    CK_FORK=no CK_RUN_CASE=general CK_RUN_TEST=test_negotiation_and_pixels \
        GST_PLUGIN_PATH_1_0=/nonexistent GST_REGISTRY_1_0=$tmp/empty.bin "$1" >"$tmp/out" 2>&1
    rc=$?
    if [ $rc -ge 1 ] && [ $rc -le 125 ] && grep -qF "The vaedecode element could not be made" "$tmp/out"; then
        ok "test-elements without the plugin: status $rc, $(grep -m1 -o 'The vaedecode element could not be made' "$tmp/out")"
    else
        bad "test-elements without the plugin: status $rc (want a failure, not a crash)"; tail -5 "$tmp/out"
    fi
fi

# the example pipelines, for real
if "$src/pipelines/decode-to-png.sh" "$tmp/png" >/dev/null && [ "$(ls "$tmp"/png/frame-*.png | wc -l)" = 2 ] &&
    gst-launch-1.0 -q filesrc location="$tmp/png/frame-01.png" ! pngdec ! \
        video/x-raw,width=832,height=480 ! fakesink; then
    ok "pipelines/decode-to-png.sh: 2 frames of 832x480"
else
    bad "pipelines/decode-to-png.sh"
fi
if "$src/pipelines/decode-to-mp4.sh" "$tmp/taef2.mp4" >/dev/null &&
    [ "$(gst-launch-1.0 -v filesrc location="$tmp/taef2.mp4" ! qtdemux ! fakesink silent=false 2>&1 |
        grep -c 'last-message = chain')" = 2 ]; then
    ok "pipelines/decode-to-mp4.sh: 2 H.264 frames"
else
    bad "pipelines/decode-to-mp4.sh"
fi

# the Wan script on the real cheesecake latents (normalized, 16 latent frames of 64x40) with the
# random-weight Wan 2.1 fixture, which has the real VAE's shapes at tiny widths
if "$src/pipelines/wan-to-mp4.sh" "$data/wan21_b4.orig.safetensors" "$shared/media/wan21_cheesecake.latent" \
        "$tmp/wan.mp4" latent-space=normalized >/dev/null &&
    gst-launch-1.0 -v filesrc location="$tmp/wan.mp4" ! qtdemux ! fakesink silent=false >"$tmp/wan.log" 2>&1 &&
    [ "$(grep -c 'last-message = chain' "$tmp/wan.log")" = 61 ] &&
    grep -q 'video/x-h264.*width=(int)512, height=(int)320, framerate=(fraction)16/1' "$tmp/wan.log"; then
    ok "pipelines/wan-to-mp4.sh: 61 H.264 frames of 512x320 at 16/1"
else
    bad "pipelines/wan-to-mp4.sh"
    [ -f "$tmp/wan.log" ] && grep -o 'caps = video/x-h264.*' "$tmp/wan.log" | head -1
fi

# a video fixture's latent file through latentparse ! vaedecode with its model: `frames` frames of
# WxH. check_clip NAME LATENT MODEL FRAMES W H
check_clip() {
    if gst-launch-1.0 -v filesrc location="$data/$2" ! latentparse ! vaedecode model-file="$data/$3" \
            ! fakesink silent=false >"$tmp/$1.log" 2>&1 &&
        [ "$(grep -c 'last-message = chain' "$tmp/$1.log")" = "$4" ] &&
        grep -q "video/x-raw.*width=(int)$5, height=(int)$6" "$tmp/$1.log"; then
        ok "$1: $4 frames of $5x$6"
    else
        bad "$1 through latentparse ! vaedecode"
        tail -5 "$tmp/$1.log"
    fi
}

# HunyuanVideo 1.5 (its random-weight fixture, 4 latent frames of 5x3): the mid block's attention
# over the stream from its key/value cache
check_clip hunyuanvideo1.5 hyvideo15_w32.latent hyvideo15_w32.orig.safetensors 13 80 48
# LTX-2.3 (10 latent frames of 2x1): the last frames flushed out of its centred convs at EOS
check_clip ltx2.3 ltx2_v23.latent ltx2_v23.orig.safetensors 73 64 32
# MiniMax-H3 (12 latent frames of 3x2): upstream's two chunks, the last 5 frames held by the last
# chunk until EOS
check_clip minimax-h3 minimax_w128.latent minimax_w128.diffusers.safetensors 39 48 32

# Ctrl-C on an mp4 example run with -e (as every example that writes a container is): the EOS it
# sends ends the decode, the muxer finishes the file, and the file plays with exactly the frames
# decoded so far (the count vaedecode's warning gives; all 61 where the decode finished first).
# The interrupt comes once vaedecode has posted progress for a frame (-m prints its messages), at
# most 60 s on: a fixed 5 s came before the first frame once, on a loaded machine
gst-launch-1.0 -e -m filesrc location="$shared/media/wan21_cheesecake.latent" ! latentparse \
    ! vaedecode model-file="$data/wan21_b4.orig.safetensors" latent-space=normalized \
    ! video/x-raw,format=I420 ! x264enc ! mp4mux ! filesink location="$tmp/stopped.mp4" >"$tmp/out" 2>&1 &
launch=$!
for _ in $(seq 600); do
    grep -q 'vaedecode-progress' "$tmp/out" && break
    kill -0 $launch 2>/dev/null || break
    sleep 0.1
done
kill -INT $launch 2>/dev/null
for _ in $(seq 600); do   # (an EOS that never finishes fails below, it does not hang the test)
    kill -0 $launch 2>/dev/null || break
    sleep 0.1
done
kill -KILL $launch 2>/dev/null
wait $launch
pushed=$(grep -o 'the [0-9]* frames decoded were pushed' "$tmp/out" | grep -o '[0-9]*')
pushed=${pushed:-61}
gst-discoverer-1.0 "$tmp/stopped.mp4" >"$tmp/disc" 2>&1
want=$(printf '0:00:0%d.%09d' $((pushed / 16)) $((pushed % 16 * 62500000)))
if grep -qF "Duration: $want" "$tmp/disc" && grep -qF 'H.264' "$tmp/disc" && grep -qF 'Width: 512' "$tmp/disc"; then
    ok "Ctrl-C with -e: a playable mp4 of the $pushed frames decoded ($want)"
else
    bad "Ctrl-C with -e: want a playable mp4 of $pushed frames ($want); discoverer says:"; cat "$tmp/disc"
    tail -5 "$tmp/out"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
