#!/bin/bash
# Runs inside the lab (the VM's chroot, or the host itself in native mode),
# as root in the initial network namespace. Usage: guest.sh RUNDIR MODE [OUT]
#   RUNDIR  the run directory made by scripts/lab.sh (bin/, plan, script)
#   MODE    test: build the lab, run the test binaries listed in RUNDIR/plan
#           shell: build the lab and start an interactive shell
#           run: build the lab and run RUNDIR/script with bash
#           plan: print what test would run, one line per test binary run
#           ("run NAME SUFFIX ARGS..." or "none NAME"), and build nothing
#   OUT     where this kernel's results go (default RUNDIR/out)
#
# Three phases. First the single-host lab (roce-probe lab up: rxe0 in the
# initial namespace, the peer namespace): for each plan line
# "NAME<TAB>PKGDIR<TAB>PKG<TAB>TESTS<TAB>FABRICTESTS<TAB>LEAFSPINETESTS"
# (scripts/lab/plan.sh) it runs
# RUNDIR/bin/NAME.test in PKGDIR with -test.run '^(TESTS)$' (the tests of
# its *_lab_test.go files) and writes OUT/NAME.out (-test.v=test2json
# output), NAME.rc and NAME.seconds; artifacts (captures) go to
# OUT/NAME.artifacts (environment LAB_ARTIFACTS). Then, on a kernel whose
# rxe works in every network namespace, the multi-host fabric (roce-probe
# lab up --fabric: hosts h1..h4 behind the switch namespace) and the
# FABRICTESTS (of *_fabric_lab_test.go files) into OUT/NAME.fabric.*; then
# everything is removed (roce-probe lab down), the routed leaf-spine alone
# is built (roce-probe lab up --leaf-spine: its devices and namespaces are
# not in the way of the other phases' tests) and the LEAFSPINETESTS (of
# *_leafspine_lab_test.go files) run into OUT/NAME.leafspine.*. On other
# kernels OUT/multihost.status says why the fabric and leaf-spine tests did
# not run. With RUNDIR/run-regexp (scripts/lab.sh test -run RE) every phase
# uses -test.run RE, each leaving out the other phases' tests. OUT/release is
# the kernel release; OUT/memory.log the guest's memory every 5 s; OUT/done
# marks a finished run.
set -u
run=$1
mode=${2:-test}
out=${3:-$run/out}
mkdir -p "$out"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
export LAB=1
export GOTRACEBACK=all
export LAB_ROCE_PROBE=$run/bin/roce-probe
. "$(dirname "$0")/plan.sh"
rp=$run/bin/roce-probe
timeout=${LAB_TEST_TIMEOUT:-480}
runre=$(cat "$run/run-regexp" 2>/dev/null || true)
dry=0
[ "$mode" = plan ] && dry=1

# run_tests NAME DIR PKG SUFFIX TESTS OTHERS: one test binary run; SUFFIX is
# "", ".fabric" or ".leafspine".
run_tests() {
  local name=$1 dir=$2 pkg=$3 sfx=$4 tests=$5 others=$6 s e
  local args=(-test.v=test2json -test.timeout "${timeout}s" -test.count=1)
  if [ -n "$runre" ]; then
    args+=(-test.run "$runre")
    [ -n "$others" ] && args+=(-test.skip "^(${others})\$")
  else
    args+=(-test.run "^(${tests})\$")
  fi
  if [ "$dry" = 1 ]; then
    echo "run $name ${sfx:-.} ${args[*]}"
    return
  fi
  echo "lab: running $pkg${sfx:+ ($sfx)}"
  mkdir -p "$out/$name$sfx.artifacts"
  s=$(date +%s.%N)
  (cd "$dir" && LAB_ARTIFACTS="$out/$name$sfx.artifacts" timeout -k 10 $((timeout + 30)) "$run/bin/$name.test" "${args[@]}") < /dev/null > "$out/$name$sfx.out" 2>&1
  echo $? > "$out/$name$sfx.rc"
  e=$(date +%s.%N)
  awk -v a="$s" -v b="$e" 'BEGIN{printf "%.1f\n", b-a}' > "$out/$name$sfx.seconds"
}

