//go:build lab && ibverbs && cgo

package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/vlan"
)

// ipLink is the part of `ip -d -j link show` this test compares.
type ipLink struct {
	Ifindex   int    `json:"ifindex"`
	Ifname    string `json:"ifname"`
	MTU       int    `json:"mtu"`
	Operstate string `json:"operstate"`
	Address   string `json:"address"`
	Linkinfo  struct {
		InfoKind string `json:"info_kind"`
		InfoData struct {
			Protocol  string `json:"protocol"`
			ID        *int   `json:"id"`
			EgressQoS []struct {
				From int `json:"from"`
				To   int `json:"to"`
			} `json:"egress_qos"`
		} `json:"info_data"`
	} `json:"linkinfo"`
}

func ipLinkShow(t *testing.T, dev string) ipLink {
	t.Helper()
	out, err := exec.Command("ip", "-d", "-j", "link", "show", "dev", dev).Output()
	if err != nil {
		t.Fatalf("ip -d -j link show dev %s: %v", dev, err)
	}
	var ls []ipLink
	if err := json.Unmarshal(out, &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ip -d -j link show dev %s: %v: %s", dev, err, out)
	}
	return ls[0]
}

// `roce-probe gids -o json` equals the table libibverbs reports
// (ibv_query_gid_ex: GID, type, netdev ifindex) entry for entry, and each
// entry's MAC, MTU and state, every tag of its VLAN chain (outermost
// first: each VLAN device's ID and protocol) and its netdev's egress map,
// equal what `ip -d -j link show` reports.
func TestLabGidsJSONEqualsKernel(t *testing.T) {
	out, stderr, code := runCLI(t, "", "gids", "--dev", lab.RDMADevice, "-o", "json", "--all")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Predicted bool `json:"predicted"`
		Ports     []struct {
			Device   string      `json:"device"`
			Port     int         `json:"port"`
			TableLen int         `json:"table_len"`
			Used     int         `json:"used"`
			Entries  []gid.Entry `json:"entries"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Predicted || len(doc.Ports) != 1 || doc.Ports[0].Device != lab.RDMADevice || doc.Ports[0].Port != 1 {
		t.Fatalf("predicted %v, ports %+v; want %s port 1 only", doc.Predicted, doc.Ports, lab.RDMADevice)
	}
	rows := doc.Ports[0].Entries
	c, err := verbs.Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pa, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != pa.GIDTableLen || doc.Ports[0].TableLen != pa.GIDTableLen {
		t.Fatalf("%d rows with --all, table_len %d; want gid_tbl_len %d", len(rows), doc.Ports[0].TableLen, pa.GIDTableLen)
	}
	snap, err := collect.Collect(collect.Options{Sections: collect.SectionNet})
	if err != nil {
		t.Fatal(err)
	}
	ns := snap.Namespaces[0]
	used := 0
	for i, r := range rows {
		ve, err := c.QueryGID(1, i)
		empty := err != nil || ve.GID == [16]byte{}
		if r.Index != i || r.Empty != empty {
			t.Errorf("row %d: index %d empty %v; libibverbs: %+v, %v", i, r.Index, r.Empty, ve, err)
			continue
		}
		if empty {
			continue
		}
		used++
		if r.GID != gid.GID(ve.GID) || uint32(r.Type) != ve.Type || r.Ifindex != int(ve.Ifindex) {
			t.Errorf("row %d: %s %s ifindex %d; libibverbs %s type %d ifindex %d", i, r.GID, r.Type, r.Ifindex, gid.GID(ve.GID), ve.Type, ve.Ifindex)
		}
		ip := ipLinkShow(t, r.Netdev)
		if ip.Ifindex != r.Ifindex || ip.MTU != r.MTU || ip.Address != r.MAC.String() || strings.ToLower(ip.Operstate) != r.State {
			t.Errorf("row %d (%s): ifindex %d mtu %d mac %s state %s; ip: %d %d %s %s", i, r.Netdev, r.Ifindex, r.MTU, r.MAC, r.State, ip.Ifindex, ip.MTU, ip.Address, ip.Operstate)
		}
		if ip.Linkinfo.InfoKind != "vlan" {
			if r.VLAN != nil || len(r.VLANChain) != 0 {
				t.Errorf("row %d (%s, kind %s): vlan %v chain %v, want none", i, r.Netdev, ip.Linkinfo.InfoKind, r.VLAN, r.VLANChain)
			}
			continue
		}
		// vlan is the outermost tag; the chain ends with the netdev's own.
		if len(r.VLANChain) == 0 || r.VLAN == nil || *r.VLAN != r.VLANChain[0].ID || r.VLANChain[len(r.VLANChain)-1].Netdev != r.Netdev {
			t.Errorf("row %d (%s): vlan %v chain %v", i, r.Netdev, r.VLAN, r.VLANChain)
			continue
		}
		for j, tag := range r.VLANChain {
			tip := ipLinkShow(t, tag.Netdev)
			if tip.Linkinfo.InfoKind != "vlan" || tip.Linkinfo.InfoData.ID == nil || int(tag.ID) != *tip.Linkinfo.InfoData.ID ||
				!strings.EqualFold(tag.TPID.String(), tip.Linkinfo.InfoData.Protocol) {
				t.Errorf("row %d (%s) tag %d: %s %d on %s; ip says %s %v", i, r.Netdev, j, tag.TPID, tag.ID, tag.Netdev, tip.Linkinfo.InfoData.Protocol, tip.Linkinfo.InfoData.ID)
			}
		}
		l, ok := ns.ByName(r.Netdev)
		if !ok {
			t.Fatalf("%s not in the collected namespace", r.Netdev)
		}
		want := vlan.QoSMap{}
		for _, m := range ip.Linkinfo.InfoData.EgressQoS {
			want[uint32(m.From)] = uint32(m.To)
		}
		if l.EgressQoS.String() != want.String() {
			t.Errorf("%s: egress map %q, ip says %q", r.Netdev, l.EgressQoS, want)
		}
	}
	// The lab's host addresses all have entries (lab.Up waits for them).
	if used < 2*len(lab.Nets)+1 || doc.Ports[0].Used != used {
		t.Errorf("%d entries in use (used %d), want at least %d", used, doc.Ports[0].Used, 2*len(lab.Nets)+1)
	}
}

// `select -o json` for each lab peer names the host address on that
// network's netdev, its outermost VLAN tag and the whole chain.
func TestLabSelectJSON(t *testing.T) {
	for _, n := range lab.Nets {
		out, stderr, code := runCLI(t, "", "select", "--dst", n.PeerIPv4.Addr().String(), "--dev", lab.RDMADevice, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", n.Name, code, stderr)
		}
		var doc []struct {
			Predicted bool            `json:"predicted"`
			Index     *int            `json:"index"`
			GID       *gid.GID        `json:"gid"`
			Netdev    *string         `json:"netdev"`
			VLAN      *uint16         `json:"vlan"`
			VLANChain []vlan.ChainTag `json:"vlan_chain"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc) != 1 {
			t.Fatalf("%s: %v: want one selection (--dev %s has one port):\n%s", n.Name, err, lab.RDMADevice, out)
		}
		r := doc[0]
		if r.Predicted || r.GID == nil || r.GID.Addr() != n.HostIPv4.Addr() || r.Netdev == nil || *r.Netdev != n.HostNetdev {
			t.Errorf("%s: %s", n.Name, out)
		}
		if len(n.VLANs) == 0 && r.VLAN != nil || len(n.VLANs) > 0 && (r.VLAN == nil || *r.VLAN != n.VLANs[0].ID) {
			t.Errorf("%s: vlan %v, want the outermost of %v", n.Name, r.VLAN, n.VLANs)
		}
		if len(r.VLANChain) != len(n.VLANs) {
			t.Errorf("%s: vlan_chain %v, want %v", n.Name, r.VLANChain, n.VLANs)
			continue
		}
		for i, v := range n.VLANs {
			if c := r.VLANChain[i]; c.ID != v.ID || uint16(c.TPID) != uint16(v.Proto) || c.Netdev != v.HostNetdev {
				t.Errorf("%s: vlan_chain[%d] = %v, want %+v", n.Name, i, c, v)
			}
		}
	}
}
