#!/bin/bash
# bench-decode.sh [ROUNDS] — `roce-probe decode --summary` against `tshark -r` on the same
# 100,000-frame captures (pcap and pcapng), whole process against whole process: the comparison
# of issue #2 ("at least 50× faster") and issue 14 ("≥ 100×, with the loss analysis").
#
# Builds roce-probe twice (the default `go build`, which uses cmd/roce-probe/default.pgo, and a
# CGO_ENABLED=0 static build), writes the captures with internal/cmd/rocegen once, then runs
# ROUNDS rounds (default 5) of hyperfine over all six commands and prints, per round and file,
# each mean and the ratio tshark / roce-probe, and the median ratio over the rounds. On a shared
# machine the speed changes from minute to minute; a ratio within one round compares like with
# like. Each round then measures the floors under roce-probe's time (internal/cmd/capfloor): a Go
# process that starts and exits, the same mapping the pcap capture and reading one byte of each
# cache line on every core, and `roce-probe version` (the CLI's own start); and prints the ratio
# tshark would have against roce-probe's start plus that touching: a decode --summary that did
# no work at all.
# Needs hyperfine, jq and tshark: the Debian packages of the same names, which it installs
# with apt-get when they are missing (as root, or through sudo). Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
dir=${BENCH_DIR:-/tmp/roce-probe-bench}
mkdir -p "$dir"
missing=() # commands not on PATH (the Debian packages have the same names)
for t in hyperfine jq tshark; do
	command -v "$t" >/dev/null || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
	. scripts/lib/packages.sh
	ensure_packages bench-decode.sh "${missing[@]}"
fi
for f in pcap pcapng; do
	[ -s "$dir/roce-100k.$f" ] || go run ./internal/cmd/rocegen -n 100000 -o "$dir/roce-100k.$f"
done
go build -o "$dir/roce-probe" ./cmd/roce-probe
CGO_ENABLED=0 go build -o "$dir/roce-probe-static" ./cmd/roce-probe
go build -o "$dir/capfloor" ./internal/cmd/capfloor

: >"$dir/ratios.txt"
printf '%-6s %-7s %12s %12s %12s %8s %8s\n' round file roce-probe static tshark ratio static
for r in $(seq "$rounds"); do
	hyperfine -N -w 3 -r 20 --export-json "$dir/round$r.json" \
		"$dir/roce-probe decode --summary $dir/roce-100k.pcap" \
		"$dir/roce-probe-static decode --summary $dir/roce-100k.pcap" \
		"tshark -r $dir/roce-100k.pcap" \
		"$dir/roce-probe decode --summary $dir/roce-100k.pcapng" \
		"$dir/roce-probe-static decode --summary $dir/roce-100k.pcapng" \
		"tshark -r $dir/roce-100k.pcapng" >/dev/null
	for f in pcap pcapng; do
		# round, file, means in ms (roce-probe, static, tshark), ratios
		jq -r --arg f "$f" --arg r "$r" '
			[.results[] | select(.command | endswith("roce-100k." + $f)) | .mean] as $m |
			"\($r) \($f) \($m[0]*1000) \($m[1]*1000) \($m[2]*1000) \($m[2]/$m[0]) \($m[2]/$m[1])"' \
			"$dir/round$r.json" | tee -a "$dir/ratios.txt" |
			awk '{printf "%-6s %-7s %9.1f ms %9.1f ms %9.1f ms %7.1fx %7.1fx\n", $1, $2, $3, $4, $5, $6, $7}'
	done
	hyperfine -N -w 3 -r 20 --export-json "$dir/floor$r.json" \
		"$dir/capfloor" "$dir/capfloor $dir/roce-100k.pcap" "$dir/roce-probe version" >/dev/null
	# floors in ms: a Go process's start, the same mapping and touching the pcap capture,
	# roce-probe's start; roce-probe's floor on the pcap capture is its start plus the touching
	# (version + touch - Go start); and tshark's mean on the pcap capture (this round) over it
	tpcap=$(awk -v r="$r" '$1 == r && $2 == "pcap" {print $5}' "$dir/ratios.txt")
	jq -r --arg t "$tpcap" '[.results[].mean * 1000] as $m | ($m[2] + $m[1] - $m[0]) as $floor |
		"\($m[0]) \($m[1]) \($m[2]) \($floor) \(($t | tonumber) / $floor)"' "$dir/floor$r.json" |
		awk '{printf "       floors: Go process %.1f ms, + map and touch the pcap %.1f ms; roce-probe version %.1f ms, + the touching %.1f ms: tshark / that %.0fx\n", $1, $2, $3, $4, $5}'
done
for f in pcap pcapng; do
	awk -v f="$f" '$2 == f' "$dir/ratios.txt" | sort -g -k6 | awk -v f="$f" '{v[NR]=$6} END {printf "median ratio, %s: roce-probe %.1fx", f, v[int((NR+1)/2)]}'
	awk -v f="$f" '$2 == f' "$dir/ratios.txt" | sort -g -k7 | awk '{v[NR]=$7} END {printf ", static %.1fx (%d rounds)\n", v[int((NR+1)/2)], NR}'
done
