#!/usr/bin/env bash
# The Soft-RoCE lab: runs lab tests (build tags lab ibverbs) inside a real
# RoCE v2 fabric (rdma_rxe on a veth pair, VLANs, a peer namespace). See
# docs/lab.md.
#
#   scripts/lab.sh test [-run REGEXP] [PKG...]   build and run lab tests
#   scripts/lab.sh shell                         a root shell inside the fabric
#   scripts/lab.sh prepare                       install, fetch and cache only
#
# Native mode when the running kernel can load rdma_rxe and 8021q (needs root;
# it builds the fabric in this machine's kernel and removes it afterwards);
# VM mode otherwise: a Debian kernel booted under qemu (TCG) that runs this
# machine's own binaries from its root file system shared read-only over 9p.
# LAB_MODE=native|vm forces a mode. Other knobs: LAB_VM_TIMEOUT (seconds for
# the whole VM run, default 540), LAB_TEST_TIMEOUT (per test binary, 300),
# LAB_VM_MEM (MiB, 2048), LAB_VM_CPUS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cache=$root/.lab-cache

say() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }
usage() {
  sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

# --- packages -----------------------------------------------------------
vm_packages=(qemu-system-x86 busybox-static kmod cpio rdma-core ibverbs-providers ibverbs-utils libibverbs-dev iproute2 tcpdump)
native_packages=(kmod rdma-core ibverbs-providers ibverbs-utils libibverbs-dev iproute2 tcpdump)

apt_updated=0
apt_update() {
  [ "$apt_updated" = 1 ] && return 0
  as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt_updated=1
}
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  apt_update
  DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

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
# Modules the VM loads, with their dependencies resolved by modprobe.
vm_modules=(virtio_pci 9pnet_virtio 9p overlay veth 8021q crc32_generic rdma_rxe ib_uverbs rdma_ucm)

kernel_dir=
prepare_kernel() {
  local kpkg="" kver="" dir
  kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}') || true
  if [ -z "$kpkg" ]; then
    apt_update || true
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}') || true
  fi
  if [ -n "$kpkg" ]; then
    kver=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')
  fi
  if [ -z "$kpkg" ] || [ -z "$kver" ] || [ "$kver" = "(none)" ]; then
    # Offline: use the newest cached kernel, if any.
    dir=$(ls -1dt "$cache"/kernel/linux-image-* 2>/dev/null | head -1 || true)
    [ -n "$dir" ] || die "cannot resolve linux-image-amd64's kernel package (apt-cache depends linux-image-amd64) and no kernel is cached in $cache/kernel"
    say "apt cannot resolve the kernel package; using cached $(basename "$dir")"
    kernel_dir=$dir
    return
  fi
  dir=$cache/kernel/$kpkg-$kver
  if [ ! -f "$dir/ok" ]; then
    say "fetching kernel package $kpkg $kver (apt-get download)"
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$dir.tmp/deb"
    (cd "$dir.tmp/deb" && apt-get download "$kpkg=$kver" >/dev/null 2>&1) ||
      { apt_update && (cd "$dir.tmp/deb" && apt-get download "$kpkg=$kver" >/dev/null); } ||
      die "apt-get download $kpkg=$kver failed"
    dpkg-deb -x "$dir.tmp"/deb/*.deb "$dir.tmp/x"
    local release
    release=$(ls "$dir.tmp/x/lib/modules" | head -1)
    [ -n "$release" ] || die "$kpkg has no lib/modules"
    mkdir -p "$dir.tmp/root/lib/modules"
    cp "$dir.tmp/x/boot/vmlinuz-$release" "$dir.tmp/vmlinuz"
    mv "$dir.tmp/x/lib/modules/$release" "$dir.tmp/root/lib/modules/"
    depmod -b "$dir.tmp/root" "$release"
    echo "$release" > "$dir.tmp/release"
    rm -rf "$dir.tmp/x" "$dir.tmp/deb"
    touch "$dir.tmp/ok"
    mv "$dir.tmp" "$dir"
  fi
  kernel_dir=$dir
}

initramfs=
prepare_initramfs() {
  local release key tmp m line
  release=$(cat "$kernel_dir/release")
  key=$( { cat scripts/lab/init; echo "${vm_modules[*]}"; basename "$kernel_dir"; dpkg-query -W busybox-static 2>/dev/null || true; } | sha256sum | cut -c1-16)
  initramfs=$cache/initramfs-$key.cpio.gz
  [ -f "$initramfs" ] && return 0
  say "building initramfs ($key)"
  tmp=$(mktemp -d)
  mkdir -p "$tmp"/{bin,proc,sys,dev,modules,tmp}
  cp /bin/busybox "$tmp/bin/busybox"
  cp scripts/lab/init "$tmp/init"
  chmod 755 "$tmp/init"
  : > "$tmp/modules.list"
  for m in "${vm_modules[@]}"; do
    modprobe -d "$kernel_dir/root" -S "$release" --show-depends "$m" |
      while read -r kind path _; do
        [ "$kind" = insmod ] || continue
        local b
        b=$(basename "$path")
        grep -qx "$b" "$tmp/modules.list" && continue
        cp "$path" "$tmp/modules/$b"
        echo "$b" >> "$tmp/modules.list"
      done
  done
  (cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$initramfs.tmp"
  rm -f "$cache"/initramfs-*.cpio.gz
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
  cp scripts/lab/guest.sh "$run/guest.sh"
  : > "$run/plan"
}

lab_test_dirs() {
  { git ls-files -co --exclude-standard -- '*_lab_test.go' 2>/dev/null ||
    find . -name '*_lab_test.go' -not -path './.lab-cache/*'; } | xargs -r -n1 dirname | sed 's|^\./||' | sort -u
}

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
        tests=$(cat "$dir"/*_lab_test.go 2>/dev/null | sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' | sort -u | paste -sd'|' -)
        printf '%s\t%s\t%s\t%s\n' "$name" "$dir" "$pkg" "${tests:-^\$}" >> "$run/plan"
      else
        say "$pkg has no test files with tags lab ibverbs; skipped"
      fi
    done < <(go list -tags 'lab ibverbs' -f '{{.ImportPath}}{{"\t"}}{{.Dir}}' "$a")
  done
  say "compiled in $(elapsed "$t")s"
}

# --- running ------------------------------------------------------------
run_vm() {
  local mode=$1 t rc=0
  local mem=${LAB_VM_MEM:-2048} cpus=${LAB_VM_CPUS:-2} tmo=${LAB_VM_TIMEOUT:-540}
  local qemu=(qemu-system-x86_64 -accel tcg,thread=multi -m "$mem" -smp "$cpus"
    -nographic -nodefaults -no-reboot
    -kernel "$kernel_dir/vmlinuz" -initrd "$initramfs"
    -append "console=ttyS0 quiet loglevel=4 panic=-1 lab.run=$run lab.mode=$mode"
    -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot"
    -fsdev "local,id=labrun,path=$run,security_model=none,multidevs=remap"
    -device "virtio-9p-pci,fsdev=labrun,mount_tag=labrun")
  t=$(now)
  if [ "$mode" = shell ]; then
    "${qemu[@]}" -serial mon:stdio || rc=$?
    return $rc
  fi
  say "booting $(basename "$kernel_dir") under qemu (TCG); console: $run/console.log"
  timeout -k 10 "$tmo" "${qemu[@]}" -serial "file:$run/console.log" < /dev/null > "$run/qemu.log" 2>&1 || rc=$?
  echo "$(elapsed "$t")" > "$run/vm-seconds"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    say "the VM did not finish within ${tmo}s (LAB_VM_TIMEOUT); last console lines:"
    tail -n 40 "$run/console.log" >&2 || true
    return 1
  fi
  if [ ! -f "$run/boot-seconds" ]; then
    if grep -q 'lab-init: FAILED' "$run/console.log" 2>/dev/null; then
      say "the VM booted but could not set up its file systems (qemu exit $rc); qemu said:"
    else
      say "the VM failed to boot (qemu exit $rc); qemu said:"
    fi
    cat "$run/qemu.log" >&2
    say "last console lines:"
    tail -n 40 "$run/console.log" >&2 || true
    return 1
  fi
  if [ ! -f "$run/out/done" ]; then
    say "the VM booted but the lab run did not finish (qemu exit $rc); last console lines:"
    tail -n 40 "$run/console.log" >&2 || true
    return 1
  fi
  say "VM: booted in $(cat "$run/boot-seconds")s (guest clock), whole VM run $(cat "$run/vm-seconds")s"
}

run_native() {
  local mode=$1 rc=0 t
  t=$(now)
  "$run/bin/roce-probe" lab down >/dev/null 2>&1 || true
  bash "$run/guest.sh" "$run" "$mode" || rc=$?
  "$run/bin/roce-probe" lab down >/dev/null 2>&1 || true
  say "native run $(elapsed "$t")s"
  return $rc
}

report() {
  local name dir pkg rc=0
  if [ -f "$run/out/fabric.rc" ] && [ "$(cat "$run/out/fabric.rc")" != 0 ]; then
    say "building the fabric failed:"
    cat "$run/out/fabric.log" >&2
    return 1
  fi
  while IFS=$'\t' read -r name dir pkg _; do
    if [ -f "$run/out/$name.out" ]; then
      go tool test2json -t -p "$pkg" < "$run/out/$name.out" > "$run/out/$name.json" || true
    fi
  done < "$run/plan"
  go run ./internal/lab/cmd/labreport "$run" || rc=$?
  return $rc
}

# --- main ---------------------------------------------------------------
cmd=${1:-}
[ -n "$cmd" ] || usage
shift
runre=
pkgs=()
case "$cmd" in
  test)
    while [ $# -gt 0 ]; do
      case "$1" in
        -run) [ $# -ge 2 ] || usage; runre=$2; shift 2 ;;
        -run=*) runre=${1#-run=}; shift ;;
        -h|--help) usage ;;
        -*) say "unknown flag $1"; usage ;;
        *) pkgs+=("$1"); shift ;;
      esac
    done ;;
  shell|prepare) [ $# -eq 0 ] || usage ;;
  *) usage ;;
esac

start=$(now)
mode=$(detect_mode)
say "mode: $mode"
if [ "$mode" = vm ]; then
  ensure_packages "${vm_packages[@]}"
  t=$(now)
  prepare_kernel
  prepare_initramfs
  say "kernel and initramfs ready in $(elapsed "$t")s ($kernel_dir)"
else
  ensure_packages "${native_packages[@]}"
fi
[ "$cmd" = prepare ] && exit 0

new_run_dir
if [ "$cmd" = shell ]; then
  CGO_ENABLED=0 go build -o "$run/bin/roce-probe" ./cmd/roce-probe
  if [ "$mode" = vm ]; then run_vm shell; else run_native shell; fi
  exit $?
fi

build_binaries "${pkgs[@]}"
printf '%s' "$runre" > "$run/run-regexp"
status=0
if [ "$mode" = vm ]; then run_vm test || status=1; else run_native test || status=1; fi
if [ "$status" = 0 ] || [ -f "$run/out/done" ]; then
  report || status=1
fi
say "total $(elapsed "$start")s; results in $run"
[ "$status" = 0 ] || say "LAB FAILED"
exit $status
