package gid

import "net/netip"

// The automatic GID choices of NCCL, UCX and perftest, written from their
// source: NCCL v2.30.7 src/transport/net_ib/connect.cc (ncclIbGetGidIndex,
// ncclUpdateGidIndex), UCX master 9466d104a3 (2026-08-21)
// src/uct/ib/base/ib_device.c (uct_ib_device_select_gid) and perftest
// master 00b55b6 (2026-07-27) src/perftest_communication.c
// (get_best_gid_index, compute_gid_score), so roce-probe can show what
// those tools will pick on a table and where it differs from Select. Each
// takes a port's full table in index order, empty slots included, as sysfs
// shows it. They model the tools; they are not the tools.

// autoFamily is the family test NCCL and UCX use: IPv4-mapped
// (::ffff:a.b.c.d) or the RoCE v1 IPv4 multicast form ff0e::ffff:a.b.c.d
// count as IPv4.
func autoFamily(g GID) int {
	if g.IsIPv4Mapped() {
		return 4
	}
	if g[0] == 0xff && g[1] == 0x0e && g[10] == 0xff && g[11] == 0xff {
		rest := true
		for _, b := range g[2:10] {
			rest = rest && b == 0
		}
		if rest {
			return 4
		}
	}
	return 6
}

// NCCLOptions are the NCCL environment variables that steer its choice.
type NCCLOptions struct {
	Family  int          // NCCL_IB_ADDR_FAMILY: 4 (AF_INET, default when 0) or 6
	Version int          // NCCL_IB_ROCE_VERSION_NUM: 2 when 0
	Range   netip.Prefix // NCCL_IB_ADDR_RANGE; invalid for none
}

// NCCL returns the GID index NCCL's ncclIbGetGidIndex picks on a RoCE port
// when NCCL_IB_GID_INDEX is unset: starting from index 0, a candidate of
// the wanted family replaces a best of the other family outright (without
// checking validity or version); otherwise a valid candidate of the wanted
// family replaces the best if the versions differ (or the best is invalid)
// and the candidate has the wanted version. "Valid" excludes zero GIDs and
// fe80::/64. The version comes from gid_attrs/types, which fails for empty
// slots: NCCL then compares an uninitialised value, modelled here as
// "unknown" (equal to nothing).
func NCCL(table []Entry, o NCCLOptions) int {
	wantFam, wantVer := o.Family, o.Version
	if wantFam == 0 {
		wantFam = 4
	}
	if wantVer == 0 {
		wantVer = 2
	}
	inRange := func(e Entry) bool {
		if !o.Range.IsValid() {
			return true
		}
		return o.Range.Contains(e.GID.Addr())
	}
	valid := func(e Entry) bool { return !e.GID.IsZero() && !e.GID.IsLinkLocal() }
	ver := func(e Entry) int {
		if e.Empty {
			return -1 // unreadable types/N
		}
		return int(e.Type)
	}
	if len(table) == 0 {
		return 0
	}
	best := table[0]
	for _, c := range table[1:] {
		fc, fb := autoFamily(c.GID), autoFamily(best.GID)
		if fc != fb && fc == wantFam && inRange(c) {
			best = c
			continue
		}
		if fc != wantFam || !valid(c) || !inRange(c) {
			continue
		}
		vc, vb := ver(c), ver(best)
		if (vc != vb || !valid(best)) && vc == wantVer {
			best = c
		}
	}
	return best.Index
}

// UCX returns the GID index UCX picks with UCX_IB_GID_INDEX=auto: the
// first non-zero entry, in index order, matching the first satisfiable
// priority of (v2, IPv4), (v2, IPv6 not link-local), (v2, IPv6),
// (v1, IPv4), (v1, IPv6 not link-local), (v1, IPv6); index 0 if none. UCX
// also requires that an address handle can be created with the entry,
// which any valid entry of this namespace passes; entries whose netdev is
// not visible (Netns == NetnsOther) are treated as failing it. An
// unreadable type counts as v1.
func UCX(table []Entry) int {
	type prio struct {
		ver Type
		fam int
		ll  bool // link-local allowed
	}
	prios := []prio{
		{TypeRoCEv2, 4, true}, {TypeRoCEv2, 6, false}, {TypeRoCEv2, 6, true},
		{TypeRoCEv1, 4, true}, {TypeRoCEv1, 6, false}, {TypeRoCEv1, 6, true},
	}
	for _, p := range prios {
		for _, e := range table {
			if e.GID.IsZero() || e.Netns == NetnsOther {
				continue
			}
			t := e.Type
			if t != TypeRoCEv2 {
				t = TypeRoCEv1
			}
			if t != p.ver || autoFamily(e.GID) != p.fam {
				continue
			}
			if !p.ll && e.GID.Kind() == KindLinkLocal {
				continue
			}
			return e.Index
		}
	}
	return 0
}

// Perftest returns the GID index perftest's get_best_gid_index picks on
// Ethernet when -x is not given: every non-zero entry scores 100 if its
// family is the preferred one (IPv4, or IPv6 with --ipv6), 10 if it is
// not link-local (fe80::/10 or 169.254/16), 2 for RoCE v2 or 1 for v1; the
// highest score wins, the lowest index on a tie.
func Perftest(table []Entry, ipv6 bool) int {
	want := 4
	if ipv6 {
		want = 6
	}
	best, bestScore := 0, -1
	for _, e := range table {
		if e.GID.IsZero() {
			continue
		}
		s := 0
		if family(e.GID) == want {
			s += 100
		}
		if !e.GID.Kind().LinkLocal() {
			s += 10
		}
		switch e.Type {
		case TypeRoCEv2:
			s += 2
		case TypeRoCEv1:
			s += 1
		}
		if s > bestScore {
			best, bestScore = e.Index, s
		}
	}
	return best
}
