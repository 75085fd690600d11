//go:build lab && ibverbs && cgo

package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

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
// entry's VLAN ID, MAC, MTU and state, and its netdev's egress map, equal
// what `ip -d -j link show` reports.
func TestLabGidsJSONEqualsKernel(t *testing.T) {
	out, stderr, code := runCLI(t, "", "gids", "--dev", lab.RDMADevice, "-o", "json", "--all")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []gid.Entry
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	c, err := verbs.Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pa, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != pa.GIDTableLen {
		t.Fatalf("%d rows with --all, want gid_tbl_len %d", len(rows), pa.GIDTableLen)
	}
	h, err := vlan.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	snap, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
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
		if ip.Linkinfo.InfoKind == "vlan" {
			if r.VLAN == nil || ip.Linkinfo.InfoData.ID == nil || int(*r.VLAN) != *ip.Linkinfo.InfoData.ID {
				t.Errorf("row %d (%s): vlan %v, ip says %v", i, r.Netdev, r.VLAN, ip.Linkinfo.InfoData.ID)
			}
			last := r.VLANChain[len(r.VLANChain)-1]
			if !strings.EqualFold(last.Proto.String(), ip.Linkinfo.InfoData.Protocol) {
				t.Errorf("row %d (%s): innermost tag proto %s, ip says %s", i, r.Netdev, last.Proto, ip.Linkinfo.InfoData.Protocol)
			}
			d, err := snap.Describe(r.Netdev)
			if err != nil {
				t.Fatal(err)
			}
			want := vlan.QoSMap{}
			for _, m := range ip.Linkinfo.InfoData.EgressQoS {
				want[uint32(m.From)] = uint32(m.To)
			}
			if d.EgressQoS.String() != want.String() {
				t.Errorf("%s: egress map %q, ip says %q", r.Netdev, d.EgressQoS, want)
			}
		} else if r.VLAN != nil {
			t.Errorf("row %d (%s, kind %s): vlan %d, want none", i, r.Netdev, ip.Linkinfo.InfoKind, *r.VLAN)
		}
	}
	// The lab's host addresses all have entries (lab.Up waits for them).
	if used < 2*len(lab.Nets)+1 {
		t.Errorf("%d entries in use, want at least %d", used, 2*len(lab.Nets)+1)
	}
}

// `select -o json` for each lab peer names the host address on that
// network's netdev and its VLAN.
func TestLabSelectJSON(t *testing.T) {
	for _, n := range lab.Nets {
		out, stderr, code := runCLI(t, "", "select", "--dst", n.PeerIPv4.Addr().String(), "--dev", lab.RDMADevice, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", n.Name, code, stderr)
		}
		var r struct {
			Index  *int     `json:"index"`
			GID    *gid.GID `json:"gid"`
			Netdev *string  `json:"netdev"`
			VLAN   *uint16  `json:"vlan"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.GID == nil || r.GID.Addr() != n.HostIPv4.Addr() || r.Netdev == nil || *r.Netdev != n.HostNetdev {
			t.Errorf("%s: %s", n.Name, out)
		}
		if len(n.VLANs) == 0 && r.VLAN != nil || len(n.VLANs) > 0 && (r.VLAN == nil || *r.VLAN != n.VLANs[len(n.VLANs)-1].ID) {
			t.Errorf("%s: vlan %v, want %v", n.Name, r.VLAN, n.VLANs)
		}
	}
}
