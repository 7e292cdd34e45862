#!/bin/bash
# Planted bugs: shows that test-gpu-emu catches the kernel bugs it exists for (issue 12, item 3).
# Each bug is one exact edit of one line (or two) of kernels/*.cu (or of the GPU backend's use of a
# kernel), applied to a copy of the tree; the emulated suite must then fail. Without this check a suite that passes proves little: an
# emulator that, say, lands cp.async copies at once would pass a kernel that forgets to wait.
#
# The copy (the working tree's files that git tracks or does not ignore) is configured once
# (-Dcuda=disabled: test-gpu-emu needs only a C++ compiler); each bug restores the pristine kernel,
# applies its edit (an edit that does not match exactly once stops the script: never a silent
# pass), rebuilds test-gpu-emu incrementally and runs it. The sections run are test-gpu-emu's own
# (read from meson.build here), then, for a bug in a kernel they do not reach, the extra section of
# test-cuda-ops that does (named in the table). A bug whose extra is `race` (a race that changes no
# output) runs test-gpu-emu-race and its sections instead (read from meson.build too), as the
# pristine tree does when such a bug is selected. A bug whose extra is an AMD device (gfx1100,
# gfx1200, gfx942: a bug in the kernels' AMD paths) runs that emulated device's build and sections
# (test-gpu-emu-gfxN, the emu_words of meson.build) instead, likewise; one whose extra is
# banks-gfxN (a layout that computes right but collides in the LDS's banks) runs
# test-gpu-emu-banks-gfxN's conv_banks; one whose extra is sm90:WORD (a bug in the Hopper conv,
# which runs on the emulated sm_90 alone) runs that section on test-gpu-emu-sm90. A run stops at its first failed check or emulator
# report, which the table shows. The pristine tree runs first and must pass; the slow extra
# sections run there for at most EXTRA_CAP seconds each (a bug's failing case must be one the
# pristine run passed, or the table says so).
#
# Usage: tests/gpu-emu/planted-bugs.sh [WORD]   (WORD: only the bugs whose name it matches, an extended
#        regular expression: a word, or words joined by |)
# Env: VAE_SHARED_DIR (default: ../shared beside the tree), EXTRA_CAP (seconds, default 60),
#      KEEP=1 keeps the temporary copy. Exit: 0 when every bug is caught, 1 when one is missed,
#      2 when the script itself fails (copy, build, a bug that does not apply, pristine failing).

