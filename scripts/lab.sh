#!/usr/bin/env bash
# The Soft-RoCE lab: runs lab tests (build tags lab ibverbs) inside a real
# RoCE v2 fabric (rdma_rxe on a veth pair, VLANs, a peer namespace; on 7.x
# also the bridged multi-host fabric and the routed leaf-spine). See
# docs/lab.md.
#
#   scripts/lab.sh test [--kernel K] [-run REGEXP] [PKG...]  build and run lab tests
#   scripts/lab.sh shell --kernel K              a root shell inside the lab
#   scripts/lab.sh run --kernel K SCRIPT         run a bash script (as root) inside the lab
#   scripts/lab.sh prepare [--kernel K]          install, fetch and cache only
#
# K is one kernel or a comma-separated list (also LAB_KERNELS; default
# 6.1,7): 6.1 is bookworm's, 7 the newest from trixie-backports.
#
# Native mode when the running kernel can load rdma_rxe and 8021q (needs root;
# it builds the fabric in this machine's kernel and removes it afterwards);
# VM mode otherwise: a Debian kernel booted under qemu (TCG) that runs this
# machine's own binaries from its root file system shared read-only over 9p.
# LAB_MODE=native|vm forces a mode. Other knobs: LAB_VM_TIMEOUT (seconds for
# the whole VM run, default 1500), LAB_TEST_TIMEOUT (per test binary in the guest, 480),
# LAB_VM_MEM (MiB, 2048), LAB_VM_CPUS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lab/plan.sh
cache=$root/.lab-cache

say() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }
usage() {
  sed -n '7,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

# --- packages -----------------------------------------------------------
# prometheus: the real Prometheus (and promtool) of internal/agent's fabric
# test. lldpd: a switch's LLDP in collect's TestLabLLDP.
vm_packages=(qemu-system-x86 busybox-static kmod cpio xz-utils rdma-core ibverbs-providers ibverbs-utils libibverbs-dev iproute2 tcpdump
  perftest rdmacm-utils tshark prometheus lldpd)
native_packages=(kmod rdma-core ibverbs-providers ibverbs-utils libibverbs-dev iproute2 tcpdump perftest rdmacm-utils tshark prometheus lldpd)

# ensure_packages, as_root
# shellcheck source=lib/packages.sh
. scripts/lib/packages.sh

# --- mode ---------------------------------------------------------------
detect_mode() {
  if [ -n "${LAB_MODE:-}" ]; then echo "$LAB_MODE"; return; fi
  if [ "$(id -u)" = 0 ] &&
     { [ -d /sys/module/rdma_rxe ] || modprobe -n -q rdma_rxe 2>/dev/null; } &&
     { [ -d /sys/module/8021q ] || modprobe -n -q 8021q 2>/dev/null; }; then
    echo native
  else
    echo vm
  fi
}

# --- kernel and initramfs (VM mode) -------------------------------------
# Modules the VM loads, with their dependencies resolved by modprobe. A
# module a kernel has built in (7.x: virtio_pci; crc32_generic is gone, the
# crc32 library is built in) is skipped.
vm_modules=(virtio_pci 9pnet_virtio 9p overlay veth 8021q macvlan bonding crc32_generic rdma_rxe ib_uverbs rdma_ucm
  bridge sch_ingress sch_prio sch_netem cls_flower act_pedit act_csum act_vlan act_skbedit act_gact)

# Kernels the lab knows (LAB_KERNELS, --kernel): the Debian suite whose
# linux-image-amd64 is the kernel. Each suite is read with a side apt source
# list of its own (.lab-cache/apt/SUITE), never the machine's sources.
#   6.1  bookworm's kernel: rxe works only in the initial network namespace
#   7    trixie-backports' newest kernel (7.x): rxe works in any namespace,
#        so the multi-host fabric runs there
kernel_sources() {
  local mirror=http://deb.debian.org/debian sec=http://deb.debian.org/debian-security
  local key=/usr/share/keyrings/debian-archive-keyring.gpg
  case "$1" in
    6.1) printf 'deb [signed-by=%s] %s bookworm main\ndeb [signed-by=%s] %s bookworm-updates main\ndeb [signed-by=%s] %s bookworm-security main\n' \
           "$key" "$mirror" "$key" "$mirror" "$key" "$sec" ;;
    7) printf 'deb [signed-by=%s] %s trixie-backports main\n' "$key" "$mirror" ;;
    *) return 1 ;;
  esac
}
known_kernels="6.1, 7"

