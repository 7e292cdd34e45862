#!/bin/sh
# `meson install` puts the plugin where the system's GStreamer looks: installed into a staging
# root (DESTDIR), the plugin lands in GStreamer's own plugin directory under it, and GStreamer
# given only that directory (as its system path, nothing else) finds both elements there, each
# naming as its documentation docs/elements.md, installed with the README and the pages it links.
# $1: the build directory.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pluginsdir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
if ! meson install -C "$1" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/log" 2>&1; then
    echo "FAIL: meson install"; cat "$tmp/log"; exit 1
fi
so="$tmp/root$pluginsdir/libgstvaedecode.so"
[ -f "$so" ] || { echo "FAIL: no $so; installed:"; find "$tmp/root" -type f; exit 1; }
echo "ok: installed $pluginsdir/libgstvaedecode.so"
export GST_REGISTRY_1_0="$tmp/registry.bin" GST_PLUGIN_SYSTEM_PATH_1_0="$tmp/root$pluginsdir"
unset GST_PLUGIN_PATH_1_0 GST_PLUGIN_PATH
for e in latentparse vaedecode; do
    if gst-inspect-1.0 "$e" >"$tmp/inspect" 2>&1 && grep -q "$so" "$tmp/inspect"; then
        echo "ok: gst-inspect-1.0 finds $e in the installed plugin"
    else
        echo "FAIL: gst-inspect-1.0 $e:"; cat "$tmp/inspect"; exit 1
    fi
    # its documentation: docs/elements.md, installed where the element says
    doc=$(sed -n 's|^ *Doc-uri *file://||p' "$tmp/inspect")
    if [ -n "$doc" ] && cmp -s "$tmp/root$doc" "$(dirname "$0")/../docs/elements.md"; then
        echo "ok: $e's Doc-uri file://$doc is the installed docs/elements.md"
    else
        echo "FAIL: $e's Doc-uri '$doc' is not the installed docs/elements.md"; exit 1
    fi
done
# the README and every page it links, installed beside
readme_dir=$(dirname "$(dirname "$tmp/root$doc")")
for page in $(grep -o '](docs/[a-z-]*\.md' "$(dirname "$0")/../README.md" | sed 's/^](//' | sort -u) README.md; do
    if ! cmp -s "$readme_dir/$page" "$(dirname "$0")/../$page"; then
        echo "FAIL: $page is not installed beside the README ($readme_dir)"; exit 1
    fi
done
echo "ok: README.md and the pages it links installed in $readme_dir"