set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
only=${1:-}
extra_cap=${EXTRA_CAP:-60}
export VAE_SHARED_DIR=${VAE_SHARED_DIR:-$(cd "$src/.." && pwd)/shared}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
work=$(mktemp -d /tmp/planted-bugs.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
t_start=$(date +%s)

die() {
    echo "planted-bugs: $*" >&2
    exit 2
}

# ---- the bugs: name, file, extra section ("-": none; race: test-gpu-emu-race; gfxN: test-gpu-emu-gfxN;
# banks-gfxN: test-gpu-emu-banks-gfxN; sm90:WORD: WORD on test-gpu-emu-sm90), what it changes, the
# old and new text ----

names=() files=() extras=() whats=() olds=() news=()
bug() {
    names+=("$1") files+=("$2") extras+=("$3") whats+=("$4") olds+=("$5") news+=("$6")
}

conv=kernels/vae-gpu-conv.cu
attn=kernels/vae-gpu-attention.cu
bug fragment-row $conv - "ldmatrix A rows: lane % 8 instead of lane % 16 (rows 8-15 of each m16 fragment read rows 0-7)" \
    '(wm * C::WM + lane % 16) * C::LDA * sizeof(T)' \
    '(wm * C::WM + lane % 8) * C::LDA * sizeof(T)'
bug missing-syncthreads-conv $conv - "no __syncthreads between the cp.async wait and the next stage's load/mma" \
    $'        __syncthreads();\n        if (kb + C::STAGES - 1 < nk) {' \
    $'        if (kb + C::STAGES - 1 < nk) {'
bug conv-norm-over-kept $conv - "a conv's epilogue norm written over the conv's output that later nodes still read, not to its own block" \
    'vae_gpu_conv_st16((T *) (p.ny ? p.ny : p.y) + o, v);' \
    'vae_gpu_conv_st16((T *) p.y + o, v);'
bug conv-gn-phase-slot $conv - "a conv's GroupNorm partials at a slot without the phase's factor: an up conv's tiles overwrite each other's (a tile's partial sum missing)" \
    'const size_t slot  = ((size_t) (mb - f * tiles) * (p.up ? 4 : 1) + phase) * p.nt + nb;' \
    'const size_t slot  = ((size_t) (mb - f * tiles) + phase) * p.nt + nb;'
bug conv-gn-no-barrier $conv race "no __syncthreads before a conv's GroupNorm partials: they reuse the epilogue's staging while other warps still store from it" \
    $'    if (p.gnpart) {\n        __syncthreads();\n' \
    $'    if (p.gnpart) {\n'
bug conv90-swizzle $conv sm90:conv2d=10 "the Hopper conv's wgmma descriptors with the 64-byte swizzle, the stages' TMA copies 128-byte swizzled" \
    '           1ull << 62;' \
    '           2ull << 62;'
bug conv90-desc-swap $conv sm90:conv2d=10 "the Hopper conv's B descriptor with its leading and stride byte offsets swapped" \
    'vae_gpu_conv90_desc(b + 2048 * k, 8192, 1024)' \
    'vae_gpu_conv90_desc(b + 2048 * k, 1024, 8192)'
bug conv90-expect-tx $conv sm90:conv2d=10 "the Hopper conv's producer expects 16 bytes more than its copies bring (the stage's full barrier never completes)" \
    'vae_gpu_ptx_mbar_arrive_tx(bar, C::STAGE);' \
    'vae_gpu_ptx_mbar_arrive_tx(bar, C::STAGE + 16);'
bug conv90-parity $conv sm90:conv2d=10 "the Hopper conv's consumers wait for the full barrier's other parity (the phase before: the stage not yet landed)" \
    'vae_gpu_ptx_mbar_wait(full + 8 * s, (unsigned) (kb / C::STAGES) & 1);' \
    'vae_gpu_ptx_mbar_wait(full + 8 * s, (unsigned) (kb / C::STAGES + 1) & 1);'
bug conv90-early-release $conv sm90:conv2d=10 "the Hopper conv's consumers release a stage while its wgmmas are in flight (wait_group 2, not 1)" \
    'vae_gpu_ptx_wgmma_wait<1>();   // slice kb - 1 read' \
    'vae_gpu_ptx_wgmma_wait<2>();   // slice kb - 1 read'
bug conv90-producer-ahead $conv sm90:conv2d=10 "the Hopper conv's producer refills a stage without waiting for its empty barrier (running ahead of the ring)" \
    $'                                    vae_gpu_ptx_mbar_wait(empty + 8 * s, (unsigned) (kb / C::STAGES - 1) & 1);\n' \
    ''
bug conv90-empty-count $conv sm90:conv2d=14 "the Hopper conv's empty barriers count 8 consumer warps where a 256-row tile has 16 (a stage refilled while half its warpgroups still multiply it)" \
    'vae_gpu_ptx_mbar_init(empty + 8 * s, C::WGM);' \
    'vae_gpu_ptx_mbar_init(empty + 8 * s, 8);'
bug conv90-history-frame $conv sm90:causal_conv3d=10 "the Hopper conv's causal taps read the history frame before the right one" \
    'const int            n   = src ? s0 : s0 + p.kt - 1;' \
    'const int            n   = src ? s0 : s0 + p.kt - 2;'
bug conv90-phase-offsets $conv sm90:conv2d=10 "the Hopper conv's up phases with the row and column offsets swapped" \
    'kx + dx, ky + dy, bar);' \
    'kx + dy, ky + dx, bar);'
bug conv-gn-tail-rows $conv - "a conv's GroupNorm partials over all BM rows of the last tile, the rows past M too" \
    'vae_gpu_gn_tile_partials<T, C::THREADS>(rows, (size_t) min(C::BM, p.M - m0)' \
    'vae_gpu_gn_tile_partials<T, C::THREADS>(rows, (size_t) C::BM'
bug missing-syncthreads-attn $attn - "no \"S complete\" __syncthreads: the softmax reads S while other warps write it" \
    '            __syncthreads(); // S complete, the K tile free' \
    '            // S complete, the K tile free'
bug missing-wait-group $conv - "no cp.async.wait_group before a stage is used (only the final wait<0> remains)" \
    $'        vae_gpu_cp_wait<C::STAGES - 2>();\n' \
    ''
bug halo-off-by-one $conv - "halo test ix > w instead of ix >= w: the column past the right edge is read, not zero" \
    '(unsigned) ix >= (unsigned) p.w' \
    '(unsigned) ix > (unsigned) p.w'
bug subpixel-phase $conv - "fused upsample conv writes column phase (phase >> 1) instead of (phase & 1)" \
    '2 * X + (phase & 1)' \
    '2 * X + (phase >> 1)'
bug causal-frame $conv - "causal conv3d time taps reversed: tap j reads frame t + (kt - 1 - j) - (kt - 1)" \
    'const int  s  = px.t + tp.j - (p.kt - 1);' \
    'const int  s  = px.t + (p.kt - 1 - tp.j) - (p.kt - 1);'
bug softmax-running-max $attn - "online softmax keeps no running-max rescale: alpha = 1 when the max grows" \
    '*alpha          = exp2f(*m - ref);' \
    '*alpha          = 1.0f;'
bug replicate-rows $conv - "edge-replicating conv clamps the column only: rows above and below the frame read zeros" \
    $'        iy = iy < 0 ? 0 : iy >= p.h ? p.h - 1 : iy;\n' \
    ''
bug reflect-rows $conv - "reflecting conv reads the edge row itself above the frame (replicate's), not the row inside it" \
    '        iy = iy < 0 ? 1 : iy >= p.h ? p.h - 2 : iy;' \
    '        iy = iy < 0 ? 0 : iy >= p.h ? p.h - 2 : iy;'
bug split-drop kernels/vae-gpu-frame-split.cu - "frame split ignores the frames it drops: y's frame f from the split's frame f, not f + drop" \
    'const size_t fy  = q / hw, f = fy + drop;' \
    'const size_t fy  = q / hw, f = fy;'
bug rms-no-gamma kernels/vae-gpu-rms-norm.cu - "RMS norm without gamma (LTX-2's) stages zeros, not ones" \
    'sm_gamma[ch] = ch < c ? (gamma ? gamma[ch] : 1.0f) : 0.0f;' \
    'sm_gamma[ch] = ch < c && gamma ? gamma[ch] : 0.0f;'
bug causal-attn-held $attn - "causal attention counts its keys from the cache's start without the frames held: a later compute's queries see the stream's first frames, not their own" \
    'vae_gpu_attention_launch(qkv, cache, held * qkv.h * qkv.w, y, y.c, p, s)' \
    'vae_gpu_attention_launch(qkv, cache, 0, y, y.c, p, s)'
bug k-tail $conv - "the last partial K slice is skipped: nk = K / BK rounds down" \
    'const int nk = (p.K + C::BK - 1) / C::BK;' \
    'const int nk = p.K / C::BK;'
bug m-tail $conv - "tensor-core epilogue drops its m < M bound: rows past M are written" \
    $'        if (m < p.M && n < p.cout_p) {\n            float v[C::VEC];' \
    $'        if (n < p.cout_p) {\n            float v[C::VEC];'
bug pack-coefficient kernels/vae-gpu-frame-pack.cu - "I420/NV12 U uses kr instead of kb: 128 + cs (B - Y) / (2 (1 - kr))" \
    'vae_gpu_pack_chroma(cs, mean[2], luma, f.kb)' \
    'vae_gpu_pack_chroma(cs, mean[2], luma, f.kr)'
bug overlap-same-pointer kernels/vae-gpu-tanh-clamp.cu - "tanh_clamp checks in place by pointer only: y over x's tail accepted" \
    '!vae_gpu_in_place_ok(x.data, y, p) ||' \
    '(x.data != y.data && x.data == NULL) ||'
bug smem-overflow kernels/vae-gpu-rms-norm.cu - "gamma/beta staging loop ch <= cp: writes sm_beta[cp], one past the dynamic shared array" \
    'for (int ch = threadIdx.x; ch < cp; ch += blockDim.x) {' \
    'for (int ch = threadIdx.x; ch <= cp; ch += blockDim.x) {'
bug smem-optin-once $conv - "the >48 KB shared-memory opt-in asked for once per process, not in each context (a GstCudaContext's launches fail)" \
    $'    if (C::SMEM > 48 * 1024) {' \
    $'    static int once;\n    if (C::SMEM > 48 * 1024 && !once++) {'
bug rms-beta kernels/vae-gpu-rms-norm.cu - "beta never staged (-0 for every channel): diffusers' RMSNorm loses its bias" \
    'sm_beta[ch]  = ch < c && beta ? beta[ch] : -0.0f;' \
    'sm_beta[ch]  = -0.0f;'
la=kernels/vae-gpu-linear-attention.cu
bug missing-syncthreads-linear-attn $la - "no \"tile complete\" __syncthreads: A sums a tile of k and v that other warps are still staging" \
    $'        __syncthreads();  // the tile complete\n' \
    ''
bug missing-syncthreads-linear-attn-reuse $la - "no \"tile read\" __syncthreads: the next tile overwrites k and v that other warps are still summing" \
    $'        __syncthreads();  // the tile read: the next one may overwrite it\n' \
    ''
bug linear-attn-last-key $la - "quadratic form (positions <= head dim) skips the last key: m < P - 1" \
    'for (int m = 0; m < P; m++) {' \
    'for (int m = 0; m < P - 1; m++) {'
bug group-conv-offset kernels/vae-gpu-group-conv.cu - "grouped conv reads group o / og's channels from o / og, not (o / og) cg (right for depthwise only)" \
    '(size_t) (o / og) * cg;' \
    '(size_t) (o / og);'
bug glu-gate kernels/vae-gpu-glu.cu - "GLU gate read at channel cp / 2 + c (the padded half) instead of C + c" \
    'vae_gpu_act(vae_gpu_to_f32(xp[c + ch]), act)' \
    'vae_gpu_act(vae_gpu_to_f32(xp[cxp / 2 + ch]), act)'
bug vit-heads-scale $attn - "attention in heads scales the scores by 1 / sqrt(C), all the heads' channels, not 1 / sqrt(hd) (right for one head only)" \
    'const float sl2 = (float) (VAE_GPU_ATTN_LOG2E / sqrt((double) D));' \
    'const float sl2 = (float) (VAE_GPU_ATTN_LOG2E / sqrt((double) C));'
bug vit-layer-norm-mean kernels/vae-gpu-rms-norm.cu - "LayerNorm's mean divides by the padded channels cp, not C (right for multiples of 16)" \
    'mean = vae_gpu_rms_sum(mean, lp) / (float) c;' \
    'mean = vae_gpu_rms_sum(mean, lp) / (float) cp;'
bug vit-tokens-extra-row kernels/vae-gpu-tokens.cu - "every extra token reads the weight's first row" \
    'extra[k * c + ch + l]' \
    'extra[ch + l]'
bug vit-rope-sin-sign kernels/vae-gpu-rope.cu - "rope rotates the first half of each pair the other way: u cos + w sin" \
    'dst[j]        = vae_gpu_from_f32<T>(u * co - w * si);' \
    'dst[j]        = vae_gpu_from_f32<T>(u * co + w * si);'
bug vit-crossfade-weight kernels/vae-gpu-crossfade.cu - "cross-fade weights a frame late: (f + 1) / d, not f / d" \
    'const float          w = (float) f / (float) d;' \
    'const float          w = (float) (f + 1) / (float) d;'
bug vit-crossfade-reset backend/gpu/vae-backend-gpu.c - "cross-fade blends after a state reset too (with the zeros of a slot that holds nothing)" \
    'state->written[t->i[0]] ? slot : NULL' \
    'slot'
gn=kernels/vae-gpu-group-norm.cu gnp=kernels/vae-gpu-gn-partials.cuh
bug missing-syncthreads-gn-sum $gn race "no __syncthreads before a block sum writes sm, which the previous sum's readers may still read (the same zeros in the tests)" \
    $'    __syncthreads();  // the previous call\'s readers are done with sm\n' \
    ''
bug missing-syncthreads-gn-loop $gnp race "no __syncthreads at the end of a tile's GroupNorm partials: the statistics' next block (or a conv's next use) overwrites entries still read" \
    $'    __syncthreads();  // the shared entries may be rewritten after it\n' \
    ''
amd=kernels/vae-gpu-amdgcn.cuh
bug amd-acc-row-gfx11 $amd gfx1100 "gfx11 accumulator rows read as gfx12's (8 (lane / 16) + v instead of 2v + lane / 16)" \
    'int vae_gpu_amd_row(int lane, int v) { return 2 * v + lane / 16; }' \
    'int vae_gpu_amd_row(int lane, int v) { return lane / 16 * 8 + v; }'
bug amd-acc-row-cdna $amd gfx942 "MFMA accumulator rows transposed within a lane group (4v + lane / 16)" \
    'int vae_gpu_amd_row(int lane, int v) { return lane / 16 * 4 + v; }' \
    'int vae_gpu_amd_row(int lane, int v) { return v * 4 + lane / 16; }'
bug amd-replication $conv gfx1100 "gfx11 conv A rows from lane, not lane % 16: lanes 16-31 load other rows than the instruction replicates" \
    'C::a_at(wm * C::WM + i * 16 + lane % 16, kc + k0 + q)' \
    'C::a_at(wm * C::WM + i * 16 + lane, kc + k0 + q)'
bug amd-b-k0 $conv gfx942 "AMD conv B fragment without its k offset: lane groups 1-3 read the k of group 0" \
    'C::b_at(k0, wn * C::WN + lane % 16);' \
    'C::b_at(0, wn * C::WN + lane % 16);'
bug amd-b-chunk $conv gfx942 "CDNA conv B of the second instruction of a chunk read at the first's k (s KL dropped)" \
    'const int m = kc + s * KL + q;' \
    'const int m = kc + q;'
bug amd-b-shift $conv banks-gfx1200 "AMD conv B rows without their shift per 8 rows: rows k and k + 8 of a lane pair's reads share banks" \
    'BSHIFT = BAMD ? 32 / (int) sizeof(T) : 0;' \
    'BSHIFT = 0;'
bug amd-a-pieces $conv banks-gfx942 "CDNA conv A read 8 bytes at a time (one MFMA's k), not a 16-byte chunk for two" \
    'static constexpr int  PE = KL * KP < C::VEC ? KL * KP : C::VEC;' \
    'static constexpr int  PE = KL;'
bug amd-missing-warp-sync $conv gfx1200 "AMD conv epilogue reads the staged rows without the warp barrier after writing them" \
    $'                    st[vae_gpu_amd_row(lane, v) * C::LDC + j * 16 + lane % 16] = acc[i][j][v];\n                }\n            }\n            vae_gpu_warp_sync();\n' \
    $'                    st[vae_gpu_amd_row(lane, v) * C::LDC + j * 16 + lane % 16] = acc[i][j][v];\n                }\n            }\n'
bug wave64-reduction $gnp gfx942 "GroupNorm's warp sum from offset 16, a literal warp of 32: each half of a wave64 sums its own lanes" \
    $'    for (int o = VAE_GPU_WARP / 2; o > 0; o >>= 1) {\n        v += vae_gpu_shfl_xor(v, o, VAE_GPU_WARP);\n    }\n    return v;' \
    $'    for (int o = 16; o > 0; o >>= 1) {\n        v += vae_gpu_shfl_xor(v, o, VAE_GPU_WARP);\n    }\n    return v;'

# ---- copy, configure, build ------------------------------------------------------------------------

tree=$work/src build=$work/build
mkdir -p "$tree" "$work/pristine" || die "cannot make $work"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$tree" ||
    die "cannot copy the tree"
[ -d "$VAE_SHARED_DIR" ] || die "VAE_SHARED_DIR $VAE_SHARED_DIR is not a directory"
ln -s "$VAE_SHARED_DIR" "$work/shared"   # tests/meson.build's ../shared beside the copy
for f in "${files[@]}"; do
    mkdir -p "$work/pristine/$(dirname "$f")" && cp "$tree/$f" "$work/pristine/$f" || die "no $f"
done
meson setup "$build" "$tree" -Dcuda=disabled > "$work/setup.log" 2>&1 || die "meson setup failed: $work/setup.log"
emu_exe=$build/tests/gpu-emu/test-gpu-emu
exe=$emu_exe
build_emu() {   # [-race]: test-gpu-emu-race; -gfxN: test-gpu-emu-gfxN; -banks-gfxN: test-gpu-emu-banks-gfxN
    ninja -C "$build" "tests/gpu-emu/test-gpu-emu${1:-}" > "$work/build.log" 2>&1
}
build_emu || die "the pristine tree does not build test-gpu-emu: $(tail -5 "$work/build.log")"

# test-gpu-emu's own sections: the emu_words of every build and sm_86's own in its meson.build's
# emu_devices (word=v: on conv variant v)
sections=$(python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.search(r\"emu_words = \\[([^]]*)\\].*?\\['', '-D__CUDA_ARCH__=860',\\s*\\[([^]]*)\\]\", t, re.S); print(' '.join(re.findall(r\"'([^']+)'\", m.group(1) + m.group(2))) if m else '')" "$src/tests/gpu-emu/meson.build")
[ -n "$sections" ] || die "cannot read test-gpu-emu's sections from tests/gpu-emu/meson.build"
# test-gpu-emu-race's: race_sections
race_sections=$(python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.search(r\"race_sections = \\[([^]]*)\\]\", t); print(' '.join(re.findall(r\"'([^']+)'\", m.group(1))) if m else '')" "$src/tests/gpu-emu/meson.build")
[ -n "$race_sections" ] || die "cannot read test-gpu-emu-race's sections from tests/gpu-emu/meson.build"
# the AMD builds': emu_words
amd_sections=$(python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.search(r\"emu_words = \\[([^]]*)\\]\", t); print(' '.join(re.findall(r\"'([^']+)'\", m.group(1))) if m else '')" "$src/tests/gpu-emu/meson.build")
[ -n "$amd_sections" ] || die "cannot read emu_words from tests/gpu-emu/meson.build"

fail_re=': FAIL|check failed|^gpu-emu: '
# run_section LOG CAP WORD: 0 passed, 1 failed (first failure in LOG), 3 still running at CAP seconds
run_section() {
    local log=$1 cap=$2 word=$3 t=0 rc
    touch "$log"   # before the poll's first grep
    case $word in   # word=v: every conv on tile variant v (run.sh)
        *=*) VAE_GPU_CONV_VARIANT=${word#*=} "$exe" "${word%%=*}" >> "$log" 2>&1 & ;;
        *) "$exe" "$word" >> "$log" 2>&1 & ;;
    esac
    local pid=$!
    while kill -0 $pid 2> /dev/null; do
        if grep -qE "$fail_re" "$log"; then
            kill $pid 2> /dev/null
            wait $pid 2> /dev/null
            return 1
        fi
        if [ $t -ge $((cap * 5)) ]; then
            kill $pid 2> /dev/null
            wait $pid 2> /dev/null
            return 3
        fi
        sleep 0.2
        t=$((t + 1))
    done
    wait $pid
    rc=$?
    if [ $rc -ne 0 ] || grep -qE "$fail_re" "$log"; then
        grep -qE "$fail_re" "$log" || echo "test-gpu-emu $word: exit status $rc" >> "$log"
        return 1
    fi
    return 0
}

# the first failed case with the check that follows it (why: NaN, unwritten values...), or the
# emulator's report with the kernel it names (its "  in" line)
first_failure() {
    awk -v re="$fail_re|exit status" '
        hit && /^  in / { line = line " " substr($0, 6) }
        hit && /check failed/ && line !~ /check failed/ { i = index($0, "]: "); if (i) line = line "; " substr($0, i + 3) }
        hit { exit }
        $0 ~ re { line = $0; hit = 1 }
        END { print line }' "$1" | cut -c1-260
}

# ---- pristine --------------------------------------------------------------------------------------

echo "pristine: test-gpu-emu sections: $sections"
for word in $sections; do
    run_section "$work/pristine.log" 600 "$word"
    [ $? -eq 0 ] || die "the pristine tree fails test-gpu-emu: $(first_failure "$work/pristine.log")"
done
# the bugs to run, and the extra sections they need
sel=()
for i in "${!names[@]}"; do
    [[ ${names[$i]} =~ $only ]] && sel+=("$i")
done
[ ${#sel[@]} -gt 0 ] || die "no bug's name matches '$only'"
for word in $(for i in "${sel[@]}"; do echo "${extras[$i]}"; done | grep -v '^-$' | sort -u); do
    case $word in banks-gfx*)
        build_emu "-$word" || die "the pristine tree does not build test-gpu-emu-$word: $(tail -5 "$work/build.log")"
        exe=$emu_exe-$word
        run_section "$work/pristine-$word.log" 600 conv_banks ||
            die "the pristine tree fails test-gpu-emu-$word: $(first_failure "$work/pristine-$word.log")"
        exe=$emu_exe
        echo "pristine: test-gpu-emu-$word (conv_banks) passes"
        continue
    esac
    case $word in sm90:*)
        build_emu -sm90 || die "the pristine tree does not build test-gpu-emu-sm90: $(tail -5 "$work/build.log")"
        exe=$emu_exe-sm90
        run_section "$work/pristine-$word.log" 600 "${word#sm90:}" ||
            die "the pristine tree fails $word: $(first_failure "$work/pristine-$word.log")"
        exe=$emu_exe
        echo "pristine: test-gpu-emu-sm90 (${word#sm90:}) passes"
        continue
    esac
    case $word in gfx*)
        build_emu "-$word" || die "the pristine tree does not build test-gpu-emu-$word: $(tail -5 "$work/build.log")"
        exe=$emu_exe-$word
        for w in $amd_sections; do
            run_section "$work/pristine-$word.log" 600 "$w" ||
                die "the pristine tree fails test-gpu-emu-$word: $(first_failure "$work/pristine-$word.log")"
        done
        exe=$emu_exe
        echo "pristine: test-gpu-emu-$word ($amd_sections) passes"
        continue
    esac
    if [ "$word" = race ]; then
        build_emu -race || die "the pristine tree does not build test-gpu-emu-race: $(tail -5 "$work/build.log")"
        exe=$emu_exe-race
        for w in $race_sections; do
            run_section "$work/pristine-race.log" 600 "$w" ||
                die "the pristine tree fails test-gpu-emu-race: $(first_failure "$work/pristine-race.log")"
        done
        exe=$emu_exe
        echo "pristine: test-gpu-emu-race ($race_sections) passes"
        continue
    fi
    run_section "$work/pristine-$word.log" "$extra_cap" "$word"
    case $? in
        0) echo "pristine: extra section $word passes" ;;
        3) echo "pristine: extra section $word passes its first $(grep -c ': OK' "$work/pristine-$word.log") cases in ${extra_cap} s" ;;
        *) die "the pristine tree fails section $word: $(first_failure "$work/pristine-$word.log")" ;;
    esac
