package collect

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/qos"
)

// parseCounter parses a sysfs counter value: decimal digits, an optional
// trailing newline (print_hw_stat: "%llu\n"; the PMA counters/ files
// likewise).
func parseCounter(b []byte) (uint64, error) {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" || s[0] == '+' {
		return 0, fmt.Errorf("counter value %q: want a decimal number", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter value %q: want a decimal number", s)
	}
	return v, nil
}

// parseSmall parses a small decimal sysfs/configfs value ("%u\n", "%d\n")
// at most max.
func parseSmall(b []byte, max uint64) (uint64, error) {
	v, err := parseCounter(b)
	if err != nil {
		return 0, err
	}
	if v > max {
		return 0, fmt.Errorf("value %d: want 0..%d", v, max)
	}
	return v, nil
}

// parseEnable parses an ecn/*/enable/<p> file: "0" or "1"; empty (the
// driver's query failed and it printed nothing) is unknown.
func parseEnable(b []byte) (*bool, error) {
	s := strings.TrimSuffix(string(b), "\n")
	switch s {
	case "":
		return nil, nil
	case "0":
		f := false
		return &f, nil
	case "1":
		t := true
		return &t, nil
	}
	return nil, fmt.Errorf("enable value %q: want 0 or 1", s)
}

// parseTCOverride parses the content of a tc/<port>/traffic_class file as
// traffic_class_show writes it: an optional "Global tclass=N" line, then
// one line per rule, "src_ip=A,dst_ip=B/L,tclass=N" (or src_ip6=, dst_ip6=),
// each part optional but tclass. An empty file means no override.
func parseTCOverride(s string) (global *uint8, rules []qos.TCRule, err error) {
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if v, ok := strings.CutPrefix(line, "Global tclass="); ok {
			tc, err := parseTClassValue(v)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			if global != nil {
				return nil, nil, fmt.Errorf("line %d: a second Global tclass", i+1)
			}
			global = &tc
			continue
		}
		var r qos.TCRule
		hasTC := false
		for _, f := range strings.Split(strings.TrimSuffix(line, ","), ",") {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return nil, nil, fmt.Errorf("line %d: %q is not key=value", i+1, f)
			}
			switch k {
			case "src_ip", "src_ip6":
				a, err := netip.ParseAddr(v)
				if err != nil || a.Is4() != (k == "src_ip") {
					return nil, nil, fmt.Errorf("line %d: %s %q is not an IPv%s address", i+1, k, v, map[bool]string{true: "4", false: "6"}[k == "src_ip"])
				}
				r.Src = &a
			case "dst_ip", "dst_ip6":
				var p netip.Prefix
				var err error
				if strings.Contains(v, "/") {
					p, err = netip.ParsePrefix(v)
				} else {
					var a netip.Addr
					a, err = netip.ParseAddr(v)
					p = netip.PrefixFrom(a, a.BitLen())
				}
				if err != nil || p.Addr().Is4() != (k == "dst_ip") {
					return nil, nil, fmt.Errorf("line %d: %s %q is not an IPv%s prefix", i+1, k, v, map[bool]string{true: "4", false: "6"}[k == "dst_ip"])
				}
				r.Dst = &p
			case "tclass":
				tc, err := parseTClassValue(v)
				if err != nil {
					return nil, nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				r.TrafficClass, hasTC = tc, true
			default:
				return nil, nil, fmt.Errorf("line %d: unknown key %q: want src_ip, dst_ip, src_ip6, dst_ip6 or tclass", i+1, k)
			}
		}
		if !hasTC {
			return nil, nil, fmt.Errorf("line %d: a rule without tclass", i+1)
		}
		rules = append(rules, r)
	}
	return global, rules, nil
}

func parseTClassValue(v string) (uint8, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 0, 8)
	if err != nil {
		return 0, fmt.Errorf("tclass %q: want 0..255", v)
	}
	return uint8(n), nil
}
