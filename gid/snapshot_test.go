package gid_test

import (
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

// The fixtures are roce-probe host snapshots in host/testdata (their
// README says where every fact comes from), read through package host,
// which owns their format (host imports gid; these tests are package
// gid_test, so they may import host).

func loadHost(t testing.TB, name string) *host.Snapshot {
	t.Helper()
	s, err := host.Load(filepath.Join("..", "host", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loadSnap returns the fixture's (first) network namespace.
func loadSnap(t testing.TB, name string) *vlan.Namespace {
	t.Helper()
	ns, err := loadHost(t, name).Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// fixturePorts returns the fixture's ports with their tables (gid.NewPort)
// mapped to its namespace (gid.Map), device after device.
func fixturePorts(t testing.TB, name string) []gid.Port {
	t.Helper()
	s := loadHost(t, name)
	ns, err := s.Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.Ports(ns)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
