#!/bin/bash
# The libFuzzer targets for a bounded time: builds them with clang (ASan, UBSan; README.md) in
# $BUILD (default /tmp/vae-build-fuzz) unless there, then runs each over a scratch copy of its
# seeds as two jobs of SECONDS (default 300) on 2 workers, printing the executions and coverage.
# Fails on a crash, a timeout or a leak, whose input is copied into the current directory.
# usage: tests/fuzz/run.sh [SECONDS] [TARGET...]   (fuzz-pth, fuzz-model-load; default both)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-300}
shift $(($# > 0 ? 1 : 0))
targets=${*:-fuzz-pth fuzz-model-load}
build=${BUILD:-/tmp/vae-build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
    CC=${CC:-clang-14} meson setup "$build" "$src" -Dfuzz=enabled -Dcuda=disabled -Db_lundef=false >/dev/null ||
        exit 1
fi
status=0
for t in $targets; do
    ninja -C "$build" "tests/$t" >/dev/null || exit 1
    case $t in
        fuzz-pth) seeds="$src/tests/fuzz/corpus-pth/* $src/tests/data/pth_*" ;;
        *) seeds="$src/tests/fuzz/corpus-model/* $src/tests/fuzz/corpus-pth/*" ;;
    esac
    work=$(mktemp -d)
    mkdir "$work/corpus"
    # shellcheck disable=SC2086
    cp $seeds "$work/corpus/"
    (cd "$work" && "$build/tests/$t" corpus -max_len=65536 -timeout=10 -rss_limit_mb=4096 -jobs=2 -workers=2 \
        -max_total_time="$secs" -print_final_stats=1 >log 2>&1)
    execs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$work"/fuzz-*.log | awk '{s += $2} END {print s + 0}')
    found=$(cd "$work" && ls crash-* timeout-* leak-* oom-* 2>/dev/null)
    echo "$t: 2 jobs of ${secs}s, $execs executions, $(ls "$work/corpus" | wc -l) corpus files," \
        "$(echo "$found" | grep -c .) crash/timeout/leak/oom inputs"
    grep -h ' cov: ' "$work"/fuzz-*.log | tail -1
    for f in $found; do
        cp "$work/$f" . && echo "  $f" && status=1
    done
    rm -rf "$work"
done
exit $status
