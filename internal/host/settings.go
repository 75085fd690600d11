package host

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/qos"
)

// Settings is the snapshot's "settings" section: what the kernel and
// drivers apply behind the application's back, each entry labelled with
// the file it was read from (docs/counters.md, "Settings").
type Settings struct {
	// RDMACM has one entry per RDMA port: rdma_cm's configfs
	// default_roce_tos and default_roce_mode.
	RDMACM []qos.RDMACMDefault `json:"rdma_cm_defaults"`
	// TrafficClass has one entry per RDMA port: MLNX_OFED mlx5's
	// tc/<port>/traffic_class ("not exposed" on every other driver).
	TrafficClass []qos.TCOverride `json:"traffic_class_overrides"`
	// DCQCN has one entry per real netdev below an RDMA port.
	DCQCN []qos.DCQCN `json:"dcqcn"`
}

// RDMACMOf returns port's rdma_cm defaults, nil when not in the snapshot.
func (s *Settings) RDMACMOf(dev string, port int) *qos.RDMACMDefault {
	if s == nil {
		return nil
	}
	for i := range s.RDMACM {
		if s.RDMACM[i].Device == dev && s.RDMACM[i].Port == port {
			return &s.RDMACM[i]
		}
	}
	return nil
}

// TCOverrideOf returns port's traffic class override entry, nil when not
// in the snapshot.
func (s *Settings) TCOverrideOf(dev string, port int) *qos.TCOverride {
	if s == nil {
		return nil
	}
	for i := range s.TrafficClass {
		if s.TrafficClass[i].Device == dev && s.TrafficClass[i].Port == port {
			return &s.TrafficClass[i]
		}
	}
	return nil
}

// DCQCNOf returns netdev's DCQCN entry, nil when not in the snapshot.
func (s *Settings) DCQCNOf(netdev string) *qos.DCQCN {
	if s == nil {
		return nil
	}
	for i := range s.DCQCN {
		if s.DCQCN[i].Netdev == netdev {
			return &s.DCQCN[i]
		}
	}
	return nil
}

func validStatus(st qos.SettingStatus, source string, reason *string) error {
	switch st {
	case qos.SettingRead:
	case qos.SettingNotExposed, qos.SettingError:
		if reason == nil || *reason == "" {
			return fmt.Errorf("status %q without a reason", st)
		}
	default:
		return fmt.Errorf("status %q: want %q, %q or %q", st, qos.SettingRead, qos.SettingNotExposed, qos.SettingError)
	}
	if source == "" {
		return errors.New("no source path")
	}
	return nil
}

// Validate checks the settings' devices, ports, statuses and values.
func (s *Settings) Validate() error {
	if s == nil {
		return nil
	}
	type key struct {
		dev  string
		port int
	}
	check := func(what, dev string, port int, seen map[key]bool) error {
		if dev == "" || strings.ContainsAny(dev, "/\x00") {
			return fmt.Errorf("settings.%s: device name %q is not valid", what, dev)
		}
		if port < 1 || port > 255 {
			return fmt.Errorf("settings.%s: %s port %d: want a port number 1..255", what, dev, port)
		}
		if seen[key{dev, port}] {
			return fmt.Errorf("settings.%s: %s port %d appears twice", what, dev, port)
		}
		seen[key{dev, port}] = true
		return nil
	}
	seen := map[key]bool{}
	for _, c := range s.RDMACM {
		if err := check("rdma_cm_defaults", c.Device, c.Port, seen); err != nil {
			return err
		}
		if err := validStatus(c.Status, c.Source, c.Reason); err != nil {
			return fmt.Errorf("settings.rdma_cm_defaults: %s port %d: %w", c.Device, c.Port, err)
		}
		if c.Mode != nil && *c.Mode != "RoCE v2" && *c.Mode != "IB/RoCE v1" {
			return fmt.Errorf("settings.rdma_cm_defaults: %s port %d: default_roce_mode %q: want \"RoCE v2\" or \"IB/RoCE v1\"", c.Device, c.Port, *c.Mode)
		}
	}
	seen = map[key]bool{}
	for _, o := range s.TrafficClass {
		if err := check("traffic_class_overrides", o.Device, o.Port, seen); err != nil {
			return err
		}
		if err := validStatus(o.Status, o.Source, o.Reason); err != nil {
			return fmt.Errorf("settings.traffic_class_overrides: %s port %d: %w", o.Device, o.Port, err)
		}
	}
	nd := map[string]bool{}
	for _, d := range s.DCQCN {
		if d.Netdev == "" || len(d.Netdev) > 15 || strings.ContainsAny(d.Netdev, "/ \x00") {
			return fmt.Errorf("settings.dcqcn: netdev name %q is not valid", d.Netdev)
		}
		if nd[d.Netdev] {
			return fmt.Errorf("settings.dcqcn: netdev %s appears twice", d.Netdev)
		}
		nd[d.Netdev] = true
		if err := validStatus(d.Status, d.Source, d.Reason); err != nil {
			return fmt.Errorf("settings.dcqcn: %s: %w", d.Netdev, err)
		}
		if d.CNPDSCP != nil && *d.CNPDSCP > 63 {
			return fmt.Errorf("settings.dcqcn: %s: cnp_dscp %d: want 0..63", d.Netdev, *d.CNPDSCP)
		}
		if d.CNPPrio != nil && *d.CNPPrio > 7 {
			return fmt.Errorf("settings.dcqcn: %s: cnp_802p_prio %d: want 0..7", d.Netdev, *d.CNPPrio)
		}
	}
	return nil
}

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
