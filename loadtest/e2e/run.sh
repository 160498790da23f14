#!/usr/bin/env bash
# The fan-out as users run it (issue 20): `clarion serve` on its embedded PostgreSQL, `clarion emulator` as its own
# process, N endpoints (half APNs, half FCM) and their subscriptions through the bulk import routes, one SNS Publish
# to the topic, completion from GET /v1/messages/{id}; then h2load against the same emulator as the ceiling.
# PLATFORM=webpush: N Web Push subscriptions instead (the emulator over TLS, encrypted pushes).
#
#   loadtest/e2e/run.sh                 # N=1000000, release build
#   N=100000 loadtest/e2e/run.sh
#   BIN=.build/debug/clarion N=20000 loadtest/e2e/run.sh
#   PLATFORM=webpush N=100000 loadtest/e2e/run.sh
#   SAMPLE=100 N=100000 loadtest/e2e/run.sh       # SuccessFeedbackSampleRate 100: every delivery logged
#   NODES=2 N=1000000 loadtest/e2e/run.sh        # then a second node on the same PostgreSQL, the same publish again
#
# Needs h2load (nghttp2-client) and the Python packages scripts/install-deps --python installs.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -z "${BIN:-}" ]; then
  (cd "$ROOT" && swift build -c release --product clarion 2>&1 | grep -E "error|warning: " || true)
  BIN="$ROOT/.build/release/clarion"
fi
[ -x "$BIN" ] || { echo "no clarion binary at $BIN" >&2; exit 1; }
command -v h2load >/dev/null || { echo "h2load is missing (apt-get install nghttp2-client)" >&2; exit 1; }
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" exec python3 "$ROOT/loadtest/e2e/drive.py"
