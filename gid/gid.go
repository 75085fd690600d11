package gid

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// GID is a 128-bit RDMA global identifier as stored in a port's GID table
// and carried in a GRH. On RoCE it is an IPv6 address or an IPv4-mapped
// IPv6 address (::ffff:a.b.c.d).
type GID [16]byte

// Zero is the all-zero GID, which marks an empty GID table slot.
var Zero GID

// Parse parses a GID in any of the forms users and the kernel write:
// the sysfs form with eight groups of four hex digits
// ("fe80:0000:0000:0000:0202:c9ff:fe00:0001"), compressed IPv6 text
// ("fe80::202:c9ff:fe00:1"), IPv4-mapped text ("::ffff:192.168.0.2") or a
// plain IPv4 address ("192.168.0.2", which becomes ::ffff:192.168.0.2, as
// the kernel's rdma_ip2gid does).
func Parse(s string) (GID, error) {
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
	return FromAddr(a), nil
}

// MustParse is Parse for constants in tests and examples; it panics on error.
func MustParse(s string) GID {
	g, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return g
}

// FromAddr returns the GID of an IP address: IPv4 addresses become
// IPv4-mapped GIDs (rdma_ip2gid), IPv6 addresses are used unchanged.
func FromAddr(a netip.Addr) GID {
	return GID(a.As16())
}

// Addr returns the GID as an IP address: the IPv4 address for an
// IPv4-mapped GID (rdma_gid2ip), the IPv6 address otherwise.
func (g GID) Addr() netip.Addr {
	return netip.AddrFrom16(g).Unmap()
}

// IsZero reports whether g is the all-zero GID of an empty slot.
func (g GID) IsZero() bool { return g == Zero }

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

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (g *GID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}
