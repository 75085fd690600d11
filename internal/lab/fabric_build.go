//go:build linux

package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ErrNoNetnsRXE is returned (wrapped) by FabricUp on a kernel whose rxe
// works only in the initial network namespace (KernelFacts.RXEInNetns).
var ErrNoNetnsRXE = errors.New("rxe works only in the initial network namespace on this kernel")

// fabricModules are the modules the fabric and its faults need; each may
// also be built in. tc loads actions and qdiscs on demand where it can
// (not in the lab VM, whose initramfs loads them all).
var fabricModules = []string{"bridge", "8021q", "veth", "sch_ingress", "sch_prio", "sch_netem",
	"cls_flower", "act_pedit", "act_csum", "act_vlan", "act_skbedit", "act_gact"}

// FabricUp builds the multi-host fabric in the running kernel: the switch
// namespace with the VLAN-filtering bridge, and for each of Hosts its
// namespace, its NIC (a veth whose other end is its switch port, trunking
// VLANs 100 and 200 tagged and VLAN 1 untagged), its VLAN and QinQ devices
// with their egress-qos-maps, its addresses (IPv6 with nodad) and its rxe
// device, created inside the host's namespace. RDMA devices stay in the
// kernel's shared netns mode (rdma system netns shared, the default), in
// which rdma_cm works; see docs/lab.md. FabricUp waits until every rxe
// port is ACTIVE and has a GID for each of its host's addresses. It fails
// if any part of the fabric already exists (FabricDown first), if the
// kernel's rxe works only in the initial namespace (ErrNoNetnsRXE), or if
// RDMA netns mode is exclusive.
func FabricUp(timeout time.Duration) error {
	if geteuid() != 0 {
		return ErrNotRoot
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if err := preflight("fabric", "FabricDown", fabricNamespaces(), fabricRDMADevices()); err != nil {
		return err
	}
	if err := buildFabric(); err != nil {
		return fabricCleanup(err)
	}
	for _, h := range Hosts {
		if err := WaitPortActive(h.RDMADevice, 1, timeout); err != nil {
			return fabricCleanup(err)
		}
		if err := waitGIDs(h.RDMADevice, 1, hostGIDs(h), timeout); err != nil {
			return fabricCleanup(err)
		}
	}
	return nil
}

// preflight is the check FabricUp and LeafSpineUp make before building
// anything; what names the fabric ("fabric", "leaf-spine") and down the
// function that removes it, in the messages. It fails if rxe works only in
// the initial namespace (ErrNoNetnsRXE), if rdma_rxe (ErrNoRXE) or one of
// fabricModules cannot be loaded, if RDMA netns mode is not shared, or if
// one of the namespaces or RDMA devices already exists.
func preflight(what, down string, namespaces, rdmaDevices []string) error {
	facts, err := Facts()
	if err != nil {
		return err
	}
	if !facts.RXEInNetns {
		return fmt.Errorf("lab: %w (Linux %s, measured on %s: an RC connection between two namespaced rxe devices fails); the %s needs Linux 7.x: scripts/lab.sh --kernel 7",
			ErrNoNetnsRXE, KernelRelease(), facts.Measured, what)
	}
	if err := loadModule("rdma_rxe"); err != nil {
		return fmt.Errorf("%w (%v)", ErrNoRXE, err)
	}
	_ = loadModule("crc32_generic")
	_ = loadModule("ib_uverbs")
	_ = loadModule("rdma_ucm")
	for _, m := range fabricModules {
		if err := loadModule(m); err != nil {
			return fmt.Errorf("lab: the %s needs kernel module %s: %v", what, m, err)
		}
	}
	if mode, err := netlink.RdmaSystemGetNetnsMode(); err == nil && mode != "shared" {
		return fmt.Errorf("lab: rdma system netns mode is %q: the %s needs \"shared\" (rdma system set netns shared), in which rdma_cm works", mode, what)
	}
	for _, ns := range namespaces {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			return fmt.Errorf("lab: network namespace %s already exists: run %s (roce-probe lab down) first", ns, down)
		}
	}
	for _, d := range rdmaDevices {
		if l, _ := netlink.RdmaLinkByName(d); l != nil {
			return fmt.Errorf("lab: RDMA device %s already exists: run %s (roce-probe lab down) first", d, down)
		}
	}
	return nil
}

