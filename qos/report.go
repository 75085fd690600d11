package qos

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/vlan"
)

// VLANDevice is a VLAN device above a real device, with its QoS maps.
type VLANDevice struct {
	Netdev  string      `json:"netdev"`
	ID      uint16      `json:"id"`
	TPID    vlan.TPID   `json:"tpid"`
	Lower   string      `json:"lower_netdev"`
	Egress  vlan.QoSMap `json:"egress_qos_map"`  // skb priority → PCP
	Ingress vlan.QoSMap `json:"ingress_qos_map"` // PCP → skb priority
}

// MarshalJSON writes {netdev, id, tpid, lower_netdev, egress_qos_map,
// ingress_qos_map}: a map without entries is {} (the device is a VLAN
// device), a lower device that is not known null.
func (v VLANDevice) MarshalJSON() ([]byte, error) {
	w := struct {
		Netdev  string      `json:"netdev"`
		ID      uint16      `json:"id"`
		TPID    vlan.TPID   `json:"tpid"`
		Lower   *string     `json:"lower_netdev"`
		Egress  vlan.QoSMap `json:"egress_qos_map"`
		Ingress vlan.QoSMap `json:"ingress_qos_map"`
	}{Netdev: v.Netdev, ID: v.ID, TPID: v.TPID, Lower: null.String(v.Lower), Egress: v.Egress, Ingress: v.Ingress}
	if w.Egress == nil {
		w.Egress = vlan.QoSMap{}
	}
	if w.Ingress == nil {
		w.Ingress = vlan.QoSMap{}
	}
	return json.Marshal(w)
}

// Report is the QoS view of one netdev: what `dcb pfc show`, `dcb ets
// show`, `dcb app show` and mlnx_qos print, plus the VLAN devices above
// the real device and their egress/ingress maps. Its JSON form is
// docs/json.md's "qos_report" (MarshalJSON).
type Report struct {
	Device string      // RDMA device, when asked by device ("": null in JSON)
	Port   int         // its port (0: null in JSON)
	Driver *DriverInfo // the device's driver; nil when asked by netdev
	Netdev string
	Real   string // the real netdev below Netdev; "" (null) when it is in another namespace
	DCB    *DCB
	// DCBError says why DCB is null (the read failed, or was not made).
	DCBError   *string
	Trust      Trust
	DSCPPrio   map[uint8]Bytes // APP dscp-prio entries
	PrioTC     *[8]uint8       // ETS; nil without ETS
	PFCEnabled Bytes           // priorities with PFC on; nil without PFC
	DCBX       *string         // DCBX mode's name (DCBXString); nil when not reported
	VLANs      []VLANDevice
	// DCQCN is the real netdev's DCQCN configuration per priority (set by
	// the caller from the snapshot's settings: host.Snapshot.QoSReports);
	// null when not read.
	DCQCN *DCQCN
	// SlaveOf is, for a slave of the bond a RoCE netdev sits on (RoCE
	// LAG), that bond: the slave's DCB is the one that applies to the
	// traffic it carries. "" (null in JSON) otherwise.
	SlaveOf string
}

// reportJSON is Report's wire form.
type reportJSON struct {
	Device     *string         `json:"device"`
	Port       *int            `json:"port"`
	Driver     *DriverInfo     `json:"driver_info"`
	Netdev     string          `json:"netdev"`
	Real       *string         `json:"real_netdev"`
	DCB        *DCB            `json:"dcb"`
	DCBError   *string         `json:"dcb_error"`
	Trust      Trust           `json:"trust"`
	DSCPPrio   map[uint8]Bytes `json:"dscp_prio"`
	PrioTC     *[8]uint8       `json:"prio_tc"`
	PFCEnabled Bytes           `json:"pfc_priorities"`
	DCBX       *uint8          `json:"dcbx"`
	DCBXName   *string         `json:"dcbx_name"`
	VLANs      []VLANDevice    `json:"vlan_devices"`
	DCQCN      *DCQCN          `json:"dcqcn"`
	SlaveOf    *string         `json:"slave_of"`
}

// MarshalJSON writes every key of docs/json.md's "qos_report": device and
// port null when the report was asked for by netdev; dscp_prio null
// without DCB; dcbx the DCBX mode bitmap (as in the dcb object) and
// dcbx_name its name, both null when not reported.
func (r Report) MarshalJSON() ([]byte, error) {
	w := reportJSON{Device: null.String(r.Device), Driver: r.Driver, Netdev: r.Netdev, Real: null.String(r.Real), DCB: r.DCB, DCBError: r.DCBError,
		Trust: r.Trust, DSCPPrio: r.DSCPPrio, PrioTC: r.PrioTC, PFCEnabled: r.PFCEnabled, DCBXName: r.DCBX, VLANs: r.VLANs, DCQCN: r.DCQCN,
		SlaveOf: null.String(r.SlaveOf)}
	if r.Port != 0 {
		w.Port = &r.Port
	}
	if r.DCBX != nil && r.DCB != nil {
		w.DCBX = r.DCB.DCBX
	}
	switch {
	case r.DCB == nil || !r.DCB.Supported:
		w.DSCPPrio = nil // no DCB: not known
	case w.DSCPPrio == nil:
		w.DSCPPrio = map[uint8]Bytes{}
	}
	if w.VLANs == nil {
		w.VLANs = []VLANDevice{}
	}
	return json.Marshal(w)
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
