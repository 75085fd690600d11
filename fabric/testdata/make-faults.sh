#!/bin/sh
# Writes faults.prom and faults-before.prom: what Prometheus holds of 12
# agents (3 ToRs x 4 NICs) now and 5 minutes earlier, with two injected
# faults. README.md describes the fabric, the faults and what follows.
set -eu
cd "$(dirname "$0")"
tors="a b c"
nics="1 2 3 4"
dead=a2   # 10.0.1.2: no probe to or from it is answered
lossy=c   # leaf-c loses 6 of the 300 probes of each pair of its NICs
oct() { case $1 in a) echo 1 ;; b) echo 2 ;; c) echo 3 ;; esac; }
# probed T I R: the NIC of ToR T agent number I (1..4) probes in round R
# (0: the last, 1: the current): NIC ((I-1+R) mod 4)+1.
probed() { echo $(( ($2 - 1 + $3) % 4 + 1 )); }
gen() { # gen now|before
	for t in $tors; do for i in $nics; do
		h=$t$i addr=10.0.$(oct $t).$i
		l="instance=\"$addr:9469\",job=\"roce-probe\",node=\"$h\""
		echo "roce_probe_gid_info{$l,device=\"mlx5_0\",port=\"1\",index=\"3\",gid=\"::ffff:$addr\",type=\"RoCE v2\",family=\"ipv4\",netdev=\"eth0\",vlan=\"\",network=\"10.0.0.0/16\"} 1"
		echo "roce_probe_gid_index{$l,device=\"mlx5_0\",port=\"1\",type=\"RoCE v2\",family=\"ipv4\",network=\"10.0.0.0/16\"} 3"
		echo "roce_probe_flow_source_info{$l,flow=\"rdma\",device=\"mlx5_0\",port=\"1\",index=\"3\",netdev=\"eth0\"} 1"
		echo "roce_probe_topology_info{$l,netdev=\"eth0\",switch=\"leaf-$t\",switch_port=\"Ethernet$i\",source=\"lldp\"} 1"
		echo "roce_probe_probe_rate_scale{$l} 1"
		for j in $nics; do
			[ $j = $i ] && continue
			m=$t$j
			sent=1000 lost=0
			if [ $1 = now ]; then
				sent=1300
				if [ $h = $dead ] || [ $m = $dead ]; then lost=300; fi
				if [ $t = $lossy ]; then lost=8; fi
			elif [ $t = $lossy ]; then lost=2; fi
			p="$l,peer=\"$m\",address=\"10.0.$(oct $t).$j\",flow=\"rdma\""
			echo "roce_probe_probes_sent_total{$p} $sent"
			echo "roce_probe_probes_lost_total{$p} $lost"
			if [ $1 = now ] && [ $m = $dead ]; then
				echo "roce_probe_worst_pair_loss_ratio{$l,flow=\"rdma\",scope=\"tor\",peer=\"$m\",address=\"10.0.$(oct $t).$j\",peer_tor=\"leaf-$t\"} 1"
				echo "roce_probe_worst_pair_lost_probes{$l,flow=\"rdma\",scope=\"tor\",peer=\"$m\",address=\"10.0.$(oct $t).$j\",peer_tor=\"leaf-$t\"} 60"
			fi
		done
		for u in $tors; do
			[ $u = $t ] && continue
			sent=5000
			[ $1 = now ] && sent=5300
			echo "roce_probe_tor_probes_sent_total{$l,flow=\"rdma\",scope=\"inter_tor\",peer_tor=\"leaf-$u\"} $sent"
			[ $1 = now ] || continue
			for r in 0 1; do
				k=$(probed $u $i $r) m=$u$(probed $u $i $r)
				if [ $h = $dead ] || [ $m = $dead ]; then
					w="$l,flow=\"rdma\",scope=\"inter_tor\",peer=\"$m\",address=\"10.0.$(oct $u).$k\",peer_tor=\"leaf-$u\""
					echo "roce_probe_worst_pair_loss_ratio{$w} 1"
					echo "roce_probe_worst_pair_lost_probes{$w} 30"
				fi
			done
		done
	done; done
}
gen now >faults.prom
gen before >faults-before.prom
