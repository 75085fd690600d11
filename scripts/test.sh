#!/usr/bin/env bash
# The whole test suite: static checks, unit tests (also under the race
# detector), the ibverbs build, fuzz smoke runs and the Soft-RoCE lab.
# Installs what it needs first.
#   scripts/test.sh            everything
#   scripts/test.sh --no-lab   everything but the lab
# FUZZTIME (default 3s) sets how long each fuzz target runs.
set -euo pipefail
cd "$(dirname "$0")/.."
lab=1
for a in "$@"; do
  case "$a" in
    --no-lab) lab=0 ;;
    *) echo "usage: scripts/test.sh [--no-lab]" >&2; exit 2 ;;
  esac
done
step() { printf '\n=== %s\n' "$*"; }

step "dependencies"
scripts/deps.sh

step "gofmt, go vet, pure-Go build"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
CGO_ENABLED=0 go build ./...
# Collect on the host, analyse anywhere: decode and every --from analysis
# build for the laptops operators use.
for target in darwin/amd64 darwin/arm64 windows/amd64; do
  echo "cross-build $target"
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build -o /dev/null ./cmd/roce-probe
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go vet ./roce/... ./gid ./vlan ./qos ./ah ./host ./counters ./fabric/...
done
go vet -tags ibverbs ./...
go vet -tags lab ./...

step "deploy: manifests and alert rules"
# deploy/validate is a module of its own (the Kubernetes and Prometheus types
# stay out of roce-probe's module; it requires roce-probe's module replaced by
# this checkout, ../..): its tests decode every manifest strictly, parse every
# agent configuration with the agent's own parser (internal/agent) and check
# the security settings. promtool (Debian package prometheus) checks
# and unit-tests the alert rules and the scrape configuration.
(cd deploy/validate && go mod download && go vet ./... && ROCE_PROBE_CI=1 go test -count=1 ./...)
promtool check rules deploy/prometheus/rules.yml
promtool test rules deploy/prometheus/rules_test.yml
promtool check config deploy/prometheus/prometheus.yml

step "examples: an application's module"
# examples/ is a module of its own (example.com/roceapp, outside
# roce-probe's import path, so Go refuses its imports of internal/
# packages): what an application developer does through the public
# packages, with roce-probe's module replaced by this checkout (..).
(cd examples && go vet ./... && go test -count=1 ./...)

step "unit tests"
# ROCE_PROBE_CI=1 turns "tool missing" skips (tshark) into failures.
ROCE_PROBE_CI=1 go test -count=1 ./...

step "unit tests under the race detector"
# Summarize decodes on several goroutines, gid.ReadAll reads ports
# concurrently, the prober and listener run goroutines per socket.
go test -race -count=1 ./...

step "fuzz smoke runs (${FUZZTIME:=3s} each)"
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "--- $pkg $f"
    # -fuzzminimizetime bounds how long the fuzzer shrinks each new
    # interesting input (default: up to a minute each, which can take the
    # whole run: FuzzSummarize managed a few dozen executions in 10 s).
    # The Go fuzzer sometimes reports its own time limit as a failure
    # ("context deadline exceeded", no failing input written): try again,
    # up to three times. A real failure writes its input and stops at once.
    for try in 1 2 3; do
      out=$(go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 200x "$pkg" 2>&1) && ok=1 || ok=0
      if [ "$ok" = 1 ] || ! grep -q 'context deadline exceeded' <<<"$out" || grep -q 'Failing input written' <<<"$out"; then
        break
      fi
      echo "(try $try: the fuzzer reported its own deadline, no failing input)"
    done
    if [ "$ok" = 0 ]; then
      echo "$out"
      echo "fuzz target $f in $pkg failed; the failing input is under testdata/fuzz/$f/ in that package"
      exit 1
    fi
    echo "$out" | tail -1
  done
done

if [ "$lab" = 1 ] && [ -x scripts/lab.sh ]; then
  step "lab suite"
  scripts/lab.sh test
  step "lab snapshots analysed here (a machine without RDMA devices)"
  # TestLabLiveEqualsSnapshot kept, for each kernel, a snapshot collected in
  # the lab and what the commands printed live there: from the snapshot,
  # this machine must print the same.
  ROCE_PROBE_LAB_RUN="$(readlink -f .lab-cache/last)" go test -count=1 -run '^TestLabSnapshotsOffline$' -v ./cmd/roce-probe | grep -E '^(---|ok|FAIL|PASS)|answer from the snapshot'
fi
echo
echo "all tests passed"
