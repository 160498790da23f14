#!/usr/bin/env bash
# The cost of a metric update on the delivery path (issue 17): ns per Counter.increment / Histogram.observe, per
# delivery's updates on one and two threads, and malloc calls during the loops (an LD_PRELOADed counter).
#   loadtest/metrics/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$(mktemp -d /tmp/metricsbench.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
cc -O2 -shared -fPIC -o "$OUT/mallocount.so" "$ROOT/loadtest/metrics/mallocount.c"
swiftc -O -wmo -module-name MetricsBench "$ROOT"/Sources/ClarionMetrics/*.swift "$ROOT/loadtest/metrics/main.swift" -o "$OUT/metricsbench"
echo "metric update cost ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
LD_PRELOAD="$OUT/mallocount.so" "$OUT/metricsbench"
