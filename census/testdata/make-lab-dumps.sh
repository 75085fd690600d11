#!/usr/bin/env bash
# Remakes the RDMA netlink dump fixtures in this directory from the lab:
#   rxeN-qp.nl, rxeN-cm_id.nl  the replies to RDMA_NLDEV_CMD_RES_QP_GET and
#                              RDMA_NLDEV_CMD_RES_CM_ID_GET of every rxe device
#                              of the Linux 7.x fabric (rxe0 of the single-host
#                              lab, rxe1..rxe4 of h1..h4), the bytes as read
#                              from the NETLINK_RDMA socket by collect.Census,
#                              while two ib_send_lat pairs (traffic classes 106
#                              and 0) and an rping pair ran between h1 and h2;
#   rxe1-qp_raw.nl             the reply to RDMA_NLDEV_CMD_RES_QP_GET_RAW of rxe1
#                              as root: NLMSG_DONE carrying EINVAL (rxe has no
#                              raw QP context);
#   rdma-qp.json, rdma-cm_id.json
#                              `rdma -j resource show qp` / `cm_id` (iproute2),
#                              run just before and just after the dumps with
#                              the same output.
# collect's TestFabricCensus writes them as artifacts after checking the
# census against rdma's output. Usage: census/testdata/make-lab-dumps.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/lab.sh test --kernel 7 -run '^TestFabricCensus$' ./collect
src=.lab-cache/last/out-7/collect.fabric.artifacts
ls "$src"/rdma-qp.json >/dev/null
rm -f census/testdata/*.nl census/testdata/rdma-*.json
for f in "$src"/*.nl; do
  case "$f" in *-qp_raw.nl) continue ;; esac
  cp "$f" census/testdata/
done
cp "$src"/rxe1-qp_raw.nl census/testdata/
cp "$src"/rdma-qp.json "$src"/rdma-cm_id.json census/testdata/
echo "wrote census/testdata: $(ls census/testdata | tr '\n' ' ')"
