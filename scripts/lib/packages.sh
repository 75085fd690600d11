# scripts/lib/packages.sh — sourced (not run) by the scripts that install the Debian packages they
# use: deps.sh, lab.sh, bench-decode.sh, bench-agent.sh.

# as_root CMD...: runs CMD as root: directly when root already, else through sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ensure_packages WHO PKG...: installs those of the PKGs that are not installed, with apt-get as
# root, saying "WHO: installing ..." on stderr first. Nothing is run when every package is there.
# apt-get waits up to 10 minutes for another apt-get's lock.
ensure_packages() {
  local who=$1 p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$who: installing ${missing[*]}" >&2
  # tshark's wireshark-common would ask whether non-root users may capture (dumpcap setuid): no.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | as_root debconf-set-selections 2>/dev/null || true
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}
