#!/bin/sh
# Latents over the network to a remote decoder, here on loopback: the sender parses a .latent
# file and streams its latent frames as RTP (rtpgstpay: the caps and each buffer whole, timestamps
# and flags kept) framed over TCP (rtpstreampay, RFC 4571), since a lost latent packet would
# decode to garbage; the receiver listens, decodes with vaedecode and writes PNG files. Both are
# plain gst-launch-1.0 lines: run the receiver on the GPU machine and point the sender's host at it.
#
#   pipelines/network-decode.sh MODEL LATENT OUTDIR [PORT] [vaedecode PROPERTY=VALUE ...]
#
# PORT defaults to 5740. The receiver gives up after 60 s.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
model=$1 latent=$2 out=$3 port=${4:-5740}
[ $# -ge 4 ] && shift 4 || shift 3
mkdir -p "$out"
export GST_PLUGIN_PATH="$here/build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
rtp="application/x-rtp-stream,media=application,clock-rate=90000,encoding-name=X-GST"

# the decoder: listens on PORT
timeout 60 gst-launch-1.0 -q tcpserversrc host=127.0.0.1 port="$port" ! "$rtp" ! rtpstreamdepay ! rtpgstdepay \
    ! vaedecode model-file="$model" "$@" ! videoconvert ! pngenc ! multifilesink location="$out/frame-%02d.png" &
receiver=$!
# the sender: connects once the receiver listens
tries=0
until gst-launch-1.0 -q filesrc location="$latent" ! latentparse ! rtpgstpay ! rtpstreampay \
    ! tcpclientsink host=127.0.0.1 port="$port" 2>/dev/null; do
    tries=$((tries + 1))
    if [ $tries -ge 200 ] || ! kill -0 $receiver 2>/dev/null; then
        kill $receiver 2>/dev/null
        echo "network-decode.sh: no receiver listening on port $port" >&2
        exit 1
    fi
    sleep 0.1
done
wait $receiver
echo "received and decoded $(ls "$out"/frame-*.png | wc -l) frames into $out/"
