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
// When none of these names a priority but the netdev's DCB was read, the
// priority RoCE uses by default is assumed (DefaultRoCEPriority).
//
// Traffic is not used: per-priority Ethernet counters count every frame
// of the priority, RoCE or not, so a busy priority is not proof of RoCE.
func RoCEPriorities(ni NetdevInfo, ports []PortInfo) map[uint8][]string {
	out, _ := rocePriorities(ni, ports)
	return out
}

// DefaultRoCEPriority returns the priority RoCE traffic lands on when
// nothing is configured for it, and why; ok is false when the netdev's
// DCB was not read (or it has none): then the trust mode, and so the
// priority, is unknown. An application that sets nothing sends with sl 0
// and traffic class 0 (ibv_modify_qp and rdma_cm's defaults, the kernel's
// default_roce_tos 0):
//
//   - under PCP trust the frames are untagged, or tagged with PCP 0, and
//     the port receives them on its default priority: the APP table's
//     {EtherType, 0} entry when there is one, else priority 0;
//   - under DSCP trust they carry DSCP 0, received on the priority the
//     APP table gives DSCP 0; DSCP 0 without an entry is unknown.
func DefaultRoCEPriority(d *qos.DCB) (prio uint8, why string, ok bool) {
	if d == nil || !d.Supported {
		return 0, "", false
	}
	const none = "no configuration names a RoCE priority (no PFC, no RoCE APP entry, no DCQCN, no DSCP 26 mapping): RoCE's default is sl 0 and traffic class 0"
	if d.Trust() == qos.TrustDSCP {
		p, ok := d.DSCPPriority(0)
		if !ok {
			return 0, "", false
		}
		return p, none + ", and under DSCP trust the APP table maps DSCP 0 to this priority", true
	}
	if p, ok := d.DefaultPriority(); ok {
		return p, none + ", and under PCP trust untagged frames take the port's default priority (APP entry EtherType 0)", true
	}
	return 0, none + ", and under PCP trust untagged frames (or PCP 0) are received on priority 0", true
}

// rocePriorities is RoCEPriorities, and whether the one priority it gives
// is DefaultRoCEPriority's assumption rather than configuration.
func rocePriorities(ni NetdevInfo, ports []PortInfo) (out map[uint8][]string, assumed bool) {
	out = map[uint8][]string{}
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
	if len(out) == 0 {
		if p, why, ok := DefaultRoCEPriority(ni.DCB); ok {
			add(p, "%s", why)
			assumed = true
		}
	}
	return out, assumed
}
