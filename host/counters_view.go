package host

import (
	"strings"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/qos"
)

// CountersInput is what counters.Analyze needs from the view for sample
// cur (and prev, the sample before it, nil for one): every RDMA port of
// the snapshot with its driver, RoCE netdev, the real netdev below it and
// its settings; and every real netdev the samples have counters of, plus
// those below the ports, with its DCB state and DCQCN settings.
func (v *View) CountersInput(prev, cur *counters.Sample) counters.Input {
	in := counters.Input{Prev: prev, Cur: cur}
	seen := map[string]bool{}
	addNetdev := func(name string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		in.Netdevs = append(in.Netdevs, counters.NetdevInfo{Netns: v.NS.Netns, Netdev: name, DCB: v.dcbOf(name),
			DCQCN: v.Snap.Settings.DCQCNOf(name), Pause: v.Snap.Settings.PauseOf(name)})
	}
	if v.Snap.RDMA != nil {
		for _, d := range v.Snap.RDMA.Devices {
			for _, p := range d.Ports {
				pi := counters.PortInfo{Device: d.Name, Port: p.Port, Driver: string(d.Driver.Driver), Netdev: v.NS.PortNetdev(p.Netdev), Netns: v.NS.Netns,
					TCOverride: v.Snap.Settings.TCOverrideOf(d.Name, p.Port), RDMACM: v.Snap.Settings.RDMACMOf(d.Name, p.Port)}
				if pi.Netdev != "" {
					if desc, err := v.NS.Describe(pi.Netdev); err == nil && !desc.LowerInOtherNetns {
						pi.Real = desc.Real
						if desc.Bond != nil {
							// RoCE LAG: every slave's counters and DCB.
							pi.Slaves = desc.Bond.Members()
						}
					} else if err == nil {
						pi.Boundary = desc.Boundary()
					}
				} else {
					pi.Boundary = v.slotsBoundary(p)
				}
				in.Ports = append(in.Ports, pi)
				addNetdev(pi.Real)
				for _, sl := range pi.Slaves {
					addNetdev(sl)
				}
			}
		}
	}
	if cur != nil {
		for _, e := range cur.Ethtool {
			if e.Netns == v.NS.Netns {
				addNetdev(e.Netdev)
			}
		}
		for _, p := range cur.PFC {
			if p.Netns == v.NS.Netns {
				addNetdev(p.Netdev)
			}
		}
	}
	return in
}

// slotsBoundary is, for a port whose netdev is not in the view's
// namespace (a pod: the PF stays in the host's), the namespace boundary
// its GID entries' netdevs sit on (vlan.Description.Boundary of the first
// entry whose stack continues into another namespace); "" when none does.
func (v *View) slotsBoundary(p Port) string {
	for _, sl := range p.GIDs {
		if sl.Netdev == "" {
			continue
		}
		if desc, err := v.NS.Describe(sl.Netdev); err == nil && desc.LowerInOtherNetns {
			return desc.Boundary()
		}
	}
	return ""
}

// dcbOf is the DCB of a real netdev of the view's namespace (nil when not
// read).
func (v *View) dcbOf(netdev string) *qos.DCB {
	d, _ := v.Snap.DCBOf(v.NS.Netns, netdev)
	return d
}

// CountersErrors returns the errors of errs that are about counters: an
// RDMA port's counters (source "counters DEV/PORT") or a netdev's ethtool
// statistics (source "ethtool" or "ethtool NETDEV"), as the collector
// names them.
func CountersErrors(errs []SourceError) []SourceError {
	var out []SourceError
	for _, e := range errs {
		if strings.HasPrefix(e.Source, "counters ") || e.Source == "ethtool" || strings.HasPrefix(e.Source, "ethtool ") {
			out = append(out, e)
		}
	}
	return out
}
