#!/bin/sh
# test-gpu-emu: the sections of test-cuda-ops (its first argument picks them by a word of their
# name) that the emulator runs and passes today, one run each; fails when any fails. A word given
# as word=v runs with VAE_GPU_CONV_VARIANT=v: every conv of those sections on tile variant v, checked,
# instead of timing every variant at prepare (four runs each, outputs unchecked), which the
# emulator makes the bulk of a conv section's time.
# Usage: run.sh test-gpu-emu-binary word[=variant]...
exe=$1
shift
status=0
for arg in "$@"; do
    word=${arg%%=*}
    if [ "$word" = "$arg" ]; then
        "$exe" "$word" || status=1
    else
        VAE_GPU_CONV_VARIANT=${arg#*=} "$exe" "$word" || status=1
    fi
done
exit $status