done
echo "pristine: $(($(date +%s) - t_start)) s (copy, configure, build, run)"

# ---- the bugs --------------------------------------------------------------------------------------

apply_bug() {   # file old new: replaces the one occurrence of old, or fails
    python3 - "$tree/$1" "$2" "$3" << 'EOF'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
n = text.count(old)
if n != 1:
    sys.exit("%s: the bug's text occurs %d times, not once" % (path, n))
open(path, 'w').write(text.replace(old, new))
EOF
}

rows=() missed=0
for i in "${sel[@]}"; do
    name=${names[$i]} file=${files[$i]} extra=${extras[$i]}
    t0=$(date +%s)
    log=$work/bug-$name.log
    : > "$log"
    cp "$work/pristine/$file" "$tree/$file"
    apply_bug "$file" "${olds[$i]}" "${news[$i]}" || die "bug $name does not apply"
    caught=missed how="passed every check" where= words=$sections exe=$emu_exe race=
    if [ "$extra" = race ]; then
        words=$race_sections exe=$emu_exe-race race=-race
    elif [ "${extra#gfx}" != "$extra" ]; then
        words=$amd_sections exe=$emu_exe-$extra race=-$extra
    elif [ "${extra#banks-}" != "$extra" ]; then
        words=conv_banks exe=$emu_exe-$extra race=-$extra
    elif [ "${extra#sm90:}" != "$extra" ]; then
        words=${extra#sm90:} exe=$emu_exe-sm90 race=-sm90
    elif [ "$extra" != - ]; then
        words="$words $extra"
    fi
    build_emu $race || die "bug $name does not build: $(grep -m1 error "$work/build.log")"
    for word in $words; do
        run_section "$log" "$extra_cap" "$word"
        rc=$?
        if [ $rc -eq 1 ]; then
            caught=CAUGHT how=$(first_failure "$log") where=$word
            [ -n "$race" ] && where="$word (test-gpu-emu$race)"
            [ "$word" = "$extra" ] && where="$word (extra section)"
            # a failing case of an extra section must be one that the pristine run passed
            label=${how%%: FAIL*}
            if [ "$word" = "$extra" ] && [ "$label" != "$how" ] &&
                ! grep -qF "$label: OK" "$work/pristine-$extra.log"; then
                where="$where, a case past the pristine run's ${extra_cap} s"
            fi
            break
        elif [ $rc -eq 3 ]; then
            how="no failure in the first ${extra_cap} s of $word"
        fi
    done
    cp "$work/pristine/$file" "$tree/$file"
    [ $caught = CAUGHT ] || missed=$((missed + 1))
    dt=$(($(date +%s) - t0))
    echo "$name: $caught in $dt s${where:+, section $where}: $how"
    row="$name	$file	${whats[$i]}	$caught	${where:+$where: }$how"
    rows+=("${row//|/\\|}")
done
exe=$emu_exe
build_emu || die "the restored tree does not build"

echo
echo "| bug | file | what it changes | caught? | how (section: first failing check or emulator report) |"
echo "|---|---|---|---|---|"
for r in "${rows[@]}"; do
    echo "| ${r//	/ | } |"
done
echo
echo "${#sel[@]} bugs, $missed missed, $(($(date +%s) - t_start)) s in all"
[ $missed -eq 0 ]
