//go:build linux

package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ErrNotRoot is returned by Up and Down when the caller is not root:
// creating netdevs, namespaces and RDMA links needs CAP_NET_ADMIN, and
// loading modules needs CAP_SYS_MODULE.
var ErrNotRoot = errors.New("the lab needs root (CAP_NET_ADMIN to create netdevs and RDMA links, CAP_SYS_MODULE to load rdma_rxe)")

// ErrNoRXE is returned (wrapped) by Up when the running kernel cannot
// provide rdma_rxe: neither loaded, nor built in, nor loadable as a module.
var ErrNoRXE = errors.New("this kernel has no Soft-RoCE driver (rdma_rxe): no /sys/module/rdma_rxe and modprobe rdma_rxe failed; use a kernel with CONFIG_RDMA_RXE, or scripts/lab.sh, which boots one under qemu")

// ErrNoVLAN is returned (wrapped) by Up when VLANs are wanted and the
// kernel has no 802.1Q support (8021q).
var ErrNoVLAN = errors.New("this kernel has no 802.1Q VLAN support (8021q): no /sys/module/8021q and modprobe 8021q failed; run Up with VLANs disabled or use a kernel with CONFIG_VLAN_8021Q")

// Options selects what Up builds.
type Options struct {
	// NoVLANs skips the VLAN and QinQ networks (Nets[1:]), so only the
	// untagged base network is built; 8021q is then not needed.
	NoVLANs bool
	// Timeout bounds the wait for rxe0's port to become ACTIVE and for its
	// GID table to hold one entry per host address (default 20s).
	Timeout time.Duration
}

// Hooks that unit tests replace to reach Up's error paths without root or
// an rxe-less kernel.
var (
	sysfsRoot = "/sys"      // where Status and the waits read sysfs
	geteuid   = os.Geteuid  // the effective user ID
	modprobe  = runModprobe // loads one kernel module
)

// Up builds the standard topology (see Nets) in the running kernel: the
// peer namespace, the veth pair with fixed MACs, the VLAN and QinQ devices
// with their egress-qos-maps, the addresses (IPv6 with nodad), and rxe0 on
// veth0. It loads the modules it needs and waits until rxe0's port is
// ACTIVE and its GID table has an entry for every host address. Up fails if
// any part of the topology already exists; call Down first.
func Up(opt Options) error {
	if geteuid() != 0 {
		return ErrNotRoot
	}
	if opt.Timeout < 0 {
		return fmt.Errorf("lab: timeout %v is negative: want a positive duration, or 0 for 20s", opt.Timeout)
	}
	if opt.Timeout == 0 {
		opt.Timeout = 20 * time.Second
	}
	if err := loadModule("rdma_rxe"); err != nil {
		return fmt.Errorf("%w (%v)", ErrNoRXE, err)
	}
	// rxe computes its ICRC with the crc32 crypto API; without
	// crc32_generic "rdma link add" fails with ENOENT. It may be built in.
	_ = loadModule("crc32_generic")
	_ = loadModule("veth")
	_ = loadModule("ib_uverbs")
	_ = loadModule("rdma_ucm")
	nets := Nets
	if opt.NoVLANs {
		nets = Nets[:1]
	} else if err := loadModule("8021q"); err != nil {
		return fmt.Errorf("%w (%v)", ErrNoVLAN, err)
	}
	if _, err := netlink.LinkByName(HostNetdev); err == nil {
		return fmt.Errorf("lab: %s already exists: run Down first", HostNetdev)
	}
	if l, _ := netlink.RdmaLinkByName(RDMADevice); l != nil {
		return fmt.Errorf("lab: RDMA device %s already exists: run Down first", RDMADevice)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", PeerNetns)); err == nil {
		return fmt.Errorf("lab: network namespace %s already exists: run Down first", PeerNetns)
	}
	// From here on everything is Up's own: a failure removes it again, so
	// nothing is left half-built.
	if err := build(nets); err != nil {
		return cleanup(err)
	}
	if err := WaitPortActive(RDMADevice, 1, opt.Timeout); err != nil {
		return cleanup(err)
	}
	// Every host netdev gets its link-local GID (the default GID on
	// HostNetdev) and one GID per address.
	mac, _ := net.ParseMAC(HostMAC)
	ll := linkLocal(mac)
	var want []gidKey
	for _, n := range nets {
		for _, v := range n.VLANs {
			want = append(want, gidKey{ll, v.HostNetdev})
		}
		want = append(want, gidKey{n.HostIPv4.Addr(), n.HostNetdev}, gidKey{n.HostIPv6.Addr(), n.HostNetdev})
	}
	want = append(want, gidKey{ll, HostNetdev})
	if err := waitGIDs(RDMADevice, 1, want, opt.Timeout); err != nil {
		return cleanup(err)
	}
	return nil
}

