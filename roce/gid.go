package roce

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// GID is a 128-bit RDMA global identifier as stored in a port's GID table
// and carried in a GRH. On RoCE it is an IPv6 address or an IPv4-mapped
// IPv6 address (::ffff:a.b.c.d). It is the one GID type of roce-probe:
// package gid names it gid.GID (an alias) for its tables.
type GID [16]byte

// ParseGID parses a GID in any of the forms users and the kernel write:
// the sysfs form with eight groups of four hex digits
// ("fe80:0000:0000:0000:0202:c9ff:fe00:0001"), compressed IPv6 text
// ("fe80::202:c9ff:fe00:1"), IPv4-mapped text ("::ffff:192.168.0.2") or a
// plain IPv4 address ("192.168.0.2", which becomes ::ffff:192.168.0.2, as
// the kernel's rdma_ip2gid does).
func ParseGID(s string) (GID, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return GID{}, fmt.Errorf("gid: empty string: want an IPv6 address, an IPv4 address or 8 groups of 4 hex digits")
	}
	a, err := netip.ParseAddr(t)
	if err != nil {
		// 32 hex digits without separators, as some tools print.
		if len(t) == 32 {
			var g GID
			if _, herr := hex.Decode(g[:], []byte(t)); herr == nil {
				return g, nil
			}
		}
		return GID{}, fmt.Errorf("gid: %q is not a GID: want an IPv6 address, an IPv4 address or 8 groups of 4 hex digits", s)
	}
	if a.Zone() != "" {
		return GID{}, fmt.Errorf("gid: %q has a zone: a GID carries no zone", s)
	}
	return GIDFromAddr(a), nil
}

// MustParseGID is ParseGID for constants in tests and examples; it panics on error.
func MustParseGID(s string) GID {
	g, err := ParseGID(s)
	if err != nil {
		panic(err)
	}
	return g
}

// GIDFromAddr returns the GID of an IP address: IPv4 addresses become
// IPv4-mapped GIDs (rdma_ip2gid), IPv6 addresses are used unchanged.
func GIDFromAddr(a netip.Addr) GID {
	return GID(a.As16())
}

// Addr returns the GID as an IP address: the IPv4 address for an
// IPv4-mapped GID (rdma_gid2ip), the IPv6 address otherwise.
func (g GID) Addr() netip.Addr {
	return netip.AddrFrom16(g).Unmap()
}

// IsZero reports whether g is the all-zero GID of an empty slot.
func (g GID) IsZero() bool { return g == GID{} }

// IsIPv4Mapped reports whether g is ::ffff:a.b.c.d.
func (g GID) IsIPv4Mapped() bool {
	for _, b := range g[:10] {
		if b != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}

// IsLinkLocal reports whether the first 8 bytes are exactly fe80::/64, the
// kernel's rdma_link_local_addr test.
func (g GID) IsLinkLocal() bool {
	return g[0] == 0xfe && g[1] == 0x80 && g[2] == 0 && g[3] == 0 &&
		g[4] == 0 && g[5] == 0 && g[6] == 0 && g[7] == 0
}

// IsMulticast reports whether g is a multicast GID (first byte 0xff) or an
// IPv4-mapped multicast address, the kernel's rdma_is_multicast_addr.
func (g GID) IsMulticast() bool {
	if g[0] == 0xff {
		return true
	}
	return g.IsIPv4Mapped() && g[12]&0xf0 == 0xe0
}

// String returns the GID in IPv6 text form, compressed, with IPv4-mapped
// GIDs written as ::ffff:a.b.c.d.
func (g GID) String() string {
	return netip.AddrFrom16(g).String()
}

// SysfsString returns the GID as the kernel prints it in
// /sys/class/infiniband/<dev>/ports/<p>/gids/<i>: eight groups of four
// lower-case hex digits.
func (g GID) SysfsString() string {
	var b strings.Builder
	b.Grow(39)
	const digits = "0123456789abcdef"
	for i := 0; i < 16; i++ {
		if i > 0 && i%2 == 0 {
			b.WriteByte(':')
		}
		b.WriteByte(digits[g[i]>>4])
		b.WriteByte(digits[g[i]&0xf])
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (g GID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseGID.
func (g *GID) UnmarshalText(b []byte) error {
	v, err := ParseGID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// GIDKind classifies the address a GID stands for. It decides whether an
// entry is routable: link-local GIDs (IPv6 fe80::/10, the default GIDs, and
// IPv4 169.254/16) reach only the local link, which is why tools that pick
// them time out across a router.
type GIDKind string

// Address kinds.
const (
	GIDKindNone          GIDKind = ""                // empty slot
	GIDKindIPv4          GIDKind = "ipv4"            // IPv4-mapped ::ffff:a.b.c.d (not link-local, not multicast)
	GIDKindIPv4LinkLocal GIDKind = "ipv4-link-local" // IPv4-mapped 169.254.0.0/16
	GIDKindLinkLocal     GIDKind = "ipv6-link-local" // fe80::/10, including the default GIDs
	GIDKindULA           GIDKind = "ipv6-ula"        // fc00::/7 unique local
	GIDKindGlobal        GIDKind = "ipv6-global"     // any other unicast IPv6 address
	GIDKindMulticast     GIDKind = "multicast"       // ff00::/8 or IPv4-mapped 224.0.0.0/4
	GIDKindOther         GIDKind = "other"           // ::, ::1 and other special IPv6 addresses
)

// Kind classifies g. The zero GID gives GIDKindNone.
func (g GID) Kind() GIDKind {
	if g.IsZero() {
		return GIDKindNone
	}
	if g.IsMulticast() {
		return GIDKindMulticast
	}
	a := g.Addr()
	if a.Is4() {
		if a.IsLinkLocalUnicast() {
			return GIDKindIPv4LinkLocal
		}
		return GIDKindIPv4
	}
	switch {
	case a.IsLinkLocalUnicast():
		return GIDKindLinkLocal
	case a.IsLoopback() || a.IsUnspecified():
		return GIDKindOther
	case a.IsPrivate():
		return GIDKindULA
	}
	return GIDKindGlobal
}

// LinkLocal reports whether the kind reaches only the local link.
func (k GIDKind) LinkLocal() bool { return k == GIDKindLinkLocal || k == GIDKindIPv4LinkLocal }

// Family returns 4 for IPv4 kinds, 6 for IPv6 kinds, 0 for GIDKindNone and
// GIDKindOther. Multicast gives 0 as well; use the GID for its family.
func (k GIDKind) Family() int {
	switch k {
	case GIDKindIPv4, GIDKindIPv4LinkLocal:
		return 4
	case GIDKindLinkLocal, GIDKindULA, GIDKindGlobal:
		return 6
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler.
func (k GIDKind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts the names of the constants' values.
func (k *GIDKind) UnmarshalText(b []byte) error {
	switch v := GIDKind(b); v {
	case GIDKindNone, GIDKindIPv4, GIDKindIPv4LinkLocal, GIDKindLinkLocal, GIDKindULA, GIDKindGlobal, GIDKindMulticast, GIDKindOther:
		*k = v
		return nil
	}
	return fmt.Errorf("gid: unknown address kind %q", string(b))
}
