package host

import (
	"errors"
	"fmt"
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
	// Pause has one entry per real netdev below an RDMA port: its 802.3x
	// pause settings (`ethtool -a`); nil in snapshots written before it
	// was collected.
	Pause []qos.Pause `json:"pause"`
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

// PauseOf returns netdev's 802.3x pause entry, nil when not in the
// snapshot.
func (s *Settings) PauseOf(netdev string) *qos.Pause {
	if s == nil {
		return nil
	}
	for i := range s.Pause {
		if s.Pause[i].Netdev == netdev {
			return &s.Pause[i]
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
	nd = map[string]bool{}
	for _, p := range s.Pause {
		if p.Netdev == "" || len(p.Netdev) > 15 || strings.ContainsAny(p.Netdev, "/ \x00") {
			return fmt.Errorf("settings.pause: netdev name %q is not valid", p.Netdev)
		}
		if nd[p.Netdev] {
			return fmt.Errorf("settings.pause: netdev %s appears twice", p.Netdev)
		}
		nd[p.Netdev] = true
		if err := validStatus(p.Status, p.Source, p.Reason); err != nil {
			return fmt.Errorf("settings.pause: %s: %w", p.Netdev, err)
		}
		if p.Status == qos.SettingRead && (p.RX == nil || p.TX == nil) {
			return fmt.Errorf("settings.pause: %s: status %q without rx and tx", p.Netdev, p.Status)
		}
	}
	return nil
}
