#!/bin/bash
# The CUDA benchmark and tests on a lent GPU machine: x86-64 with the NVIDIA driver, CUDA, PyTorch
# and python3, but no GStreamer, no oneDNN, no network, and only a copy of the working tree plus
# what is carried beside it. The build is done here and carried as one archive.
#
#   tests/bench/device-run.sh pack            here: build, then write $CARRY/carry.tar.xz
#   tests/bench/device-run.sh run [ARGS...]   there, from the tree's root: the tests, then bench-cuda ARGS
#   tests/bench/device-run.sh tests [ARGS...] there: test-cuda-ops and test-cuda-decode only (TEST_PROGRAMS), given ARGS
#   tests/bench/device-run.sh bench [ARGS...] there: bench-cuda ARGS only
#   tests/bench/device-run.sh sanitize [WORD] there: test-cuda-ops (its sections matching WORD)
#                                             under compute-sanitizer memcheck, racecheck, synccheck, initcheck
#   tests/bench/device-run.sh elements        there: test-elements' CUDA group (the element on the GPU)
#
# CARRY (default .gpu, relative to the tree's root; .gitignore ignores it) must be ignored by git and
# named in the device tool's `carry`. The archive holds bin/ (bench-cuda, test-cuda-ops,
# test-cuda-decode, test-elements), plugins/ (the GStreamer plugin, built with GStreamer's CUDA
# library), lib/ and lib-gst/ (every shared library they load apart from the C/C++ runtime and the
# driver: oneDNN, libgomp, libOpenCL; GLib's and GStreamer's, which the GPU machine lacks), shared/ (the files
# of ../shared the tests and the benchmark read) and whl/ (diffusers, pure Python, installed there
# with --no-deps: the image has its dependencies). See tests/bench/README.md.
#
# pack reads BINS (default the four: fewer make a smaller archive; the plugin and GStreamer's
# libraries travel with test-elements), BUILD (default /tmp/vae-build-gpu: outside the tree, so it does not travel),
# CUDA_ARCHS (default 90: H100/H200), SHARED (default ../shared beside the tree), SHARED_FILES
# and DIFFUSERS (the wheel's requirement). run reads VAE_BENCH_PYTHON (default python3) and OUT
# (where the logs go; the device tool sets it), tests TEST_TIMEOUT (seconds per program, default 300)
# and TEST_PROGRAMS (default both; e.g. VAE_GPU_CONV_VARIANT=4 TEST_PROGRAMS=test-cuda-ops ... tests
# conv). sanitize reads SANITIZE_TOOLS (default the four),
# SANITIZE_TIMEOUT (seconds per tool, default 540: a device command has 10 minutes, so a whole
# suite may need one command per tool) and COMPUTE_SANITIZER (default the one on PATH, else CUDA's).

set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
CARRY=${CARRY:-.gpu}
X=/tmp/vae-gpu
BINS=${BINS:-"bench-cuda test-cuda-ops test-cuda-decode test-elements"}

