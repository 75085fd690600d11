package collect

import (
	"strings"
	"testing"
)

// The tc/<port>/traffic_class file as MLNX_OFED's traffic_class_show writes
// it (mlnx-ofa_kernel drivers/infiniband/hw/mlx5/main_ext.c: "Global
// tclass=%d\n", then per rule tclass_print_src_ip "src_ip=%pI4,",
// tclass_print_dst_ip "dst_ip=%pI4/%d,", the ip6 forms, and
// tclass_print_tclass "tclass=%d\n").
func TestParseTCOverride(t *testing.T) {
	g, rules, err := parseTCOverride("Global tclass=106\nsrc_ip=10.0.0.1,dst_ip=10.0.1.0/24,tclass=96\ndst_ip6=fd00::2,tclass=104\n")
	if err != nil || g == nil || *g != 106 || len(rules) != 2 {
		t.Fatalf("global %v rules %+v err %v", g, rules, err)
	}
	if rules[0].Src.String() != "10.0.0.1" || rules[0].Dst.String() != "10.0.1.0/24" || rules[0].TrafficClass != 96 {
		t.Errorf("rule 0 %+v", rules[0])
	}
	if rules[1].Src != nil || rules[1].Dst.String() != "fd00::2/128" || rules[1].TrafficClass != 104 {
		t.Errorf("rule 1 %+v", rules[1])
	}
	if g, rules, err := parseTCOverride(""); g != nil || rules != nil || err != nil {
		t.Errorf("empty file: %v %v %v", g, rules, err)
	}
	for _, bad := range []string{"Global tclass=256", "tclass=x", "dst_ip=10.0.0.0/24", "src_ip=fd00::1,tclass=3", "color=red,tclass=3", "Global tclass=1\nGlobal tclass=2"} {
		if _, _, err := parseTCOverride(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestSysfsValues(t *testing.T) {
	for in, want := range map[string]uint64{"0\n": 0, "18446744073709551615\n": 1<<64 - 1, "42": 42} {
		if v, err := parseCounter([]byte(in)); err != nil || v != want {
			t.Errorf("parseCounter(%q) = %d, %v", in, v, err)
		}
	}
	for _, bad := range []string{"", "\n", "-1", "+1", "0x10", "1 2", "18446744073709551616"} {
		if _, err := parseCounter([]byte(bad)); err == nil {
			t.Errorf("parseCounter(%q) accepted", bad)
		}
	}
	if _, err := parseSmall([]byte("256\n"), 255); err == nil {
		t.Error("default_roce_tos 256 accepted")
	}
	if b, err := parseEnable([]byte("1\n")); err != nil || b == nil || !*b {
		t.Errorf("enable 1: %v %v", b, err)
	}
	if b, err := parseEnable([]byte("")); err != nil || b != nil {
		t.Errorf("enable empty (the driver's query failed): %v %v", b, err)
	}
	if _, err := parseEnable([]byte("2")); err == nil {
		t.Error("enable 2 accepted")
	}
}

func FuzzSysfsValues(f *testing.F) {
	f.Add("Global tclass=106\nsrc_ip=10.0.0.1,dst_ip=10.0.1.0/24,tclass=96\n")
	f.Add("dst_ip6=fd00::2,tclass=104,")
	f.Add("123\n")
	f.Fuzz(func(t *testing.T, s string) {
		if g, rules, err := parseTCOverride(s); err == nil {
			for _, r := range rules {
				if r.Src != nil && !r.Src.IsValid() || r.Dst != nil && !r.Dst.IsValid() {
					t.Fatalf("invalid address in %+v", r)
				}
			}
			_ = g
		}
		if v, err := parseCounter([]byte(s)); err == nil {
			// Only decimal digits (the kernel's %llu; leading zeros
			// are harmless), and the number they spell.
			d := strings.TrimSuffix(s, "\n")
			if strings.TrimLeft(d, "0123456789") != "" || strings.TrimLeft(d, "0") != strings.TrimLeft(uitoa(v), "0") {
				t.Fatalf("parseCounter(%q) = %d", s, v)
			}
		}
		if b, err := parseEnable([]byte(s)); err == nil && b != nil && strings.TrimSuffix(s, "\n") != map[bool]string{true: "1", false: "0"}[*b] {
			t.Fatalf("parseEnable(%q) = %v", s, *b)
		}
	})
}

func uitoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for v > 0 {
		n--
		b[n] = byte('0' + v%10)
		v /= 10
	}
	return string(b[n:])
}
