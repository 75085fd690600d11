package gid

import "net/netip"

// family returns 4 or 6 for g's address family (IPv4-mapped → 4).
func family(g GID) int {
	if g.IsIPv4Mapped() {
		return 4
	}
	return 6
}

// addrOf returns the address a GID stands for, or an invalid Addr for the
// zero GID.
func addrOf(g GID) netip.Addr {
	if g.IsZero() {
		return netip.Addr{}
	}
	return g.Addr()
}
