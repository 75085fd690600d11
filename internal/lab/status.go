//go:build linux

package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/roce-probe/roce-probe/internal/null"
)

// PortState returns the state of an RDMA device's port as sysfs shows it
// (/sys/class/infiniband/DEV/ports/PORT/state), e.g. "ACTIVE" or "DOWN".
func PortState(dev string, port int) (string, error) {
	b, err := os.ReadFile(filepath.Join(sysfsRoot, "class/infiniband", dev, "ports", strconv.Itoa(port), "state"))
	if err != nil {
		return "", fmt.Errorf("lab: port %d of %s: %w", port, dev, err)
	}
	// "4: ACTIVE"
	s := strings.TrimSpace(string(b))
	if _, name, ok := strings.Cut(s, ": "); ok {
		return name, nil
	}
	return s, nil
}

// WaitPortActive polls the port's state until it is ACTIVE or the timeout
// passes; the error then names the last state seen.
func WaitPortActive(dev string, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, err := PortState(dev, port)
		if err == nil && st == "ACTIVE" {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("lab: port %d of %s not ACTIVE after %v: %w", port, dev, timeout, err)
			}
			return fmt.Errorf("lab: port %d of %s not ACTIVE after %v: state %s", port, dev, timeout, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gidKey is a GID table entry reduced to what Up waits for.
type gidKey struct {
	addr   netip.Addr // IPv4-mapped GIDs as IPv4
	netdev string
}

// gidAddrs returns the GIDs in the port's table with their netdevs. It
// reads sysfs directly; package gid is the full reader.
func gidAddrs(dev string, port int) (map[gidKey]bool, error) {
	pdir := filepath.Join(sysfsRoot, "class/infiniband", dev, "ports", strconv.Itoa(port))
	ents, err := os.ReadDir(filepath.Join(pdir, "gids"))
	if err != nil {
		return nil, fmt.Errorf("lab: GID table of %s port %d: %w", dev, port, err)
	}
	got := map[gidKey]bool{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(pdir, "gids", e.Name()))
		if err != nil {
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSpace(string(b)))
		if err != nil || a.IsUnspecified() {
			continue
		}
		nd, err := os.ReadFile(filepath.Join(pdir, "gid_attrs/ndevs", e.Name()))
		if err != nil {
			continue
		}
		got[gidKey{a.Unmap(), strings.TrimSpace(string(nd))}] = true
	}
	return got, nil
}

func waitGIDs(dev string, port int, want []gidKey, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := gidAddrs(dev, port)
		var missing []string
		for _, k := range want {
			if !got[k] {
				missing = append(missing, k.addr.String()+" on "+k.netdev)
			}
		}
		if err == nil && len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("lab: after %v the GID table of %s port %d still has no GID for %s", timeout, dev, port, strings.Join(missing, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Status describes what of the lab exists in the running kernel.
type Status struct {
	RDMADevice string     `json:"rdma_device"` // RDMADevice
	RDMAExists bool       `json:"rdma_exists"` // the RDMA device exists
	RDMANetdev string     `json:"rdma_netdev"` // the netdev it is bound to (from sysfs); "" (null) when none
	PortState  string     `json:"port_state"`  // its port 1 state, e.g. ACTIVE; "" (null) when not read
	PeerNetns  string     `json:"peer_netns"`  // PeerNetns
	PeerExists bool       `json:"peer_exists"` // /run/netns/PeerNetns exists
	Netdevs    []NetdevUp `json:"netdevs"`     // the host-side netdevs of the topology
}

// NetdevUp is one host-side netdev of the topology and whether it exists
// and is up.
type NetdevUp struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	Up     bool   `json:"up"`
}

// MarshalJSON writes every key of docs/json.md's "lab_status": the
// fields (rdma_netdev and port_state null when not known), netdevs ([]
// for none) and up, what Up reports.
func (s Status) MarshalJSON() ([]byte, error) {
	w := struct {
		RDMADevice string     `json:"rdma_device"`
		RDMAExists bool       `json:"rdma_exists"`
		RDMANetdev *string    `json:"rdma_netdev"`
		PortState  *string    `json:"port_state"`
		PeerNetns  string     `json:"peer_netns"`
		PeerExists bool       `json:"peer_exists"`
		Netdevs    []NetdevUp `json:"netdevs"`
		Up         bool       `json:"up"`
	}{RDMADevice: s.RDMADevice, RDMAExists: s.RDMAExists, PeerNetns: s.PeerNetns, PeerExists: s.PeerExists, Netdevs: s.Netdevs, Up: s.Up(),
		RDMANetdev: null.String(s.RDMANetdev), PortState: null.String(s.PortState)}
	if w.Netdevs == nil {
		w.Netdevs = []NetdevUp{}
	}
	return json.Marshal(w)
}

// Up reports whether the whole lab is there: the RDMA device with an ACTIVE
// port, the peer namespace and the untagged veth end. VLAN devices are
// listed in Netdevs but are not required (see Options.NoVLANs).
func (s Status) Up() bool {
	return s.RDMAExists && s.PortState == "ACTIVE" && s.PeerExists && len(s.Netdevs) > 0 && s.Netdevs[0].Up
}

// GetStatus inspects the running kernel for the lab's parts. It needs no
// root.
func GetStatus() (Status, error) {
	s := Status{RDMADevice: RDMADevice, PeerNetns: PeerNetns}
	if _, err := os.Stat(filepath.Join(sysfsRoot, "class/infiniband", RDMADevice)); err == nil {
		s.RDMAExists = true
		if st, err := PortState(RDMADevice, 1); err == nil {
			s.PortState = st
		}
		if b, err := os.ReadFile(filepath.Join(sysfsRoot, "class/infiniband", RDMADevice, "ports/1/gid_attrs/ndevs/0")); err == nil {
			s.RDMANetdev = strings.TrimSpace(string(b))
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", PeerNetns)); err == nil {
		s.PeerExists = true
	}
	seen := map[string]bool{}
	for _, n := range Nets {
		names := []string{HostNetdev}
		for _, v := range n.VLANs {
			names = append(names, v.HostNetdev)
		}
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			d := NetdevUp{Name: name}
			l, err := netlink.LinkByName(name)
			var nf netlink.LinkNotFoundError
			switch {
			case err == nil:
				d.Exists = true
				d.Up = l.Attrs().Flags&net.FlagUp != 0
			case errors.As(err, &nf):
			default:
				return s, fmt.Errorf("lab: look up %s: %w", name, err)
			}
			s.Netdevs = append(s.Netdevs, d)
		}
	}
	return s, nil
}
