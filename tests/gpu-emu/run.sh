#!/bin/sh
# test-gpu-emu: the sections of test-cuda-ops (its first argument picks them by a word of their
# name) that the emulator runs and passes today, one run each; fails when any fails.
# Usage: run.sh test-gpu-emu-binary word...
exe=$1
shift
status=0
for word in "$@"; do
    "$exe" "$word" || status=1
done
exit $status
