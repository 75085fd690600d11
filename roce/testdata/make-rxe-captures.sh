#!/usr/bin/env bash
# Remakes the real Soft-RoCE captures in this directory from the lab:
#   rxe-ud-send.pcapng  UD SEND Only frames sent by rxe0 (Linux 6.1 rdma_rxe,
#                       through internal/verbs) and captured on the peer's end
#                       of the veth pair by internal/lab's TestUDSendOnTheWire:
#                       one IPv4 and one IPv6 frame on each lab network, in
#                       this order: untagged, 802.1Q 100 (PCP 3), 802.1Q 200
#                       (PCP 0), QinQ 802.1ad 1000 + 802.1Q 10 (PCP 2).
#                       AH: traffic class 0x6a (DSCP 26, ECN 1 0), hop limit 8
#                       (sent as 64: the route's), SL 5 (ignored by rxe);
#                       Q_Key 0x1234abcd, DestQP 0xabcd, first PSN 0x0a0b0c.
# The test itself checks every frame (VLANs, PCP, DSCP, TTL, BTH, DETH, ICRC)
# before it is written. Usage: roce/testdata/make-rxe-captures.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/lab.sh test -run '^TestUDSendOnTheWire$' ./internal/lab
src=.lab-cache/last/out/internal_lab.artifacts/rxe-ud-send.pcapng
[ -f "$src" ] || { echo "no capture at $src" >&2; exit 1; }
cp "$src" roce/testdata/rxe-ud-send.pcapng
echo "wrote roce/testdata/rxe-ud-send.pcapng"
