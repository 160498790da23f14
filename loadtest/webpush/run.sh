#!/usr/bin/env bash
# CPU per Web Push delivery (issue 19, "Cost"), against OpenSSL's own P-256 ECDH rate measured in the same run.
#
#   loadtest/webpush/run.sh            # 2,000 deliveries, release build
#   N=10000 loadtest/webpush/run.sh
#
# Builds the webpushbench product of the loadtest package (loadtest/Package.swift) into its own scratch path.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-webpushbench}"
echo "building webpushbench (release) in $SCRATCH ..." >&2
swift build -c release --package-path "$ROOT/loadtest" --scratch-path "$SCRATCH" --product webpushbench 2>&1 \
    | grep -E "error|Build complete" >&2 || true
BIN="$SCRATCH/release/webpushbench"
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }
echo "release build, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(openssl version)"
"$BIN" "${N:-2000}"
# The ceiling: OpenSSL's P-256 ECDH operations per second on this machine, now (one core).
CEILING=$(openssl speed -seconds 2 ecdhp256 2>/dev/null | awk '/nistp256/ && /ecdh/ {print $(NF)}' | tail -1)
echo "ceiling: openssl speed ecdhp256 = ${CEILING} ECDH op/s (one core) = $(awk -v c="$CEILING" 'BEGIN {printf "%.1f", 1e6 / c}') us per ECDH"
