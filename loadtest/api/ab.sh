#!/usr/bin/env bash
# Alternating A/B of clarion builds on the API benchmark: each round runs every build once, each on a fresh
# embedded PostgreSQL, through run.sh (wrk after a warm-up), and prints one line per run: the build, req/s and the
# CPU per request of server, PostgreSQL and wrk. Alternating rounds is what makes builds comparable on a machine
# whose speed drifts by 10-15 % between minutes; CPU per request is the steadier figure.
#
#   loadtest/api/ab.sh /tmp/clarion.before /tmp/clarion.after           # signed Publish, c256, 10 s, 3 rounds
#   ROUNDS=2 SCENARIOS=native CONNECTIONS=64 loadtest/api/ab.sh A B C
#
# Builds are clarion binaries (copy .build/release/clarion aside for each). CLARION_PUBLISH_WRITERS and other
# CLARION_ settings in the environment reach every build alike.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN ...]" >&2; exit 2; }
for round in $(seq 1 "${ROUNDS:-3}"); do
  for bin in "$@"; do
    out=$(BIN="$bin" SCENARIOS="${SCENARIOS:-signed}" CONNECTIONS="${CONNECTIONS:-256}" DURATION="${DURATION:-10s}" \
          WARMUP="${WARMUP:-3s}" "$here/run.sh" 2>/dev/null)
    load=$(echo "$out" | sed -n 's/.*load \([0-9.]*\).*/\1/p' | head -1)
    echo "$out" | awk -v bin="$bin" -v round="$round" -v load="$load" '
      /^-- / { label = $2 " " $3 }
      /Requests\/sec/ { rps = $2 }
      /^CPU per request/ { sub(/^CPU per request: /, ""); printf "round %s  %-28s load %-5s %-12s %9s req/s  %s\n", round, bin, load, label, rps, $0 }'
  done
done
