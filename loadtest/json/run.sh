#!/usr/bin/env bash
# JSON parsing cost (issue "Hardening", findings 1 and 12a): the publish path's JSON work and hostile documents.
#
#   loadtest/json/run.sh                      # best-of-5 times per case, release build
#   MODE=callgrind loadtest/json/run.sh       # instructions of 1,000 publish-path iterations (valgrind)
#   MODE=cases loadtest/json/run.sh           # instructions to parse each hostile / worst-case document once
#   /tmp/base/loadtest/json/run.sh            # the same against another tree (a `git worktree` of main, say)
#
# Builds the jsonbench product of the loadtest package (loadtest/Package.swift) into its own scratch path.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-jsonbench}"
CONFIG="${CONFIG:-release}"
MODE="${MODE:-time}"
echo "building jsonbench ($CONFIG) from $ROOT in $SCRATCH ..." >&2
swift build -c "$CONFIG" --package-path "$ROOT/loadtest" --scratch-path "$SCRATCH" --product jsonbench 2>&1 \
    | grep -E "error|warning: |Build complete" >&2 || true
BIN="$SCRATCH/$CONFIG/jsonbench"
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }
echo "$CONFIG build, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
case "$MODE" in
time) "$BIN" time ;;
callgrind)
    OUT="$(mktemp /tmp/jsonbench-callgrind.XXXXXX)"
    valgrind --tool=callgrind --callgrind-out-file="$OUT" "$BIN" publish 1000 2>&1 | grep -E "Collected|publish path" || true
    valgrind --tool=callgrind --callgrind-out-file="$OUT.base" "$BIN" publish 0 2>&1 | grep -E "Collected" || true
    echo "(the second count is the same binary doing 0 iterations: start-up and set-up; the difference / 1000 is per publish)"
    rm -f "$OUT" "$OUT.base"
    ;;
cases)
    # Instructions are what a busy machine cannot blur; each count is one parse (and freeing what it built).
    ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" case "$1" "$2" 2>&1 | awk '/Collected/ {gsub(",", "", $4); print $4}'; }
    "$BIN" names | while IFS= read -r name; do
        one=$(ir "$name" 1); none=$(ir "$name" 0)
        printf '%-42s %14s instructions  %s\n' "$name" "$((one - none))" "$("$BIN" case "$name" 1 | sed 's/.*: //')"
    done
    ;;
*) echo "MODE is time, callgrind or cases" >&2; exit 2 ;;
esac