// cleanup removes a partly built lab after err and returns err, with the
// cleanup's own failure added.
func cleanup(err error) error {
	if derr := Down(); derr != nil {
		return fmt.Errorf("%w (removing the partial lab also failed: %v)", err, derr)
	}
	return err
}

func build(nets []Net) error {
	peer, err := newNamedNetns(PeerNetns)
	if err != nil {
		return err
	}
	defer peer.Close()
	ph, err := netlink.NewHandleAt(peer, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("lab: netlink handle in namespace %s: %w", PeerNetns, err)
	}
	defer ph.Close()
	hh, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("lab: netlink handle: %w", err)
	}
	defer hh.Close()

	hostMAC, _ := net.ParseMAC(HostMAC)
	peerMAC, _ := net.ParseMAC(PeerMAC)
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: HostNetdev, HardwareAddr: hostMAC, MTU: MTU},
		PeerName:         PeerNetdev,
		PeerHardwareAddr: peerMAC,
		PeerMTU:          MTU,
		PeerNamespace:    netlink.NsFd(int(peer)),
	}
	if err := hh.LinkAdd(veth); err != nil {
		return fmt.Errorf("lab: add veth pair %s/%s: %w", HostNetdev, PeerNetdev, err)
	}
	if lo, err := ph.LinkByName("lo"); err == nil {
		_ = ph.LinkSetUp(lo)
	}
	for _, side := range []struct {
		h      *netlink.Handle
		base   string
		dev    func(VLAN) string
		netdev func(Net) string
		addrs  func(Net) []netip.Prefix
		host   bool
	}{
		{hh, HostNetdev, func(v VLAN) string { return v.HostNetdev }, func(n Net) string { return n.HostNetdev },
			func(n Net) []netip.Prefix { return []netip.Prefix{n.HostIPv4, n.HostIPv6} }, true},
		{ph, PeerNetdev, func(v VLAN) string { return v.PeerNetdev }, func(n Net) string { return n.PeerNetdev },
			func(n Net) []netip.Prefix { return []netip.Prefix{n.PeerIPv4, n.PeerIPv6} }, false},
	} {
		ns := ""
		if !side.host {
			ns = PeerNetns
		}
		if err := noDAD(ns, side.base); err != nil {
			return err
		}
		if err := setUp(side.h, side.base); err != nil {
			return err
		}
		for _, n := range nets {
			parent := side.base
			for i, v := range n.VLANs {
				name := side.dev(v)
				if _, err := side.h.LinkByName(name); err != nil { // QinQ outer devices are shared
					p, err := side.h.LinkByName(parent)
					if err != nil {
						return fmt.Errorf("lab: VLAN parent %s: %w", parent, err)
					}
					vl := &netlink.Vlan{
						LinkAttrs:    netlink.LinkAttrs{Name: name, ParentIndex: p.Attrs().Index},
						VlanId:       int(v.ID),
						VlanProtocol: netlink.VlanProtocol(v.Proto),
					}
					if side.host && i == len(n.VLANs)-1 && n.EgressQoS != nil {
						vl.EgressQosMap = n.EgressQoS
					}
					if err := side.h.LinkAdd(vl); err != nil {
						return fmt.Errorf("lab: add VLAN %s (id %d, proto %#04x) on %s: %w", name, v.ID, v.Proto, parent, err)
					}
					if err := noDAD(ns, name); err != nil {
						return err
					}
					if err := setUp(side.h, name); err != nil {
						return err
					}
				}
				parent = name
			}
			dev := side.netdev(n)
			l, err := side.h.LinkByName(dev)
			if err != nil {
				return fmt.Errorf("lab: %s: %w", dev, err)
			}
			for _, p := range side.addrs(n) {
				a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
				if p.Addr().Is6() {
					a.Flags = unix.IFA_F_NODAD
				}
				if err := side.h.AddrAdd(l, a); err != nil {
					return fmt.Errorf("lab: add address %s to %s: %w", p, dev, err)
				}
			}
		}
	}
	if err := netlink.RdmaLinkAdd(RDMADevice, "rxe", HostNetdev); err != nil {
		return fmt.Errorf("lab: rdma link add %s type rxe netdev %s: %w (is crc32_generic loadable?)", RDMADevice, HostNetdev, err)
	}
	return nil
}

