package ah

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
)

// rxeTable is port 1 of an rxe device on veth0 (10.0.0.1/24, fd00::1/64):
// index 0 the default GID, then one RoCE v2 entry per address
// (drivers/infiniband/core/cache.c, gid_table_reserve_default and
// ib_cache_gid_add, on a RoCE v2 only port:
// drivers/infiniband/sw/rxe/rxe_verbs.c, rxe_port_immutable; Linux 6.1),
// slot 3 empty, 8 slots in all.
func rxeTable() Table {
	e := func(i int, g string) gid.Entry {
		return gid.Entry{Device: "rxe0", Port: 1, Index: i, GID: gid.MustParse(g), Type: gid.TypeRoCEv2, Netdev: "veth0"}
	}
	return Table{Len: 8, Entries: []gid.Entry{
		e(0, "fe80::ff:fe00:1"),
		e(1, "::ffff:10.0.0.1"),
		e(2, "fd00::1"),
		{Device: "rxe0", Port: 1, Index: 3, Empty: true},
		{Device: "rxe0", Port: 1, Index: 4, GID: gid.MustParse("fe80::1"), Type: gid.TypeIB},
	}}
}

func goodAttr() Attr {
	return Attr{IsGlobal: true, PortNum: 1, GRH: GlobalRoute{DGID: gid.MustParse("::ffff:10.0.0.2"), SGIDIndex: 1, HopLimit: 64}}
}

func TestValidate(t *testing.T) {
	type want struct {
		field, errno string
	}
	cases := []struct {
		name   string
		mutate func(*Attr)
		want   []want
	}{
		{"valid IPv4", func(a *Attr) {}, nil},
		{"valid IPv6", func(a *Attr) { a.GRH.SGIDIndex = 2; a.GRH.DGID = gid.MustParse("fd00::2") }, nil},
		{"valid link-local destination from the default GID", func(a *Attr) { a.GRH.SGIDIndex = 0; a.GRH.DGID = gid.MustParse("fe80::ff:fe00:2") }, nil},
		{"valid IPv4 multicast", func(a *Attr) { a.GRH.DGID = gid.MustParse("::ffff:239.1.1.1") }, nil},
		{"valid IPv6 multicast", func(a *Attr) { a.GRH.SGIDIndex = 2; a.GRH.DGID = gid.MustParse("ff0e::1") }, nil},
		{"valid all rates", func(a *Attr) { a.StaticRate = 24; a.SL = 15; a.GRH.FlowLabel = 0xFFFFF; a.GRH.TrafficClass = 0xFF }, nil},
		// is_global must be 1 on Ethernet (providers/mlx5/verbs.c, mlx5_create_ah,
		// rdma-core v64.0; drivers/infiniband/core/verbs.c, rdma_check_ah_attr, Linux 6.1).
		{"is_global 0", func(a *Attr) { a.IsGlobal = false }, []want{{"is_global", "EINVAL"}}},
		// Uninitialised static_rate → EINVAL (drivers/infiniband/hw/mlx5/qp.c,
		// mlx5r_ib_rate, Linux 6.12); 1 is not an enum ibv_rate value
		// (libibverbs/verbs.h, rdma-core v64.0).
		{"static_rate 1", func(a *Attr) { a.StaticRate = 1 }, []want{{"static_rate", "EINVAL"}}},
		{"static_rate garbage", func(a *Attr) { a.StaticRate = 0xBE }, []want{{"static_rate", "EINVAL"}}},
		{"port 0", func(a *Attr) { a.PortNum = 0 }, []want{{"port_num", "EINVAL"}}},
		{"other port", func(a *Attr) { a.PortNum = 2 }, []want{{"port_num", "EINVAL"}}},
		{"sl 16", func(a *Attr) { a.SL = 16 }, []want{{"sl", ""}}},
		{"flow label 21 bits", func(a *Attr) { a.GRH.FlowLabel = 0x100000 }, []want{{"grh.flow_label", ""}}},
		// drivers/infiniband/core/cache.c, rdma_get_gid_attr (Linux 6.1): idx out of range → -EINVAL, empty → -ENODATA.
		{"sgid beyond table", func(a *Attr) { a.GRH.SGIDIndex = 8 }, []want{{"grh.sgid_index", "EINVAL"}}},
		{"sgid empty", func(a *Attr) { a.GRH.SGIDIndex = 3 }, []want{{"grh.sgid_index", "ENODATA"}}},
		{"sgid not given is empty", func(a *Attr) { a.GRH.SGIDIndex = 7 }, []want{{"grh.sgid_index", "ENODATA"}}},
		{"sgid IB type", func(a *Attr) { a.GRH.SGIDIndex = 4 }, []want{{"grh.sgid_index", "EINVAL"}}},
		// rdma_resolve_ip: src and dst families must match → -EINVAL.
		{"IPv6 dgid from IPv4 sgid", func(a *Attr) { a.GRH.DGID = gid.MustParse("fd00::2") }, []want{{"grh.dgid", "EINVAL"}}},
		{"IPv4 dgid from IPv6 sgid", func(a *Attr) { a.GRH.SGIDIndex = 2 }, []want{{"grh.dgid", "EINVAL"}}},
		{"link-local dgid from IPv4 sgid", func(a *Attr) { a.GRH.DGID = gid.MustParse("fe80::2") }, []want{{"grh.dgid", "EINVAL"}}},
		{"IPv6 multicast from IPv4 sgid", func(a *Attr) { a.GRH.DGID = gid.MustParse("ff0e::1") }, []want{{"grh.dgid", ""}}},
		{"zero dgid", func(a *Attr) { a.GRH.DGID = gid.GID{} }, []want{{"grh.dgid", ""}}},
		{"everything wrong at once", func(a *Attr) {
			a.PortNum, a.StaticRate, a.SL, a.GRH.FlowLabel, a.GRH.SGIDIndex = 0, 1, 200, 0xFFFFFFFF, 3
		}, []want{{"port_num", "EINVAL"}, {"static_rate", "EINVAL"}, {"sl", ""}, {"grh.flow_label", ""}, {"grh.sgid_index", "ENODATA"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := goodAttr()
			c.mutate(&a)
			err := a.Validate(rxeTable())
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %v, want *ValidationError", err)
			}
			if len(ve.Problems) != len(c.want) {
				t.Fatalf("got %d problems, want %d: %v", len(ve.Problems), len(c.want), err)
			}
			for i, w := range c.want {
				p := ve.Problems[i]
				if p.Field != w.field || p.Errno != w.errno {
					t.Errorf("problem %d = %s (%s), want field %s errno %q", i, p.Field, p.Errno, w.field, w.errno)
				}
				if p.Value == "" || p.Allowed == "" || p.Reason == "" {
					t.Errorf("problem %d lacks value, allowed range or reason: %+v", i, p)
				}
				if !strings.Contains(err.Error(), p.Field) || !strings.Contains(err.Error(), p.Value) {
					t.Errorf("message %q does not name %s = %s", err, p.Field, p.Value)
				}
				if w.errno == "EINVAL" && !errors.Is(err, syscall.EINVAL) {
					t.Errorf("errors.Is(err, EINVAL) = false for %v", err)
				}
			}
		})
	}
}