# run_plan runs (or with dry=1 prints) the three phases of the plan: the
# single-host tests; when some package has fabric tests and the fabric can
# be built (fabric_up; assumed in a dry run), the fabric tests; when some
# package has leaf-spine tests and the leaf-spine can be built
# (leafspine_up, after removing everything else; assumed in a dry run),
# the leaf-spine tests.
run_plan() {
  local name dir pkg tests ftests ltests fabric_pkgs=0 ls_pkgs=0
  while IFS=$'\t' read -r name dir pkg tests ftests ltests; do
    [ -n "$name" ] || continue
    tests=$(plan_tests "$tests") ftests=$(plan_tests "$ftests") ltests=$(plan_tests "$ltests")
    [ -n "$ftests" ] && fabric_pkgs=1
    [ -n "$ltests" ] && ls_pkgs=1
    if [ -z "$tests" ]; then
      if [ "$dry" = 1 ]; then echo "none $name"; else touch "$out/$name.none"; fi
      continue
    fi
    run_tests "$name" "$dir" "$pkg" "" "$tests" "$(plan_join "$ftests" "$ltests")"
  done < "$run/plan"
  if [ "$fabric_pkgs" = 1 ] && { [ "$dry" = 1 ] || fabric_up; }; then
    while IFS=$'\t' read -r name dir pkg tests ftests ltests; do
      tests=$(plan_tests "$tests") ftests=$(plan_tests "$ftests") ltests=$(plan_tests "$ltests")
      [ -n "$name" ] && [ -n "$ftests" ] || continue
      run_tests "$name" "$dir" "$pkg" .fabric "$ftests" "$(plan_join "$tests" "$ltests")"
    done < "$run/plan"
  fi
  [ "$ls_pkgs" = 1 ] || return 0
  [ "$dry" = 1 ] || leafspine_up || return 0
  while IFS=$'\t' read -r name dir pkg tests ftests ltests; do
    tests=$(plan_tests "$tests") ftests=$(plan_tests "$ftests") ltests=$(plan_tests "$ltests")
    [ -n "$name" ] && [ -n "$ltests" ] || continue
    run_tests "$name" "$dir" "$pkg" .leafspine "$ltests" "$(plan_join "$tests" "$ftests")"
  done < "$run/plan"
}

if [ "$dry" = 1 ]; then
  run_plan
  exit 0
fi
uname -r > "$out/release"
# OUT/memory.log: the guest's memory every 5 s ("UPTIME MemAvailable: KB
# MemFree: KB Shmem: KB"), for a run the VM did not finish (labreport).
(
  while :; do
    echo "$(cut -d' ' -f1 /proc/uptime) $(awk '/^(MemAvailable|MemFree|Shmem):/ {printf "%s %s ", $1, $2}' /proc/meminfo)"
    sleep 5
  done
) > "$out/memory.log" 2>/dev/null &
memlog=$!
trap 'kill $memlog 2>/dev/null' EXIT

t0=$(date +%s.%N)
if ! "$rp" lab up > "$out/fabric.log" 2>&1; then
  echo "lab: building the lab failed:"
  cat "$out/fabric.log"
  echo 1 > "$out/fabric.rc"
  touch "$out/done"
  exit 1
fi
echo 0 > "$out/fabric.rc"
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f\n", b-a}' > "$out/fabric.seconds"
{
  echo "== rdma link"; rdma link
  echo "== ip -d link"; ip -d link
  echo "== ip addr"; ip addr
  echo "== ip netns exec peer ip addr"; ip netns exec peer ip addr
} >> "$out/fabric.log" 2>&1

# fabric_up builds the multi-host fabric next to the single-host lab (in
# shell and run modes also the leaf-spine: fabric_extra), or writes why it
# cannot into multihost.status.
fabric_extra=
case "$mode" in shell|run) fabric_extra=--leaf-spine ;; esac
fabric_up() {
  if "$rp" lab up --fabric $fabric_extra > "$out/multihost.log" 2>&1; then
    echo ok > "$out/multihost.status"
    return 0
  fi
  if grep -q 'works only in the initial network namespace' "$out/multihost.log"; then
    tail -1 "$out/multihost.log" | sed 's/^Error: //' > "$out/multihost.status"
    return 1
  fi
  echo "building the fabric failed: $(cat "$out/multihost.log")" > "$out/multihost.status"
  echo 1 > "$out/fabric.rc"
  cat "$out/multihost.log" >> "$out/fabric.log"
  return 1
}

# leafspine_up removes the single-host lab and the bridged fabric (their
# RDMA devices are visible in every namespace in shared mode) and builds
# the leaf-spine alone, or writes why it cannot: the kernel's reason into
# multihost.status, a failure into fabric.rc and fabric.log.
leafspine_up() {
  "$rp" lab down > "$out/leafspine.log" 2>&1
  if "$rp" lab up --leaf-spine >> "$out/leafspine.log" 2>&1; then
    echo ok > "$out/leafspine.status"
    return 0
  fi
  if grep -q 'works only in the initial network namespace' "$out/leafspine.log"; then
    [ -s "$out/multihost.status" ] || tail -1 "$out/leafspine.log" | sed 's/^Error: //' > "$out/multihost.status"
    return 1
  fi
  echo "building the leaf-spine failed: $(cat "$out/leafspine.log")" > "$out/leafspine.status"
  echo 1 > "$out/fabric.rc"
  cat "$out/leafspine.log" >> "$out/fabric.log"
  return 1
}

case "$mode" in
  run)
    [ -z "${LAB_NO_FABRIC:-}" ] && fabric_up
    echo "lab: running $run/script"
    (cd "$run" && timeout -k 10 "${LAB_TEST_TIMEOUT:-480}" bash "$run/script") > "$out/script.log" 2>&1
    echo $? > "$out/script.rc"
    sync
    touch "$out/done"
    exit 0 ;;
  shell)
    fabric_up
    echo "lab: the lab is up (see $out/fabric.log; fabric: $(cat "$out/multihost.status")); exit the shell to power off"
    cd "$run" && setsid -c /bin/bash -l
    touch "$out/done"
    exit 0 ;;
esac

run_plan
sync
touch "$out/done"
