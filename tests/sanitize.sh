#!/bin/sh
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer, in build-asan/
# beside build/ (CPU backend only: nvcc does not take the sanitizer flags). Run from the
# repository root after ./bootstrap.sh:   tests/sanitize.sh [meson test arguments]
#
# gst-launch-1.0 and gst-inspect-1.0 are not instrumented, so the sanitizer runtimes are
# preloaded for the plugin they load; GStreamer scans plugins in this process
# (GST_REGISTRY_FORK=no) rather than in gst-plugin-scanner, which is not instrumented either.
# Leak checking is off: GLib and GStreamer keep type and registry data until exit.
set -eu
cd "$(dirname "$0")/.."
[ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled
ninja -C build-asan
preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
LD_PRELOAD="$preload" GST_REGISTRY_FORK=no \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --timeout-multiplier 4 "$@"
