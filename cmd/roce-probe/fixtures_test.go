package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The host snapshots of host/testdata (see its README.md): the
// GID tables of its sysfs trees (rxe0: the lab topology of
// internal/lab/topology.go; mlx5_0: ports 1 and 2, 16 slots, RoCE v1+v2)
// with the netdevs, addresses and connected/local routes they were built
// from. mlx5-dscp and mlx5-pcp add the DCB state of enp1s0f0 (PFC on
// priority 3, ETS prio 3 → TC 1; mlx5-dscp also the APP entries DSCP
// 26 → 3 and 48 → 6, which put mlx5 in DSCP trust, and DCBX host,ieee);
// rxe and rxe-churned record veth0 as without DCB support; mlx5 has an
// empty DCB list (read for no netdev).
const hostTestdata = "../../host/testdata/"

// sysfsTestdata holds the sysfs trees those snapshots were read from
// (collect/testdata/*/sys), for the live reads of send.
const sysfsTestdata = "../../collect/testdata/"

// fixture is the path of snapshot fixture name.
func fixture(name string) string { return hostTestdata + name + ".json" }

// fromArgs is --from with snapshot fixture name.
func fromArgs(name string) []string { return []string{"--from", fixture(name)} }

// snapshotVariant writes fixture name, changed by edit (on the decoded
// JSON document), to a file of its own and returns its path: snapshots the
// tests need that differ from a fixture in one fact.
func snapshotVariant(t *testing.T, name string, edit func(doc map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+"-variant.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// withoutRDMADevices is fixture name as a host without RDMA devices
// (/sys/class/infiniband empty) would record it: the same netdevs.
func withoutRDMADevices(t *testing.T, name string) string {
	t.Helper()
	return snapshotVariant(t, name, func(doc map[string]any) {
		doc["rdma"] = map[string]any{"devices": []any{}}
	})
}

// firstNamespace is the view namespace of a decoded snapshot document.
func firstNamespace(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	nss, _ := doc["namespaces"].([]any)
	if len(nss) == 0 {
		t.Fatal("fixture has no namespace")
	}
	return nss[0].(map[string]any)
}

// rxeWithNeighbours is the rxe fixture with the neighbour table of the
// lab's host side: the peer (02:00:00:00:00:02, lab.PeerMAC) on every
// network it has an address on, as `ip neigh` lists it once traffic has
// flowed, plus a gateway in STALE (still usable), the peer's VLAN 200
// address in DELAY (still usable) and an address that never answered in
// FAILED (no MAC: ibv_create_ah would time out). The NUD states are
// those of include/uapi/linux/neighbour.h. These are the neighbours of
// ah/testdata/rxe-net.json (see ah/testdata/README.md), and the peer's
// QinQ address 10.10.10.2.
func rxeWithNeighbours(t *testing.T) string {
	t.Helper()
	return snapshotVariant(t, "rxe", func(doc map[string]any) {
		firstNamespace(t, doc)["neighbors"] = []any{
			map[string]any{"ip": "10.0.0.2", "netdev": "veth0", "mac": "02:00:00:00:00:02", "state": "REACHABLE"},
			map[string]any{"ip": "10.0.0.254", "netdev": "veth0", "mac": "02:00:00:00:00:fe", "state": "STALE"},
			map[string]any{"ip": "10.0.0.3", "netdev": "veth0", "state": "FAILED"},
			map[string]any{"ip": "10.0.100.2", "netdev": "veth0.100", "mac": "02:00:00:00:00:02", "state": "REACHABLE"},
			map[string]any{"ip": "10.0.200.2", "netdev": "veth0.200", "mac": "02:00:00:00:00:02", "state": "DELAY"},
			map[string]any{"ip": "fd00::2", "netdev": "veth0", "mac": "02:00:00:00:00:02", "state": "REACHABLE"},
			map[string]any{"ip": "10.10.10.2", "netdev": "veth0.q1000.10", "mac": "02:00:00:00:00:02", "state": "REACHABLE"},
		}
	})
}

// jsonIs says whether the decoded JSON value got equals the JSON text
// want (key order aside: want is written in the documented order).
func jsonIs(got any, want string) bool {
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		panic(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(w)
	return string(a) == string(b)
}

// rawChain decodes a markings' vlan_chain (nil: null), for jsonIs.
func rawChain(c []json.RawMessage) any {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(c)
	var v any
	json.Unmarshal(b, &v)
	return v
}
