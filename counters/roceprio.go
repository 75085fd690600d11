package counters

import (
	"fmt"

	"github.com/roce-probe/roce-probe/qos"
)

// RoCEDSCP is the DSCP RoCE deployments mark their traffic with: traffic
// class 106 (DSCP 26, ECT(0)) of NVIDIA's RoCE configuration guides and of
// the UCX_IB_TRAFFIC_CLASS / NCCL_IB_TC examples.
const RoCEDSCP = 26

// RoCEPriorities returns the priorities of netdev ni that carry RoCE,
// each with why. Without a flow to follow, a host's RoCE priorities are
// the ones its configuration sets up for RoCE (docs/counters.md, "RoCE
// priorities"):
//
//   - a priority with PFC on (PFC exists for RDMA's lossless classes);
//   - under DSCP trust, the priority the APP table gives DSCP 26 (the
//     usual RoCE marking), the DSCP of a port's rdma_cm default_roce_tos
//     when it is not 0, and the DSCP of an mlx5 traffic class override;
//   - the priority of an APP entry for RoCE (UDP port 4791 or EtherType
//     0x8915, which bnxt_re programs);
//   - a priority with DCQCN's notification or reaction point enabled.
//
// Traffic is not used: per-priority Ethernet counters count every frame
// of the priority, RoCE or not, so a busy priority is not proof of RoCE.
func RoCEPriorities(ni NetdevInfo, ports []PortInfo) map[uint8][]string {
	out := map[uint8][]string{}
	add := func(p uint8, why string, args ...any) {
		if p < 8 {
			out[p] = append(out[p], fmt.Sprintf(why, args...))
		}
	}
	d := ni.DCB
	if d != nil && d.Supported {
		if d.PFC != nil {
			for _, p := range d.PFC.EnabledPriorities() {
				add(p, "PFC is on")
			}
		}
		if d.Trust() == qos.TrustDSCP {
			if p, ok := d.DSCPPriority(RoCEDSCP); ok {
				add(p, "DSCP %d (traffic class 106, the usual RoCE marking) maps to it", RoCEDSCP)
			}
			for _, pi := range ports {
				if pi.Real != ni.Netdev || pi.Netns != ni.Netns {
					continue
				}
				if c := pi.RDMACM; c != nil && c.Status == qos.SettingRead && c.ToS != nil && *c.ToS != 0 {
					if p, ok := d.DSCPPriority(qos.DSCP(*c.ToS)); ok {
						add(p, "%s port %d: rdma_cm default_roce_tos %d (DSCP %d) maps to it", pi.Device, pi.Port, *c.ToS, qos.DSCP(*c.ToS))
					}
				}
				if o := pi.TCOverride; o.Active() && o.Global != nil {
					if p, ok := d.DSCPPriority(qos.DSCP(*o.Global)); ok {
						add(p, "%s port %d: the traffic class override %d (DSCP %d) maps to it", pi.Device, pi.Port, *o.Global, qos.DSCP(*o.Global))
					}
				}
			}
		}
		if p, ok := d.RoCEAppPriority(); ok {
			add(p, "the APP table assigns RoCE (UDP 4791 or EtherType 0x8915) to it")
		}
	}
	if q := ni.DCQCN; q != nil && q.Status == qos.SettingRead {
		for p := uint8(0); p < 8; p++ {
			np, rp := q.Enabled(p)
			if (np != nil && *np) || (rp != nil && *rp) {
				add(p, "DCQCN is enabled on it")
			}
		}
	}
	return out
}
