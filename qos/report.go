package qos

import (
	"fmt"
	"sort"

	"github.com/roce-probe/roce-probe/vlan"
)

// VLANDevice is a VLAN device above a real device, with its QoS maps.
type VLANDevice struct {
	Netdev  string      `json:"netdev"`
	ID      uint16      `json:"id"`
	TPID    vlan.TPID   `json:"tpid"`
	Lower   string      `json:"lower"`
	Egress  vlan.QoSMap `json:"egress_qos"`  // skb priority → PCP
	Ingress vlan.QoSMap `json:"ingress_qos"` // PCP → skb priority
}

// Report is the QoS view of one netdev: what `dcb pfc show`, `dcb ets
// show`, `dcb app show` and mlnx_qos print, plus the VLAN devices above
// the real device and their egress/ingress maps.
type Report struct {
	Device string      `json:"device,omitempty"` // RDMA device, when asked by device
	Port   int         `json:"port,omitempty"`
	Driver *DriverInfo `json:"driver,omitempty"`
	Netdev string      `json:"netdev"`
	Real   string      `json:"real_netdev"`
	DCB    *DCB        `json:"dcb"`
	// DCBError says why DCB is null (the read failed, or was not made).
	DCBError   *string         `json:"dcb_error"`
	Trust      Trust           `json:"trust"`
	DSCPPrio   map[uint8]Bytes `json:"dscp_prio"`   // APP dscp-prio entries
	PrioTC     *[8]uint8       `json:"prio_tc"`     // ETS; null without ETS
	PFCEnabled Bytes           `json:"pfc_enabled"` // priorities with PFC on; null without PFC
	DCBX       *string         `json:"dcbx"`        // DCBX mode; null when not reported
	VLANs      []VLANDevice    `json:"vlans"`
	// DCQCN is the real netdev's DCQCN configuration per priority (set by
	// the caller from the snapshot's settings); null when not read.
	DCQCN *DCQCN `json:"dcqcn"`
}

// NewReport builds the report for netdev from a snapshot of its namespace
// and the DCB state of its real device (nil when it could not be read).
func NewReport(snap *vlan.Namespace, netdev string, d *DCB) (Report, error) {
	desc, err := snap.Describe(netdev)
	if err != nil {
		return Report{}, fmt.Errorf("qos: %w", err)
	}
	r := Report{Netdev: netdev, Real: desc.Real, DCB: d, Trust: d.Trust(), DSCPPrio: d.DSCPMap(), VLANs: []VLANDevice{}}
	if d != nil && d.Supported {
		if d.ETS != nil {
			pt := d.ETS.PrioTC
			r.PrioTC = &pt
		}
		if d.PFC != nil {
			r.PFCEnabled = d.PFC.EnabledPriorities()
		}
		if d.DCBX != nil {
			x := DCBXString(*d.DCBX)
			r.DCBX = &x
		}
	}
	for _, l := range snap.Links {
		if l.Kind != vlan.KindVLAN || l.Tag == nil {
			continue
		}
		if l.Name != desc.Real && !snap.IsUpper(l.Name, desc.Real) {
			continue
		}
		lower := ""
		if p, ok := snap.ByIndex(l.ParentIndex); ok {
			lower = p.Name
		}
		r.VLANs = append(r.VLANs, VLANDevice{Netdev: l.Name, ID: l.Tag.ID, TPID: l.Tag.TPID, Lower: lower, Egress: l.EgressQoS, Ingress: l.IngressQoS})
	}
	sort.Slice(r.VLANs, func(i, j int) bool { return r.VLANs[i].Netdev < r.VLANs[j].Netdev })
	return r, nil
}
