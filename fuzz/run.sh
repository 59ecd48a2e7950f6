#!/usr/bin/env bash
# run.sh [SECONDS] -- fuzz the C capture walker with libFuzzer + ASan + UBSan.
#
# Builds fuzz/fuzz_decode.c with the decoder sources, then runs it over a
# copy of fuzz/seeds/ (new inputs go to fuzz/corpus/, crashes to fuzz/crashes/).
# Default 600 s. Exit status is libFuzzer's: 0 = no crash, hang (>10 s per
# input) or leak found. Not part of the test suite.
set -euo pipefail
SECONDS_TO_RUN="${1:-600}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/../analysis/_native/decode"
BUILD="${FUZZ_BUILD_DIR:-$HERE/build}"
CC="${CC:-clang}"
mkdir -p "$BUILD" "$HERE/corpus" "$HERE/crashes"
command -v "$CC" >/dev/null || { echo "run.sh: $CC not found (apt-get install clang)" >&2; exit 2; }
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        "$CC" -x c -fsanitize=fuzzer,address - -o "$BUILD/probe" 2>/dev/null; then
    echo "run.sh: $CC cannot link libFuzzer/ASan: install clang's runtime" \
         "(Debian 12: apt-get install libclang-rt-14-dev)" >&2
    exit 2
fi
"$CC" -g -O1 -std=c11 -Wall -Wextra -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$SRC" "$HERE/fuzz_decode.c" "$SRC/decode.c" -o "$BUILD/fuzz_decode"
cp -n "$HERE"/seeds/* "$HERE/corpus/" 2>/dev/null || true
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
exec "$BUILD/fuzz_decode" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$HERE/crashes/" "$HERE/corpus" "$HERE/seeds"
