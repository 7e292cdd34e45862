#!/bin/bash
# The CPU backend at every oneDNN ISA this machine can lower itself to: test-isa (tests/test-isa.c)
# decodes the real TAEF2 latents natively, then under DNNL_MAX_CPU_ISA=AVX2 and AVX512_CORE, each
# with ONEDNN_VERBOSE=1. Each run must match upstream's output, run no primitive in oneDNN's
# reference code (an implementation named ref:..., 1000x slower: what nChw16c gave on AVX2),
# report the ISA it was lowered to, and take at most 3x the native time. A backend asked for bf16
# has it in effect only natively and only where the CPU has AVX512-BF16 or AMX (oneDNN would
# emulate it on AVX512_CORE); then its decode must not be ref either, and must convert no
# activation between convolutions: at most one f32-to-bf16 reorder per compute (the latents, on
# their way into the first conv; test-isa computes 3 times), against 25 convolutions each. No
# decode in fp32 reorders an activation. Every convolution reads NHWC (acdb: the backend's layout,
# the one oneDNN picks for itself), and where the CPU has AMX the native bf16 ones run its
# kernels (an implementation named ...amx...).
set -u
exe=${1:?usage: test-isa.sh path/to/test-isa}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

bad() { failed=$((failed + 1)); echo "FAIL: $1"; }


# run NAME ISA: the decode under DNNL_MAX_CPU_ISA=ISA (empty: native); its log in $tmp/NAME
run() {
    local name=$1 isa=$2 log=$tmp/$1
    DNNL_MAX_CPU_ISA=$isa ONEDNN_VERBOSE=1 timeout 100 "$exe" >"$log" 2>&1
    local rc=$?
    grep -v '^onednn_verbose' "$log" | sed "s/^/$name: /"
    [ $rc -eq 0 ] || bad "$name: test-isa exited with status $rc (124: it ran past 100 s)"
    # onednn_verbose,exec,cpu,<primitive>,<implementation>,...
    local ref
    ref=$(awk -F, '$1 == "onednn_verbose" && $2 == "exec" && $5 ~ /ref/ { print $4 " " $5 }' "$log" | sort | uniq -c)
    [ -z "$ref" ] || bad "$name: primitives in oneDNN's reference code: $ref"
    local n
    n=$(grep -c '^onednn_verbose,exec,cpu,\(convolution\|deconvolution\)' "$log")
    [ "$n" -gt 0 ] || bad "$name: no convolution in the verbose log (ONEDNN_VERBOSE not honoured?)"
    local other
    other=$(grep '^onednn_verbose,exec,cpu,\(convolution\|deconvolution\)' "$log" |
        grep -v ',src_[a-z0-9]*::blocked:acdb:' | cut -d, -f4,5,7 | sort | uniq -c)
    [ -z "$other" ] || bad "$name: convolutions on a layout other than NHWC: $other"
}

if grep -qw -e avx512_bf16 -e amx_bf16 /proc/cpuinfo; then native_bf16=bf16; else native_bf16=fp32; fi

ms() { sed -n "s/^$2 decode ms: \([0-9.]*\).*/\1/p" "$tmp/$1"; }

run native ""
run avx2 AVX2
run avx512_core AVX512_CORE

# the ISA each run reports; a CPU without AVX-512 stays at its own under AVX512_CORE
isa() { sed -n 's/^backend: cpu (oneDNN [^,]*, \([a-z0-9_]*\),.*/\1/p' "$tmp/$1"; }
want512=avx512_core
grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo ||
    want512=$(isa native)
[ "$(isa avx2)" = avx2 ] || bad "avx2: the backend reports '$(isa avx2)', not avx2"
[ "$(isa avx512_core)" = "$want512" ] || bad "avx512_core: the backend reports '$(isa avx512_core)', not $want512"
for name in native avx2 avx512_core; do
    t=$(ms $name fp32)
    [ -n "$t" ] || { bad "$name: no decode time"; continue; }
    [ $name = native ] && native_ms=$t
    awk -v t="$t" -v n="$native_ms" 'BEGIN { exit !(t <= 3 * n) }' ||
        bad "$name: $t ms, more than 3x the native $native_ms ms"
done

for name in native avx2 avx512_core; do
    want=fp32
    [ $name = native ] && want=$native_bf16
    grep -q "^bf16 asked: $want in effect" "$tmp/$name" || bad "$name: bf16 asked, $want not in effect"
    [ $want = fp32 ] || [ -n "$(ms $name bf16)" ] || bad "$name: no bf16 decode"
done

# the conversions of activations: an NHWC f32 tensor reordered (to bf16)
act_reorders() { grep -c '^onednn_verbose,exec,cpu,reorder,.*src_f32::blocked:acdb:.*dst_' || true; }
if [ $native_bf16 = bf16 ]; then
    from=$(grep -n '^bf16 asked:' "$tmp/native" | cut -d: -f1)
    n=$(tail -n +"${from:-1}" "$tmp/native" | act_reorders)
    c=$(tail -n +"${from:-1}" "$tmp/native" | grep -c '^onednn_verbose,exec,cpu,\(convolution\|deconvolution\),.*bf16')
    echo "native bf16: $n conversions of activations to bf16 in 3 computes of $c bf16 convolutions"
    [ "$n" -le 3 ] && [ "$c" -ge 75 ] ||
        bad "native bf16: $n conversions of activations to bf16 (at most 3) for $c convolutions (at least 75)"
    kernels=$(tail -n +"${from:-1}" "$tmp/native" |
        awk -F, '$2 == "exec" && ($4 == "convolution" || $4 == "deconvolution") { print $5 }' | sort | uniq -c)
    echo "native bf16 kernels:" $kernels
    if grep -qw amx_bf16 /proc/cpuinfo; then
        echo "$kernels" | grep -v amx | grep -q . && bad "native bf16: convolutions without AMX on an AMX CPU: $kernels"
    else
        echo "native bf16: no AMX on this CPU (its kernels not checked here)"
    fi
fi
for name in native avx2 avx512_core; do
    upto=$(grep -n '^bf16 asked:' "$tmp/$name" | cut -d: -f1)
    n=$(head -n "${upto:-1000000000}" "$tmp/$name" | act_reorders)
    [ "$n" -eq 0 ] || bad "$name: $n reorders of activations in the fp32 decode"
done

[ $failed -eq 0 ] && echo "ok: every ISA, no reference code, within 3x of native"
exit $((failed > 0))
