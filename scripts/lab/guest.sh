#!/bin/bash
# Runs inside the lab (the VM's chroot, or the host itself in native mode),
# as root in the initial network namespace. Usage: guest.sh RUNDIR MODE
#   RUNDIR  the run directory made by scripts/lab.sh (bin/, plan, out/)
#   MODE    test: build the fabric, run the test binaries listed in RUNDIR/plan
#           shell: build the fabric and start an interactive shell
# For each plan line "NAME<TAB>PKGDIR<TAB>PKG<TAB>TESTS" it runs
# RUNDIR/bin/NAME.test in PKGDIR (with -test.run RUNDIR/run-regexp, or else
# -test.run '^(TESTS)$', TESTS being the tests of its *_lab_test.go files) and writes RUNDIR/out/NAME.out (-test.v=test2json output), NAME.rc and
# NAME.seconds; test artifacts (captures) go to RUNDIR/out/NAME.artifacts
# (environment LAB_ARTIFACTS). RUNDIR/out/done marks a finished run.
set -u
run=$1
mode=${2:-test}
out=$run/out
mkdir -p "$out"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
export LAB=1
export GOTRACEBACK=all

t0=$(date +%s.%N)
if ! "$run/bin/roce-probe" lab up > "$out/fabric.log" 2>&1; then
  echo "lab: building the fabric failed:"
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

if [ "$mode" = shell ]; then
  echo "lab: fabric is up (see $out/fabric.log); exit the shell to power off"
  cd "$run" && setsid -c /bin/bash -l
  touch "$out/done"
  exit 0
fi

timeout=${LAB_TEST_TIMEOUT:-300}
runre=$(cat "$run/run-regexp" 2>/dev/null || true)
while IFS=$'\t' read -r name dir pkg labtests; do
  [ -n "$name" ] || continue
  echo "lab: running $pkg"
  mkdir -p "$out/$name.artifacts"
  args=(-test.v=test2json -test.timeout "${timeout}s" -test.count=1)
  if [ -n "$runre" ]; then
    args+=(-test.run "$runre")
  else
    args+=(-test.run "^(${labtests})\$")
  fi
  s=$(date +%s.%N)
  (cd "$dir" && LAB_ARTIFACTS="$out/$name.artifacts" timeout -k 10 $((timeout + 30)) "$run/bin/$name.test" "${args[@]}") > "$out/$name.out" 2>&1
  echo $? > "$out/$name.rc"
  e=$(date +%s.%N)
  awk -v a="$s" -v b="$e" 'BEGIN{printf "%.1f\n", b-a}' > "$out/$name.seconds"
done < "$run/plan"
sync
touch "$out/done"
