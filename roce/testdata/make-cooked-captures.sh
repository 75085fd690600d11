#!/usr/bin/env bash
# Remakes the Linux cooked captures in this directory: what `tcpdump -i any`
# writes (link type LINUX_SLL, 113, and LINUX_SLL2, 276) when the frames of
# rxe-ud-send.pcapng (real rxe frames: untagged, 802.1Q and QinQ, IPv4 and
# IPv6) cross a veth pair:
#   rxe-ud-send-sll.pcap, rxe-ud-send-sll2.pcap
# A network namespace holds veth0/veth1 (up, no addresses, IPv6 off so that
# nothing else is sent); tcpdump -i any captures in it while every frame of
# the capture, as it is, is written raw (AF_PACKET) on veth0. Each frame is seen twice: leaving veth0
# (packet type 4, outgoing) and arriving on veth1 (packet type 0, to us;
# its VLAN tags, taken off by the kernel, put back by libpcap). Made with
# tcpdump 4.99.3 / libpcap 1.10.3 (Debian 12). Needs root, tcpdump, python3.
# Usage: roce/testdata/make-cooked-captures.sh
set -euo pipefail
cd "$(dirname "$0")"
ns=roce-probe-cooked-$$
ip netns add "$ns"
trap 'ip netns del "$ns"' EXIT
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link add veth0 type veth peer name veth1
ip -n "$ns" link set veth0 up
ip -n "$ns" link set veth1 up
for lt in LINUX_SLL LINUX_SLL2; do
	out=rxe-ud-send-sll.pcap
	[ "$lt" = LINUX_SLL2 ] && out=rxe-ud-send-sll2.pcap
	ip netns exec "$ns" tcpdump -i any -y "$lt" -U -w "$out" 2>/dev/null &
	pid=$!
	sleep 1
	ip netns exec "$ns" python3 - rxe-ud-send.pcapng <<'PY'
import socket, struct, sys, time
def frames(path):
    b = open(path, 'rb').read()
    bo = '<' if b[8:12] == b'\x4d\x3c\x2b\x1a' else '>'
    off = 0
    while off + 12 <= len(b):
        typ, l = struct.unpack(bo + 'II', b[off:off+8])
        if typ == 6:  # enhanced packet block
            caplen = struct.unpack(bo + 'I', b[off+20:off+24])[0]
            yield b[off+28:off+28+caplen]
        off += l
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('veth0', 0))
for p in sys.argv[1:]:
    for f in frames(p):
        s.send(f)
        time.sleep(0.01)
PY
	sleep 1
	kill -INT "$pid"
	wait "$pid" || true
	chown --reference=rxe-ud-send.pcapng "$out"
	echo "wrote roce/testdata/$out"
done
