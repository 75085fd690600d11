#!/bin/bash
# bench-agent.sh [WINDOW] — `roce-probe agent` with 500 peers probed once a second, side by side
# with prometheus-node-exporter on the same machine (issue 15, item 6; docs/performance.md).
#
# Installs prometheus-node-exporter (Debian package) if it is missing, then runs
# BenchmarkAgent500Peers (internal/agent/bench_linux_test.go) once: an agent process in a test
# network namespace probes 500 peers simulated in a second namespace (probing: 500 probes out,
# 500 replies in a second; full-mesh: the peers also probe the agent, 1,000 frames each way a
# second), while the node exporter runs beside it with its default collectors. Both are scraped
# every 15 s over the WINDOW (default 60s), then /metrics of each is fetched 20 times in a row.
# Prints CPU (% of one core, utime+stime over the window), RSS (VmRSS, VmHWM) and the /metrics
# times. Needs root (namespaces, raw sockets). Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
window=${1:-60s}
ne=/usr/bin/prometheus-node-exporter
if [ ! -x "$ne" ]; then
	. scripts/lib/packages.sh
	ensure_packages bench-agent.sh prometheus-node-exporter
	# The package starts the service on port 9100; the benchmark runs its own on 19100.
	as_root systemctl stop prometheus-node-exporter 2>/dev/null || true
fi
echo "node exporter: $($ne --version 2>&1 | head -1)"
NODE_EXPORTER=$ne ROCE_PROBE_BENCH_WINDOW=$window \
	go test -run '^$' -bench '^BenchmarkAgent500Peers$' -benchtime 1x -timeout 30m -v ./internal/agent |
	grep -E '^(Benchmark|    bench_linux_test.go)|^(ok|FAIL|PASS)'
