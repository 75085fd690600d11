#!/bin/bash
# bench-fleet.sh [PEERS] [WINDOW] — one `roce-probe agent` process with a peers file of PEERS
# peers (default 100000) in ToRs of 64, this host the first NIC of the first ToR, at the default
# plan (issue 25; docs/performance.md, "agent at fleet scale").
#
# The agent runs in a test network namespace whose veth routes 10.16.0.0/12 (the peers) to a
# second namespace where nothing answers (as peers behind a router that are all down: every probe
# is lost, nothing replies). Over WINDOW (default 60s) it asks /healthz every second and prints
# the slowest answer, then the agent's CPU (utime+stime over the window, % of one core), its RSS
# (VmRSS at the end, VmHWM the peak), the streams and the probes it sent. Needs root (namespaces,
# raw sockets). Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${1:-100000}
window=${2:-60s}
secs=${window%s}
dir=$(mktemp -d)
a=rpfleet-a-$$ b=rpfleet-b-$$
cleanup() {
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	ip netns del "$a" 2>/dev/null || true
	ip netns del "$b" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
go build -o "$dir/roce-probe" ./cmd/roce-probe
ip netns add "$a"
ip netns add "$b"
ip -n "$a" link add a0 type veth peer name b0 netns "$b"
ip -n "$a" addr add 10.0.0.1/24 dev a0
ip -n "$b" addr add 10.0.0.2/24 dev b0
ip -n "$a" link set a0 up
ip -n "$b" link set b0 up
ip -n "$a" link set lo up
ip -n "$a" route add 10.16.0.0/12 via 10.0.0.2
# The peers file: this host, then PEERS-1 peers 10.16.0.1.. in ToRs of 64.
awk -v n="$peers" 'BEGIN {
	print "self=10.0.0.1 tor=leaf0"
	for (i = 1; i < n; i++)
		printf "n%d=10.%d.%d.%d tor=leaf%d\n", i, 16 + int(i / 65536), int(i / 256) % 256, i % 256, int(i / 64)
}' >"$dir/peers"
echo "peers file: $(wc -l <"$dir/peers") lines, $(stat -c %s "$dir/peers") bytes"
ip netns exec "$a" env ${BENCH_ENV:-} "$dir/roce-probe" agent --listen 127.0.0.1:19469 --peers-file "$dir/peers" \
	--flow name=rdma,netdev=a0,family=ipv4,tclass=106,sl=3 --log-level warn ${BENCH_ARGS:-} 2>"$dir/log" &
# BENCH_ENV="GODEBUG=gctrace=1" shows the garbage collector's work in the log; BENCH_ARGS adds
# arguments to the agent's (e.g. "--config FILE" with "trace: {enabled: false}").
pid=$!
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
# Wait for the first plan (the streams appear on /healthz).
for _ in $(seq 1 100); do
	s=$(ip netns exec "$a" curl -s --max-time 5 http://127.0.0.1:19469/healthz | sed -n 's/.*"streams":\([0-9]*\).*/\1/p' || true)
	[ -n "$s" ] && [ "$s" -gt 0 ] && break
	sleep 0.2
done
t0=$(ticks)
worst=0
for _ in $(seq 1 "$secs"); do
	ms=$(ip netns exec "$a" curl -s -o /dev/null --max-time 10 -w '%{time_total}' http://127.0.0.1:19469/healthz | awk '{printf "%d", $1 * 1000}')
	[ "$ms" -gt "$worst" ] && worst=$ms
	sleep 1
done
t1=$(ticks)
health=$(ip netns exec "$a" curl -s http://127.0.0.1:19469/healthz)
sent=$(ip netns exec "$a" curl -s http://127.0.0.1:19469/metrics | awk '/^roce_probe_(tor_)?probes_sent_total/ {s += $NF} END {print s}')
series=$(ip netns exec "$a" curl -s http://127.0.0.1:19469/metrics | grep -c '^roce_probe_' || true)
echo "agent, $peers peers, $window: CPU $(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$secs" 'BEGIN {printf "%.2f", 100 * d / hz / s}') % of a core;" \
	"$(grep -E '^Vm(RSS|HWM)' "/proc/$pid/status" | tr -s ' \t' ' ' | tr '\n' ' ');" \
	"slowest /healthz ${worst} ms; probes sent ${sent}; roce_probe_ series ${series}"
echo "/healthz: $health"
grep -v '^$' "$dir/log" | tail -${BENCH_LOG_LINES:-5} || true