// hostGIDs are the GIDs FabricUp waits for on a host's rxe device: the
// link-local GID of its NIC and of each VLAN device, and one per address.
func hostGIDs(h Host) []gidKey {
	mac, _ := net.ParseMAC(h.MAC)
	ll := linkLocal(mac)
	want := []gidKey{{ll, HostNIC}}
	for _, n := range FabricNets {
		if !n.Has(h) {
			continue
		}
		for _, v := range n.VLANs {
			want = append(want, gidKey{ll, v.Netdev})
		}
		want = append(want, gidKey{h.IPv4(n).Addr(), n.Netdev}, gidKey{h.IPv6(n).Addr(), n.Netdev})
	}
	return want
}

func fabricNamespaces() []string {
	ns := []string{SwitchNetns}
	for _, h := range Hosts {
		ns = append(ns, h.Name)
	}
	return ns
}

// fabricRDMADevices are the rxe devices of Hosts.
func fabricRDMADevices() []string {
	d := make([]string, len(Hosts))
	for i, h := range Hosts {
		d[i] = h.RDMADevice
	}
	return d
}

func fabricCleanup(err error) error {
	if derr := FabricDown(); derr != nil {
		return fmt.Errorf("%w (removing the partial fabric also failed: %v)", err, derr)
	}
	return err
}

// nsHandle is a namespace with a netlink handle in it.
type nsHandle struct {
	name string
	ns   netns.NsHandle
	h    *netlink.Handle
}

func openNs(name string) (*nsHandle, error) {
	ns, err := newNamedNetns(name)
	if err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("lab: netlink handle in namespace %s: %w", name, err)
	}
	return &nsHandle{name, ns, h}, nil
}

func (n *nsHandle) close() { n.h.Close(); n.ns.Close() }

func buildFabric() error {
	sw, err := openNs(SwitchNetns)
	if err != nil {
		return err
	}
	defer sw.close()
	if lo, err := sw.h.LinkByName("lo"); err == nil {
		_ = sw.h.LinkSetUp(lo)
	}
	yes := true
	pvid := uint16(1)
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: Bridge}, VlanFiltering: &yes, VlanDefaultPVID: &pvid}
	if err := sw.h.LinkAdd(br); err != nil {
		return fmt.Errorf("lab: add bridge %s in %s: %w", Bridge, SwitchNetns, err)
	}
	// The switch has no addresses: no IPv6 on the bridge or its ports, so
	// captures on them hold only what the hosts send.
	if err := sysctlIn(SwitchNetns, "net/ipv6/conf/default/disable_ipv6", "1"); err != nil {
		return err
	}
	if err := sysctlIn(SwitchNetns, "net/ipv6/conf/"+Bridge+"/disable_ipv6", "1"); err != nil {
		return err
	}
	if err := setUp(sw.h, Bridge); err != nil {
		return err
	}
	brLink, err := sw.h.LinkByName(Bridge)
	if err != nil {
		return fmt.Errorf("lab: %s: %w", Bridge, err)
	}
	for _, h := range Hosts {
		if err := buildHost(sw, brLink, h); err != nil {
			return err
		}
	}
	return nil
}

