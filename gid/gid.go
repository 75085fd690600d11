package gid

import (
	"net/netip"

	"github.com/roce-probe/roce-probe/roce"
)

// GID is a 128-bit RDMA global identifier: roce.GID, the wire-format type
// a GRH carries, under the name the tables use. It is an alias, so there
// is one GID type in roce-probe; its methods (Addr, IsZero, IsIPv4Mapped,
// IsLinkLocal, IsMulticast, Kind, String, SysfsString, MarshalText,
// UnmarshalText) are documented in package roce.
type GID = roce.GID

// Zero is the all-zero GID, which marks an empty GID table slot.
var Zero GID

// Parse parses a GID in any of the forms users and the kernel write
// (roce.ParseGID): the sysfs form with eight groups of four hex digits,
// compressed IPv6 text, IPv4-mapped text or a plain IPv4 address, which
// becomes ::ffff:a.b.c.d as the kernel's rdma_ip2gid makes it.
func Parse(s string) (GID, error) { return roce.ParseGID(s) }

// MustParse is Parse for constants in tests and examples; it panics on error.
func MustParse(s string) GID { return roce.MustParseGID(s) }

// FromAddr returns the GID of an IP address (roce.GIDFromAddr): IPv4
// addresses become IPv4-mapped GIDs (rdma_ip2gid), IPv6 addresses are used
// unchanged.
func FromAddr(a netip.Addr) GID { return roce.GIDFromAddr(a) }

// AddrKind classifies the address a GID stands for (roce.GIDKind, an
// alias): link-local GIDs reach only the local link.
type AddrKind = roce.GIDKind

// Address kinds (the roce.GIDKind constants).
const (
	KindNone          = roce.GIDKindNone          // empty slot
	KindIPv4          = roce.GIDKindIPv4          // IPv4-mapped ::ffff:a.b.c.d (not link-local, not multicast)
	KindIPv4LinkLocal = roce.GIDKindIPv4LinkLocal // IPv4-mapped 169.254.0.0/16
	KindLinkLocal     = roce.GIDKindLinkLocal     // fe80::/10, including the default GIDs
	KindULA           = roce.GIDKindULA           // fc00::/7 unique local
	KindGlobal        = roce.GIDKindGlobal        // any other unicast IPv6 address
	KindMulticast     = roce.GIDKindMulticast     // ff00::/8 or IPv4-mapped 224.0.0.0/4
	KindOther         = roce.GIDKindOther         // ::, ::1 and other special IPv6 addresses
)