func TestValidateWithoutTableChecksRangesOnly(t *testing.T) {
	a := goodAttr()
	a.GRH.SGIDIndex = 200
	if err := a.Validate(Table{}); err != nil {
		t.Fatalf("Validate without a table: %v", err)
	}
	a.IsGlobal = false
	if err := a.Validate(Table{}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("is_global 0 without a table: %v, want EINVAL", err)
	}
}

func TestValidateNamesTheValidIndexes(t *testing.T) {
	a := goodAttr()
	a.GRH.SGIDIndex = 3
	err := a.Validate(rxeTable())
	if err == nil || !strings.Contains(err.Error(), "valid: 0, 1, 2, 4") {
		t.Fatalf("message %v does not list the valid indexes", err)
	}
	if !errors.Is(err, syscall.ENODATA) || errors.Is(err, syscall.EINVAL) {
		t.Errorf("errors.Is mismatch for %v", err)
	}
}

// enum ibv_rate (rdma-core libibverbs/verbs.h): IBV_RATE_MAX 0, then
// IBV_RATE_2_5_GBPS 2 .. IBV_RATE_1200_GBPS 24; 1 is not a value.
func TestValidStaticRate(t *testing.T) {
	for r, want := range map[uint8]bool{0: true, 1: false, 2: true, 3: true, 24: true, 25: false, 255: false} {
		if got := ValidStaticRate(r); got != want {
			t.Errorf("ValidStaticRate(%d) = %v, want %v", r, got, want)
		}
	}
}