func buildHost(sw *nsHandle, br netlink.Link, h Host) error {
	hn, err := openNs(h.Name)
	if err != nil {
		return err
	}
	defer hn.close()
	if lo, err := hn.h.LinkByName("lo"); err == nil {
		_ = hn.h.LinkSetUp(lo)
	}
	mac, _ := net.ParseMAC(h.MAC)
	pmac, _ := net.ParseMAC(h.PortMAC)
	// Create the pair in the switch, then move the host's end.
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: h.Port, HardwareAddr: pmac, MTU: MTU, MasterIndex: br.Attrs().Index},
		PeerName:         HostNIC,
		PeerHardwareAddr: mac,
		PeerMTU:          MTU,
		PeerNamespace:    netlink.NsFd(int(hn.ns)),
	}
	if err := sw.h.LinkAdd(veth); err != nil {
		return fmt.Errorf("lab: add veth %s (switch) / %s (%s): %w", h.Port, HostNIC, h.Name, err)
	}
	port, err := sw.h.LinkByName(h.Port)
	if err != nil {
		return fmt.Errorf("lab: %s: %w", h.Port, err)
	}
	if err := sysctlIn(SwitchNetns, "net/ipv6/conf/"+h.Port+"/disable_ipv6", "1"); err != nil {
		return err
	}
	for _, vid := range []uint16{TrunkVLAN100, TrunkVLAN200} {
		if err := sw.h.BridgeVlanAdd(port, vid, false, false, false, true); err != nil {
			return fmt.Errorf("lab: bridge vlan add vid %d dev %s: %w", vid, h.Port, err)
		}
	}
	if err := setUp(sw.h, h.Port); err != nil {
		return err
	}
	if err := noDAD(h.Name, HostNIC); err != nil {
		return err
	}
	if err := setUp(hn.h, HostNIC); err != nil {
		return err
	}
	for _, n := range FabricNets {
		if !n.Has(h) {
			continue
		}
		parent := HostNIC
		for i, v := range n.VLANs {
			if _, err := hn.h.LinkByName(v.Netdev); err != nil {
				p, err := hn.h.LinkByName(parent)
				if err != nil {
					return fmt.Errorf("lab: %s: VLAN parent %s: %w", h.Name, parent, err)
				}
				vl := &netlink.Vlan{
					LinkAttrs:    netlink.LinkAttrs{Name: v.Netdev, ParentIndex: p.Attrs().Index},
					VlanId:       int(v.ID),
					VlanProtocol: netlink.VlanProtocol(v.Proto),
				}
				if m := h.EgressMap(n); i == len(n.VLANs)-1 && m != nil {
					vl.EgressQosMap = m
				}
				if err := hn.h.LinkAdd(vl); err != nil {
					return fmt.Errorf("lab: %s: add VLAN %s (id %d, proto %#04x) on %s: %w", h.Name, v.Netdev, v.ID, v.Proto, parent, err)
				}
				if err := noDAD(h.Name, v.Netdev); err != nil {
					return err
				}
				if err := setUp(hn.h, v.Netdev); err != nil {
					return err
				}
			}
			parent = v.Netdev
		}
		l, err := hn.h.LinkByName(n.Netdev)
		if err != nil {
			return fmt.Errorf("lab: %s: %s: %w", h.Name, n.Netdev, err)
		}
		for _, p := range []netip.Prefix{h.IPv4(n), h.IPv6(n)} {
			a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
			if p.Addr().Is6() {
				a.Flags = unix.IFA_F_NODAD
			}
			if err := hn.h.AddrAdd(l, a); err != nil {
				return fmt.Errorf("lab: %s: add address %s to %s: %w", h.Name, p, n.Netdev, err)
			}
		}
	}
	// rdma link add inside the host's namespace: the netdev is looked up
	// in the namespace of the netlink socket.
	err = InNetns(h.Name, func() error { return netlink.RdmaLinkAdd(h.RDMADevice, "rxe", HostNIC) })
	if err != nil {
		return fmt.Errorf("lab: %s: rdma link add %s type rxe netdev %s: %w", h.Name, h.RDMADevice, HostNIC, err)
	}
	return nil
}

// sysctlIn writes a /proc/sys value inside a namespace ("" for the
// caller's).
func sysctlIn(namespace, key, value string) error {
	write := func() error { return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644) }
	var err error
	if namespace == "" {
		err = write()
	} else {
		err = InNetns(namespace, write)
	}
	if err != nil {
		return fmt.Errorf("lab: sysctl %s=%s in %s: %w", strings.ReplaceAll(key, "/", "."), value, namespace, err)
	}
	return nil
}

// FabricDown removes the fabric: the hosts' rxe devices and the hosts' and
// the switch's namespaces (with every netdev in them). Missing parts are
// skipped.
func FabricDown() error {
	if geteuid() != 0 {
		return ErrNotRoot
	}
	return removeParts(fabricNamespaces(), fabricRDMADevices())
}

// removeParts deletes the RDMA devices, then the network namespaces (with
// every netdev in them) of a fabric; missing parts are skipped, and every
// failure is returned.
func removeParts(namespaces, rdmaDevices []string) error {
	var errs []error
	for _, d := range rdmaDevices {
		if l, _ := netlink.RdmaLinkByName(d); l != nil {
			if err := netlink.RdmaLinkDel(d); err != nil {
				errs = append(errs, fmt.Errorf("lab: rdma link delete %s: %w", d, err))
			}
		}
	}
	for _, ns := range namespaces {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			if err := netns.DeleteNamed(ns); err != nil {
				errs = append(errs, fmt.Errorf("lab: delete network namespace %s: %w", ns, err))
			}
		}
	}
	return errors.Join(errs...)
}

// FabricIsUp reports whether the fabric's namespaces and rxe devices exist
// and every rxe port is ACTIVE.
func FabricIsUp() bool {
	for _, ns := range fabricNamespaces() {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err != nil {
			return false
		}
	}
	for _, h := range Hosts {
		if st, err := PortState(h.RDMADevice, 1); err != nil || st != "ACTIVE" {
			return false
		}
	}
	return true
}