// noDAD turns off IPv6 duplicate address detection on a netdev that is
// not up yet, so its link-local address (and with it the link-local GID of
// a host-side netdev) is usable as soon as the netdev is up.
func noDAD(namespace, name string) error {
	write := func() error {
		return os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", name, "accept_dad"), []byte("0"), 0o644)
	}
	var err error
	if namespace == "" {
		err = write()
	} else {
		err = InNetns(namespace, write)
	}
	if err != nil {
		return fmt.Errorf("lab: turn off DAD on %s: %w", name, err)
	}
	return nil
}

// linkLocal returns the EUI-64 link-local IPv6 address of a MAC address.
func linkLocal(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	b[8], b[9], b[10] = mac[0]^0x02, mac[1], mac[2]
	b[11], b[12] = 0xff, 0xfe
	b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(b)
}

func setUp(h *netlink.Handle, name string) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("lab: %s: %w", name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("lab: set %s up: %w", name, err)
	}
	return nil
}

// newNamedNetns creates the named network namespace (bind-mounted under
// /run/netns like `ip netns add`) without leaving the caller's thread in it.
func newNamedNetns(name string) (netns.NsHandle, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return 0, fmt.Errorf("lab: current network namespace: %w", err)
	}
	defer orig.Close()
	ns, nerr := netns.NewNamed(name)
	if err := netns.Set(orig); err != nil {
		// The thread stays locked: the runtime ends it with this goroutine
		// rather than reuse it in the wrong namespace.
		if nerr == nil {
			ns.Close()
		}
		return 0, fmt.Errorf("lab: return to the original network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	if nerr != nil {
		return 0, fmt.Errorf("lab: create network namespace %s: %w", name, nerr)
	}
	return ns, nil
}

// Down removes what Up built: rxe0, the veth pair with every VLAN device on
// it, and the peer namespace. Parts that do not exist are skipped, so Down
// also cleans up after a failed Up.
func Down() error {
	if geteuid() != 0 {
		return ErrNotRoot
	}
	var errs []error
	if l, _ := netlink.RdmaLinkByName(RDMADevice); l != nil {
		if err := netlink.RdmaLinkDel(RDMADevice); err != nil {
			errs = append(errs, fmt.Errorf("lab: rdma link delete %s: %w", RDMADevice, err))
		}
	}
	if l, err := netlink.LinkByName(HostNetdev); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("lab: delete %s: %w", HostNetdev, err))
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", PeerNetns)); err == nil {
		if err := netns.DeleteNamed(PeerNetns); err != nil {
			errs = append(errs, fmt.Errorf("lab: delete network namespace %s: %w", PeerNetns, err))
		}
	}
	return errors.Join(errs...)
}

// loadModule makes sure a kernel module is available: already loaded or
// built in (/sys/module/NAME), or loaded now with modprobe.
func loadModule(name string) error {
	if _, err := os.Stat(filepath.Join(sysfsRoot, "module", name)); err == nil {
		return nil
	}
	return modprobe(name)
}

func runModprobe(name string) error {
	out, err := exec.Command("modprobe", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("modprobe %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