pack() {
    set -e
    local build=${BUILD:-/tmp/vae-build-gpu} shared=${SHARED:-$ROOT/../shared}
    local files=${SHARED_FILES:-"models/taef2_decoder.safetensors reference/taef2/small.latent
        reference/taef2/small.expected.safetensors media/wan21_cheesecake.latent"}
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" -Dcuda=enabled -Dgpu_archs="${CUDA_ARCHS:-90a}" -Dtests=enabled --buildtype=release
    fi
    local plugin=
    case " $BINS " in *" test-elements "*) plugin=gst/libgstvaedecode.so ;; esac
    ninja -C "$build" $(for b in $BINS; do echo "tests/$b"; done) $plugin
    local stage
    stage=$(mktemp -d)
    mkdir -p "$stage/bin" "$stage/lib" "$stage/plugins" "$stage/shared" "$stage/whl"
    for b in $BINS; do cp "$build/tests/$b" "$stage/bin/"; done
    [ -z "$plugin" ] || cp "$build/$plugin" "$stage/plugins/"
    # the libraries the GPU machine may lack: all but the C/C++ runtime and the driver's; those
    # only the element's test needs (GLib, GStreamer and theirs) apart in lib-gst/, on the library
    # path of that test alone (older than the image's, they could break its Python)
    mkdir -p "$stage/lib-gst"
    libs() {
        ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
            grep -Ev '^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libnvidia)[.-]'
    }
    libs $(for b in $BINS; do [ "$b" = test-elements ] || echo "$stage/bin/$b"; done) |
        while read -r name path; do cp -L "$path" "$stage/lib/$name"; done
    [ -z "$plugin" ] || libs "$stage"/bin/test-elements "$stage"/plugins/* | while read -r name path; do
        [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib-gst/$name"
    done
    # symbols the GPU machine does not need: oneDNN alone loses 10 MB, which lets the four
    # programs travel with the tree in one call
    strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* "$stage"/lib-gst/* "$stage"/plugins/* 2>/dev/null || true
    for f in $files; do
        mkdir -p "$stage/shared/$(dirname "$f")"
        cp "$shared/$f" "$stage/shared/$f"
    done
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$stage/whl" "${DIFFUSERS:-diffusers==0.42.1}"
    mkdir -p "$CARRY"
    # (xz -9: its 64 MiB window holds all three programs, which share most of their bytes)
    XZ_OPT=${XZ_OPT:--9} tar -cJf "$CARRY/carry.tar.xz" -C "$stage" .
    rm -rf "$stage"
    local tree carry
    tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- | tail -1 | cut -f1)
    carry=$(du -b "$CARRY/carry.tar.xz" | cut -f1)
    tar -tvJf "$CARRY/carry.tar.xz"
    echo "$CARRY/carry.tar.xz: $((carry / 1048576)) MiB; the working tree: $((tree / 1048576)) MiB;" \
        "together $(((carry + tree) / 1048576)) MiB of the 64 MiB that may travel"
    [ $((carry + tree)) -le $((64 * 1048576)) ] || { echo "too large to travel" >&2; exit 1; }
    git check-ignore -q "$CARRY" 2>/dev/null || echo "note: $CARRY is not ignored by git: add /$CARRY/ to .gitignore"
}

# there: unpack the archive (python3's tarfile: no need for xz), the libraries on LD_LIBRARY_PATH,
# diffusers importable, the fixtures where the tests look
setup() {
    local py=${VAE_BENCH_PYTHON:-python3}
    # unpacked once per archive: a second subcommand in the same call reuses it
    if ! [ "$X/.unpacked" -nt "$CARRY/carry.tar.xz" ]; then
        rm -rf "$X" && mkdir -p "$X" || return 1
        "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$CARRY/carry.tar.xz" "$X" ||
            { echo "cannot unpack $CARRY/carry.tar.xz (was it carried?)" >&2; return 1; }
        touch "$X/.unpacked"
    fi
    export LD_LIBRARY_PATH=$X/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    if LD_LIBRARY_PATH=$X/lib-gst:$LD_LIBRARY_PATH ldd "$X"/bin/* "$X"/plugins/* | grep 'not found'; then
        echo "libraries missing on this machine (above): pack them too" >&2
        return 1
    fi
    if ! "$py" -c 'import diffusers' 2>/dev/null; then
        [ -d "$X/site" ] || "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --target "$X/site" "$X"/whl/*.whl || return 1
        export PYTHONPATH=$X/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    export VAE_SHARED_DIR=$X/shared VAE_TEST_DATA=$ROOT/tests/data VAE_BENCH_PYTHON=$py PYTHONUNBUFFERED=1
    OUT=${OUT:-$X/out}
    mkdir -p "$OUT"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
        --format=csv,noheader
    "$py" -c 'import torch, diffusers; print("torch", torch.__version__, "cuda", torch.version.cuda, "diffusers",
diffusers.__version__, "GPU seen by torch:", torch.cuda.is_available())' || echo "$py: no torch or no diffusers"
}

status=0
tests() {
    for t in ${TEST_PROGRAMS:-test-cuda-ops test-cuda-decode}; do
        echo "== $t $*"
        timeout "${TEST_TIMEOUT:-300}" "$X/bin/$t" "$@" >"$OUT/$t.log" 2>&1
        local rc=$?
        tail -n 30 "$OUT/$t.log"
        echo "== $t: exit $rc$([ $rc = 77 ] && echo ' (skipped)')"
        [ $rc = 0 ] || status=1
    done
}

bench() {
    echo "== bench-cuda $*"
    "$X/bin/bench-cuda" "$@" 2>&1 | tee "$OUT/bench-cuda.log"
    local rc=${PIPESTATUS[0]}
    echo "== bench-cuda: exit $rc"
    [ "$rc" = 0 ] || status=1
}

# test-elements' CUDA group (CK_RUN_CASE): the plugin from plugins/ alone, no system plugins, the
# registry scanned in process (the image has no gst-plugin-scanner); $OUT/test-elements.log
elements() {
    echo "== test-elements (cuda)"
    LD_LIBRARY_PATH=$X/lib-gst:$LD_LIBRARY_PATH GST_PLUGIN_SYSTEM_PATH_1_0= GST_PLUGIN_PATH_1_0=$X/plugins \
        GST_REGISTRY_FORK=no CK_RUN_CASE=cuda \
        timeout "${TEST_TIMEOUT:-300}" "$X/bin/test-elements" >"$OUT/test-elements.log" 2>&1
    local rc=$?
    grep -E 'skipped|Checks|Failures|Errors|:[EF]:|PSNR|bytes' "$OUT/test-elements.log" | head -40
    echo "== test-elements: exit $rc"
    [ $rc = 0 ] || status=1
}

# test-cuda-ops under each tool: a tool's report fails the run (--error-exitcode), the logs go to
# $OUT/sanitize-TOOL.log; racecheck and synccheck look at shared memory and barriers, memcheck at
# every access out of bounds or misaligned, initcheck at reads of device memory never written
sanitize() {
    local san=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
    [ -x "$san" ] || { echo "no compute-sanitizer ($san)" >&2; status=1; return 1; }
    "$san" --version | tail -1
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
        echo "== compute-sanitizer --tool $tool test-cuda-ops ${1:-}"
        timeout "${SANITIZE_TIMEOUT:-540}" "$san" --tool "$tool" --error-exitcode 99 --print-limit 20 \
            "$X/bin/test-cuda-ops" "$@" >"$OUT/sanitize-$tool.log" 2>&1
        local rc=$?
        grep -E '^== (.*: (OK|FAILED)|time:)|ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log"
        grep -m 20 -E '^========= +(Invalid|Error|Race|Uninitialized|Barrier|Divergent|Warning)' "$OUT/sanitize-$tool.log"
        echo "== $tool: exit $rc$(case $rc in 77) echo ' (skipped: no GPU)' ;; 99) echo ' (the tool reported errors)' ;;
            124) echo ' (timed out: pass a WORD to run fewer sections)' ;; esac)"
        [ $rc = 0 ] || status=1
    done
}

cmd=${1:-}
shift
case $cmd in
    pack) pack ;;
    run) setup && tests && bench "$@" || status=1 ;;
    tests) setup && tests "$@" || status=1 ;;
    bench) setup && bench "$@" || status=1 ;;
    sanitize) setup && sanitize "$@" || status=1 ;;
    elements) setup && elements || status=1 ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
exit $status
