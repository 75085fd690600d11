package gid

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/vlan"
)

// The fixtures are roce-probe host snapshots in host/testdata
// (their README says where every fact comes from). This package cannot
// import internal/host (it imports gid), so the tests read the two
// sections they need with their own decoding of the documented format.

type fixtureDoc struct {
	RDMA struct {
		Devices []struct {
			Device string `json:"device"`
			Ports  []struct {
				Port      int     `json:"port"`
				State     string  `json:"state"`
				PhysState string  `json:"phys_state"`
				LinkLayer string  `json:"link_layer"`
				Netdev    *string `json:"netdev"`
				TableLen  int     `json:"gid_table_len"`
				GIDs      []struct {
					Index  int     `json:"index"`
					GID    GID     `json:"gid"`
					Type   Type    `json:"type"`
					Netdev *string `json:"netdev"`
				} `json:"gids"`
			} `json:"ports"`
		} `json:"devices"`
	} `json:"rdma"`
	Namespaces []json.RawMessage `json:"namespaces"`
}

func readDoc(t testing.TB, name string) fixtureDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "host", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var d fixtureDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// loadSnap returns the fixture's (first) network namespace.
func loadSnap(t testing.TB, name string) *vlan.Namespace {
	t.Helper()
	d := readDoc(t, name)
	var ns vlan.Namespace
	if err := json.Unmarshal(d.Namespaces[0], &ns); err != nil {
		t.Fatal(err)
	}
	if err := ns.Validate(); err != nil {
		t.Fatal(err)
	}
	return &ns
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// fixturePorts returns the fixture's ports with their tables (NewPort)
// mapped to its namespace (Map), device after device.
func fixturePorts(t testing.TB, name string) []Port {
	t.Helper()
	d := readDoc(t, name)
	var out []Port
	for _, dev := range d.RDMA.Devices {
		for _, p := range dev.Ports {
			var used []Entry
			for _, g := range p.GIDs {
				used = append(used, Entry{Index: g.Index, GID: g.GID, Type: g.Type, Netdev: str(g.Netdev)})
			}
			out = append(out, NewPort(Port{Device: dev.Device, Port: p.Port, State: p.State, PhysState: p.PhysState,
				LinkLayer: p.LinkLayer, Netdev: str(p.Netdev)}, p.TableLen, used))
		}
	}
	Map(out, loadSnap(t, name))
	return out
}
