package gid

import (
	"fmt"
	"net/netip"
)

// AddrKind classifies the address a GID stands for. It decides whether an
// entry is routable: link-local GIDs (IPv6 fe80::/10, the default GIDs, and
// IPv4 169.254/16) reach only the local link, which is why tools that pick
// them time out across a router.
type AddrKind string

// Address kinds.
const (
	KindNone          AddrKind = ""                // empty slot
	KindIPv4          AddrKind = "ipv4"            // IPv4-mapped ::ffff:a.b.c.d (not link-local, not multicast)
	KindIPv4LinkLocal AddrKind = "ipv4-link-local" // IPv4-mapped 169.254.0.0/16
	KindLinkLocal     AddrKind = "ipv6-link-local" // fe80::/10, including the default GIDs
	KindULA           AddrKind = "ipv6-ula"        // fc00::/7 unique local
	KindGlobal        AddrKind = "ipv6-global"     // any other unicast IPv6 address
	KindMulticast     AddrKind = "multicast"       // ff00::/8 or IPv4-mapped 224.0.0.0/4
	KindOther         AddrKind = "other"           // ::, ::1 and other special IPv6 addresses
)

// Kind classifies g. The zero GID gives KindNone.
func (g GID) Kind() AddrKind {
	if g.IsZero() {
		return KindNone
	}
	if g.IsMulticast() {
		return KindMulticast
	}
	a := g.Addr()
	if a.Is4() {
		if a.IsLinkLocalUnicast() {
			return KindIPv4LinkLocal
		}
		return KindIPv4
	}
	switch {
	case a.IsLinkLocalUnicast():
		return KindLinkLocal
	case a.IsLoopback() || a.IsUnspecified():
		return KindOther
	case a.IsPrivate():
		return KindULA
	}
	return KindGlobal
}

// LinkLocal reports whether the kind reaches only the local link.
func (k AddrKind) LinkLocal() bool { return k == KindLinkLocal || k == KindIPv4LinkLocal }

// Family returns 4 for IPv4 kinds, 6 for IPv6 kinds, 0 for KindNone and
// KindOther. Multicast gives 0 as well; use the GID for its family.
func (k AddrKind) Family() int {
	switch k {
	case KindIPv4, KindIPv4LinkLocal:
		return 4
	case KindLinkLocal, KindULA, KindGlobal:
		return 6
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler.
func (k AddrKind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts the names of the constants' values.
func (k *AddrKind) UnmarshalText(b []byte) error {
	switch v := AddrKind(b); v {
	case KindNone, KindIPv4, KindIPv4LinkLocal, KindLinkLocal, KindULA, KindGlobal, KindMulticast, KindOther:
		*k = v
		return nil
	}
	return fmt.Errorf("gid: unknown address kind %q", string(b))
}

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
