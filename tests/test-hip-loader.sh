#!/bin/sh
# The HIP backend is in the plugin but ROCm is not needed to load it (backend/gpu/vae-hip-loader.c):
# the plugin has no DT_NEEDED on libamdhip64 and exports none of the hip* functions the loader
# defines (they would stand in for the real runtime's in the process); its fat binary holds code
# for every target built; and without the runtime (VAE_HIP_LIBRARY naming a file that is not
# there) gst-inspect-1.0 lists vaedecode with its hip backend built.
# $1: the plugin; the rest: the targets built (hip_archs as configured).
. "$(dirname "$0")/vae-test-lib.sh"
so=$1
shift

if readelf -d "$so" | grep NEEDED | grep -q amdhip64; then
    bad "the plugin links libamdhip64: $(readelf -d "$so" | grep amdhip64)"
else
    ok "no DT_NEEDED on libamdhip64 ($(readelf -d "$so" | grep -c NEEDED) libraries needed)"
fi
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -E '^(__)?hip|^vae_' | tr '\n' ' ')
if [ -n "$exported" ]; then
    bad "the plugin exports $exported"
else
    ok "no hip* or vae_* symbol exported ($(nm -D --defined-only "$so" | wc -l) exports, all gst_*)"
fi
if nm "$so" | grep -q ' t vae_backend_hip_init$'; then
    ok "vae_backend_hip_init is in the plugin, local"
else
    bad "no local vae_backend_hip_init in the plugin"
fi
for a in "$@"; do
    if grep -q -a "hipv4-amdgcn-amd-amdhsa--$a" "$so"; then
        ok "code object for $a"
    else
        bad "no code object for $a in the plugin's fat binary"
    fi
done
if VAE_HIP_LIBRARY=/nonexistent/libamdhip64.so gst-inspect-1.0 vaedecode >"$tmp/inspect" 2>&1 &&
    grep -q '(3): hip *- HIP (AMD GPUs)$' "$tmp/inspect"; then
    ok "gst-inspect-1.0 vaedecode without the HIP runtime: $(grep '(3): hip' "$tmp/inspect" | sed 's/^ *//')"
else
    bad "gst-inspect-1.0 vaedecode without the HIP runtime:"; cat "$tmp/inspect"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