# side_apt SPEC ARGS...: apt-get/apt-cache with SPEC's side source list only.
side_apt() {
  local spec=$1 tool=$2 d=$cache/apt/$1
  shift 2
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  "$tool" -o Dir::Etc::sourcelist="$d/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" -o Dir::State::status=/dev/null \
    -o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1 "$@"
}

# prepare_kernel SPEC: resolves linux-image-amd64 in SPEC's suite to the real
# kernel package (linux-image-KVER), downloads it and, from 7.x on, the
# packages it is split into (linux-binary-KVER with the modules' binaries,
# linux-modules-KVER, linux-base-KVER), and caches vmlinuz, the modules (with
# depmod) and the release in .lab-cache/kernel/PKG-VERSION. Offline, the
# newest cached kernel of that SPEC is used. Sets kernel_dir.
kernel_dir=
prepare_kernel() {
  local spec=$1 kpkg="" kver="" dir d=$cache/apt/$1 deps p
  mkdir -p "$d"
  kernel_sources "$spec" > "$d/sources.list" || die "unknown kernel '$spec': LAB_KERNELS/--kernel takes $known_kernels"
  if side_apt "$spec" apt-get update -qq >"$d/update.log" 2>&1; then
    kpkg=$(side_apt "$spec" apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}') || true
  fi
  if [ -n "$kpkg" ]; then
    kver=$(side_apt "$spec" apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')
  fi
  if [ -z "$kpkg" ] || [ -z "$kver" ] || [ "$kver" = "(none)" ]; then
    # Offline: use the newest cached kernel of this spec, if any.
    dir=$(ls -1dt "$cache"/kernel/linux-image-"$spec".* 2>/dev/null | head -1 || true)
    [ -n "$dir" ] || die "kernel $spec: cannot resolve linux-image-amd64 with $d/sources.list ($(tail -1 "$d/update.log" 2>/dev/null)) and no such kernel is cached in $cache/kernel"
    say "kernel $spec: apt cannot resolve linux-image-amd64; using cached $(basename "$dir")"
    kernel_dir=$dir
    return
  fi
  case "$kpkg" in
    linux-image-"$spec".*) ;;
    *) die "kernel $spec: linux-image-amd64 resolves to $kpkg, not a $spec.x kernel (see kernel_sources in $0)" ;;
  esac
  dir=$cache/kernel/$kpkg-$kver
  if [ ! -f "$dir/ok" ]; then
    # 7.x: linux-image-KVER only depends on the packages holding the files.
    deps=$(side_apt "$spec" apt-cache depends "$kpkg" 2>/dev/null |
      awk -v k="${kpkg#linux-image-}" '$1 == "Depends:" && $2 ~ "^linux-(binary|modules|base)-" && substr($2, length($2) - length(k) + 1) == k {print $2}')
    say "kernel $spec: fetching $kpkg $kver${deps:+ and $(echo $deps)} (apt-get download)"
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$dir.tmp/deb"
    local want=("$kpkg=$kver")
    for p in $deps; do want+=("$p=$kver"); done
    (cd "$dir.tmp/deb" && side_apt "$spec" apt-get download "${want[@]}" >"$dir.tmp/download.log" 2>&1) ||
      die "kernel $spec: apt-get download ${want[*]} failed: $(tail -3 "$dir.tmp/download.log")"
    for p in "$dir.tmp"/deb/*.deb; do dpkg-deb -x "$p" "$dir.tmp/x"; done
    # Modules under lib/modules (bookworm) or usr/lib/modules (merged /usr).
    local mods release
    for mods in "$dir.tmp/x/lib/modules" "$dir.tmp/x/usr/lib/modules"; do
      [ -d "$mods" ] && release=$(ls "$mods" | head -1) && [ -n "$release" ] && break
    done
    [ -n "${release:-}" ] || die "kernel $spec: $kpkg has no lib/modules or usr/lib/modules"
    mkdir -p "$dir.tmp/root/lib/modules"
    if [ -f "$dir.tmp/x/boot/vmlinuz-$release" ]; then
      cp "$dir.tmp/x/boot/vmlinuz-$release" "$dir.tmp/vmlinuz"
    elif [ -f "$mods/$release/vmlinuz" ]; then
      mv "$mods/$release/vmlinuz" "$dir.tmp/vmlinuz"
    else
      die "kernel $spec: no boot/vmlinuz-$release or usr/lib/modules/$release/vmlinuz in ${want[*]}"
    fi
    mv "$mods/$release" "$dir.tmp/root/lib/modules/"
    depmod -b "$dir.tmp/root" "$release"
    echo "$release" > "$dir.tmp/release"
    rm -rf "$dir.tmp/x" "$dir.tmp/deb"
    touch "$dir.tmp/ok"
    mv "$dir.tmp" "$dir"
  fi
  kernel_dir=$dir
}

# prepare_initramfs: a busybox PID 1 (scripts/lab/init) and vm_modules with
# their dependencies, decompressed (busybox insmod takes plain .ko files),
# for kernel_dir. Cached per kernel; sets initramfs.
initramfs=
prepare_initramfs() {
  local release key tmp m kind path b
  release=$(cat "$kernel_dir/release")
  key=$( { cat scripts/lab/init; echo "${vm_modules[*]}"; basename "$kernel_dir"; dpkg-query -W busybox-static 2>/dev/null || true; } | sha256sum | cut -c1-16)
  initramfs=$cache/initramfs-$key.cpio.gz
  [ -f "$initramfs" ] && return 0
  say "building initramfs for $release ($key)"
  tmp=$(mktemp -d)
  mkdir -p "$tmp"/{bin,proc,sys,dev,modules,tmp}
  cp /bin/busybox "$tmp/bin/busybox"
  cp scripts/lab/init "$tmp/init"
  chmod 755 "$tmp/init"
  : > "$tmp/modules.list"
  for m in "${vm_modules[@]}"; do
    if grep -q "/$m\.ko" "$kernel_dir/root/lib/modules/$release/modules.builtin" 2>/dev/null; then
      continue
    fi
    if ! modprobe -d "$kernel_dir/root" -S "$release" --show-depends "$m" > "$tmp/deps" 2>/dev/null; then
      say "$release has no module $m; left out"
      continue
    fi
    while read -r kind path _; do
      [ "$kind" = insmod ] || continue
      b=$(basename "$path")
      case "$b" in
        *.ko.xz) b=${b%.xz}; grep -qx "$b" "$tmp/modules.list" || xz -dc "$path" > "$tmp/modules/$b" ;;
        *.ko.zst) b=${b%.zst}; grep -qx "$b" "$tmp/modules.list" || zstd -qdc "$path" > "$tmp/modules/$b" ;;
        *.ko) grep -qx "$b" "$tmp/modules.list" || cp "$path" "$tmp/modules/$b" ;;
        *) die "unexpected module file $path" ;;
      esac
      grep -qx "$b" "$tmp/modules.list" || echo "$b" >> "$tmp/modules.list"
    done < "$tmp/deps"
  done
  rm -f "$tmp/deps"
  (cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$initramfs.tmp"
  mv "$initramfs.tmp" "$initramfs"
  rm -rf "$tmp"
}

# --- test binaries ------------------------------------------------------
run=
new_run_dir() {
  mkdir -p "$cache/runs"
  # Keep the last 5 runs.
  ls -1dt "$cache"/runs/* 2>/dev/null | tail -n +5 | xargs -r rm -rf || true
  run=$cache/runs/$(date +%Y%m%d-%H%M%S)-$$
  mkdir -p "$run/bin" "$run/out"
  ln -sfn "runs/$(basename "$run")" "$cache/last"
  cp scripts/lab/guest.sh scripts/lab/plan.sh "$run/"
  : > "$run/plan"
}

lab_test_dirs() {
  { git ls-files -co --exclude-standard -- '*_lab_test.go' 2>/dev/null ||
    find . -name '*_lab_test.go' -not -path './.lab-cache/*'; } | xargs -r -n1 dirname | sed 's|^\./||' | sort -u
}

test_names() { sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' | sort -u | paste -sd'|' -; }

build_binaries() {
  local t pkg dir name tests
  t=$(now)
  CGO_ENABLED=0 go build -o "$run/bin/roce-probe" ./cmd/roce-probe
  local args=("$@")
  if [ ${#args[@]} -eq 0 ]; then
    mapfile -t args < <(lab_test_dirs)
    args=("${args[@]/#/./}")
  fi
  [ ${#args[@]} -gt 0 ] || die "no lab tests found (*_lab_test.go)"
  for a in "${args[@]}"; do
    while IFS=$'\t' read -r pkg dir; do
      name=$(echo "${pkg#github.com/roce-probe/roce-probe}" | sed 's|^/||; s|[/.]|_|g')
      [ -n "$name" ] || name=root
      say "compiling $pkg"
      go test -c -tags 'lab ibverbs' -o "$run/bin/$name.test" "$pkg" ||
        die "go test -c -tags 'lab ibverbs' $pkg failed"
      if [ -f "$run/bin/$name.test" ]; then
        # Without -run, only the tests defined in *_lab_test.go files run
        # (the binary also holds the package's unit tests).
        # Single-host lab tests (*_lab_test.go), fabric tests
        # (*_fabric_lab_test.go, run with the bridged multi-host fabric
        # up) and leaf-spine tests (*_leafspine_lab_test.go, run with only
        # the routed leaf-spine up).
        tests=$(ls "$dir"/*_lab_test.go 2>/dev/null | grep -v -e '_fabric_lab_test\.go$' -e '_leafspine_lab_test\.go$' | xargs -r cat | test_names) || true
        ftests=$(cat "$dir"/*_fabric_lab_test.go 2>/dev/null | test_names) || true
        ltests=$(cat "$dir"/*_leafspine_lab_test.go 2>/dev/null | test_names) || true
        plan_add "$run/plan" "$name" "$dir" "$pkg" "$tests" "$ftests" "$ltests"
      else
        say "$pkg has no test files with tags lab ibverbs; skipped"
      fi
    done < <(go list -tags 'lab ibverbs' -f '{{.ImportPath}}{{"\t"}}{{.Dir}}' "$a")
  done
  say "compiled in $(elapsed "$t")s"
}

# --- running ------------------------------------------------------------
# run_vm MODE SPEC: boots SPEC's kernel (kernel_dir, initramfs) with the run
# directory; the guest writes its results to $run/out-SPEC.
run_vm() {
  local mode=$1 spec=$2 t rc=0 out=$run/out-$2
  local mem=${LAB_VM_MEM:-2048} cpus=${LAB_VM_CPUS:-2} tmo=${LAB_VM_TIMEOUT:-1500}
  local qemu=(qemu-system-x86_64 -accel tcg,thread=multi -m "$mem" -smp "$cpus"
    -nographic -nodefaults -no-reboot
    -kernel "$kernel_dir/vmlinuz" -initrd "$initramfs"
    -append "console=ttyS0 quiet loglevel=4 panic=-1 lab.run=$run lab.mode=$mode lab.out=$out"
    -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot"
    -fsdev "local,id=labrun,path=$run,security_model=none,multidevs=remap"
    -device "virtio-9p-pci,fsdev=labrun,mount_tag=labrun")
  mkdir -p "$out"
  t=$(now)
  if [ "$mode" = shell ]; then
    "${qemu[@]}" -serial mon:stdio || rc=$?
    return $rc
  fi
  say "kernel $spec: booting $(basename "$kernel_dir") under qemu (TCG); console: $out/console.log"
  timeout -k 10 "$tmo" "${qemu[@]}" -serial "file:$out/console.log" < /dev/null > "$out/qemu.log" 2>&1 || rc=$?
  echo "$(elapsed "$t")" > "$out/vm-seconds"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    say "kernel $spec: the VM did not finish within ${tmo}s (LAB_VM_TIMEOUT); last console lines:"
    tail -n 40 "$out/console.log" >&2 || true
    return 1
  fi
  if [ ! -f "$out/boot-seconds" ]; then
    if grep -q 'lab-init: FAILED' "$out/console.log" 2>/dev/null; then
      say "kernel $spec: the VM booted but could not set up its file systems (qemu exit $rc); qemu said:"
    else
      say "kernel $spec: the VM failed to boot (qemu exit $rc); qemu said:"
    fi
    cat "$out/qemu.log" >&2
    say "last console lines:"
    tail -n 40 "$out/console.log" >&2 || true
    return 1
  fi
  if [ ! -f "$out/done" ]; then
    say "kernel $spec: the VM booted but the lab run did not finish (qemu exit $rc); last console lines:"
    tail -n 40 "$out/console.log" >&2 || true
    return 1
  fi
  say "kernel $spec: booted in $(cat "$out/boot-seconds")s (guest clock), whole VM run $(cat "$out/vm-seconds")s"
}

# kernel_crash OUT prints the first line of OUT/console.log that says the
# guest kernel crashed (a panic, an oops, a fatal exception) in a run that
# did not finish, or nothing (also when the guest ran out of memory).
kernel_crash() {
  [ -f "$1/done" ] && return 0
  # Out of memory is the lab's own doing (its VM size, its tests), not a
  # kernel crash: never retried.
  grep -a -q -E 'Out of memory|oom-kill' "$1/console.log" 2>/dev/null && return 0
  grep -a -m1 -E 'Kernel panic|Fatal exception|BUG: |Oops:|general protection fault' "$1/console.log" 2>/dev/null |
    tr -d '\r' | sed 's/^\[ *[0-9.]*\] //' || true
}

run_native() {
  local mode=$1 rc=0 t out=$run/out-native
  t=$(now)
  mkdir -p "$out"
  "$run/bin/roce-probe" lab down >/dev/null 2>&1 || true
  bash "$run/guest.sh" "$run" "$mode" "$out" || rc=$?
  "$run/bin/roce-probe" lab down >/dev/null 2>&1 || true
  say "native run $(elapsed "$t")s"
  return $rc
}

# report: test2json for every kernel's outputs, then labreport (one line per
# package and kernel, failures with their kernel, a line per kernel, the
# total).
report() {
  local name dir pkg out rc=0 spec
  while IFS=$'\t' read -r spec out; do
    # A run that did not finish is converted too: labreport shows the
    # units that ran and the tests of the one that was running.
    [ -d "$out" ] || continue
    while IFS=$'\t' read -r name dir pkg _; do
      # NAME.out: the single-host tests; NAME.fabric.out: the fabric
      # tests; NAME.leafspine.out: the leaf-spine tests.
      for f in "$name" "$name.fabric" "$name.leafspine"; do
        if [ -f "$out/$f.out" ]; then
          go tool test2json -t -p "$pkg" < "$out/$f.out" > "$out/$f.json" || true
        fi
      done
    done < "$run/plan"
  done < "$run/kernels"
  go run ./internal/lab/cmd/labreport "$run" || rc=$?
  return $rc
}

# --- main ---------------------------------------------------------------
cmd=${1:-}
[ -n "$cmd" ] || usage
shift
runre=
pkgs=()
kernels=${LAB_KERNELS:-6.1,7}
while [ $# -gt 0 ]; do
  case "$1" in
    -run) [ "$cmd" = test ] && [ $# -ge 2 ] || usage; runre=$2; shift 2 ;;
    -run=*) [ "$cmd" = test ] || usage; runre=${1#-run=}; shift ;;
    -kernel|--kernel) [ $# -ge 2 ] || usage; kernels=$2; shift 2 ;;
    -kernel=*|--kernel=*) kernels=${1#*=}; shift ;;
    -h|--help) usage ;;
    -*) say "unknown flag $1"; usage ;;
    *) [ "$cmd" = test ] || [ "$cmd" = run ] || usage; pkgs+=("$1"); shift ;;
  esac
done
case "$cmd" in test|shell|prepare) ;; run) [ ${#pkgs[@]} -eq 1 ] && [ -f "${pkgs[0]}" ] || usage ;; *) usage ;; esac
IFS=', ' read -r -a specs <<<"$kernels"
[ ${#specs[@]} -gt 0 ] || die "LAB_KERNELS/--kernel is empty: want one or more of $known_kernels"
for k in "${specs[@]}"; do
  kernel_sources "$k" >/dev/null || die "unknown kernel '$k' in LAB_KERNELS/--kernel: want one or more of $known_kernels, comma-separated"
done
if { [ "$cmd" = shell ] || [ "$cmd" = run ]; } && [ ${#specs[@]} -ne 1 ]; then
  die "$cmd boots one kernel: add --kernel 6.1 or --kernel 7"
fi

start=$(now)
mode=$(detect_mode)
say "mode: $mode"
declare -A kdirs kinitrd
if [ "$mode" = vm ]; then
  ensure_packages lab "${vm_packages[@]}"
  used=()
  for k in "${specs[@]}"; do
    t=$(now)
    prepare_kernel "$k"
    prepare_initramfs
    kdirs[$k]=$kernel_dir
    kinitrd[$k]=$initramfs
    used+=("$initramfs")
    say "kernel $k: kernel and initramfs ready in $(elapsed "$t")s ($(cat "$kernel_dir/release"))"
  done
  # Drop initramfs images of kernels or init scripts no longer used, unless
  # another kernel spec (not asked for this time) may still use them.
  if [ ${#specs[@]} -ge 2 ]; then
    for f in "$cache"/initramfs-*.cpio.gz; do
      [ -e "$f" ] || continue
      printf '%s\n' "${used[@]}" | grep -qx "$f" || rm -f "$f"
    done
  fi
else
  ensure_packages lab "${native_packages[@]}"
fi
[ "$cmd" = prepare ] && exit 0

new_run_dir
if [ "$cmd" = shell ]; then
  CGO_ENABLED=0 go build -o "$run/bin/roce-probe" ./cmd/roce-probe
  if [ "$mode" = vm ]; then
    kernel_dir=${kdirs[${specs[0]}]} initramfs=${kinitrd[${specs[0]}]}
    run_vm shell "${specs[0]}"
  else
    run_native shell
  fi
  exit $?
fi
if [ "$cmd" = run ]; then
  CGO_ENABLED=0 go build -o "$run/bin/roce-probe" ./cmd/roce-probe
  cp "${pkgs[0]}" "$run/script"
  rc=0
  if [ "$mode" = vm ]; then
    kernel_dir=${kdirs[${specs[0]}]} initramfs=${kinitrd[${specs[0]}]}
    run_vm run "${specs[0]}" || rc=$?
    out=$run/out-${specs[0]}
  else
    run_native run || rc=$?
    out=$run/out-native
  fi
  cat "$out/script.log" 2>/dev/null || true
  [ "$rc" = 0 ] || exit $rc
  exit "$(cat "$out/script.rc" 2>/dev/null || echo 1)"
fi

build_binaries "${pkgs[@]}"
printf '%s' "$runre" > "$run/run-regexp"
status=0
: > "$run/kernels"
if [ "$mode" = vm ]; then
  for k in "${specs[@]}"; do
    kernel_dir=${kdirs[$k]} initramfs=${kinitrd[$k]}
    printf '%s\t%s\n' "$k" "$run/out-$k" >> "$run/kernels"
    run_vm test "$k" && continue
    # A guest kernel that crashed (rxe runs in softirq: an oops there is a
    # panic, and panic=-1 with -no-reboot ends the VM) is booted once more;
    # the first run stays in out-K.crashed and the report says so
    # (OUT/crashed-before). Any other failure is final.
    panic=$(kernel_crash "$run/out-$k")
    if [ -z "$panic" ]; then
      status=1
      continue
    fi
    say "kernel $k: the guest kernel crashed ($panic); booting it once more (the first run: $run/out-$k.crashed)"
    mv "$run/out-$k" "$run/out-$k.crashed"
    run_vm test "$k" || status=1
    printf '%s\t%s\n' "$panic" "$run/out-$k.crashed" > "$run/out-$k/crashed-before"
  done
else
  printf '%s\t%s\n' native "$run/out-native" >> "$run/kernels"
  run_native test || status=1
fi
report || status=1
say "total $(elapsed "$start")s; results in $run"
[ "$status" = 0 ] || say "LAB FAILED"
exit $status
