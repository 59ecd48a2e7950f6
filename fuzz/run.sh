#!/usr/bin/env bash
# run.sh [SECONDS] [TARGET...] -- fuzz the pure-C cores with libFuzzer + ASan + UBSan.
#
# Targets: decode (the capture walker, fuzz_decode.c: whole capture files) and
# truth (the truth-seeking pass, fuzz_truth.c: packet tables). Default: both, one
# after the other, SECONDS each (default 600). New inputs go to OUT/corpus/TARGET/,
# findings to OUT/crashes/, where OUT is $FUZZ_OUT_DIR (default fuzz/, whose .gitignore
# keeps them out of git; point it outside the clone to keep a long run's corpus off it),
# the binaries to $FUZZ_BUILD_DIR (default fuzz/build/). Exit status 0 when no target found a crash, hang
# (>10 s per input) or leak; else the first failing target's. Not part of the test suite.
set -euo pipefail
SECONDS_TO_RUN="${1:-600}"
shift || true
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(decode truth)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NATIVE="$HERE/../analysis/_native"
BUILD="${FUZZ_BUILD_DIR:-$HERE/build}"
OUT="${FUZZ_OUT_DIR:-$HERE}"
CC="${CC:-clang}"
mkdir -p "$BUILD" "$OUT/crashes"
command -v "$CC" >/dev/null || { echo "run.sh: $CC not found (apt-get install clang)" >&2; exit 2; }
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        "$CC" -x c -fsanitize=fuzzer,address - -o "$BUILD/probe" 2>/dev/null; then
    echo "run.sh: $CC cannot link libFuzzer/ASan: install clang's runtime" \
         "(Debian 12: apt-get install libclang-rt-14-dev)" >&2
    exit 2
fi
# shellcheck disable=SC2054  # the commas are inside -fsanitize=..., not between array elements
FLAGS=(-g -O1 -std=c11 -Wall -Wextra -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for target in "${TARGETS[@]}"; do
    case "$target" in
        decode) sources=("$NATIVE/decode/file.c" "$NATIVE/decode/frame.c"); include="$NATIVE/decode"; seeds="$HERE/seeds"; max_len=65536 ;;
        truth) sources=("$NATIVE/truth/truth_core.c"); include="$NATIVE/truth"; seeds=""; max_len=16384 ;;
        *) echo "run.sh: unknown target '$target' (decode, truth)" >&2; exit 2 ;;
    esac
    "$CC" "${FLAGS[@]}" -I"$include" "$HERE/fuzz_$target.c" "${sources[@]}" -o "$BUILD/fuzz_$target"
    corpus="$OUT/corpus/$target"
    mkdir -p "$corpus"
    if [ -n "$seeds" ]; then
        cp -n "$seeds"/* "$corpus/" 2>/dev/null || true
    fi
    echo "run.sh: fuzzing $target for $SECONDS_TO_RUN s" >&2
    if ! "$BUILD/fuzz_$target" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
            -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$OUT/crashes/$target-" \
            "$corpus" ${seeds:+"$seeds"}; then
        [ "$status" -ne 0 ] || status=1
        echo "run.sh: $target found something: see $OUT/crashes/" >&2
    fi
done
exit "$status"
