package collect

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/vlan"
)

// Collect on the own namespace needs no privileges. Every local route it
// returns must resolve, through its own device, as a local destination;
// every link must be there by name; the sysctls are the kernel's.
func TestCollectOwnNamespace(t *testing.T) {
	s, err := Collect(Options{Tool: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if s.RDMA == nil || s.DCB == nil || len(s.Namespaces) != 1 || s.Kernel == "" || s.Time.IsZero() {
		t.Fatalf("snapshot = rdma %v dcb %v namespaces %d kernel %q time %v", s.RDMA, s.DCB, len(s.Namespaces), s.Kernel, s.Time)
	}
	n := s.Namespaces[0]
	if n.Netns != "" || len(n.Links) == 0 {
		t.Fatalf("namespace %q with %d links", n.Netns, len(n.Links))
	}
	lo, ok := n.ByName("lo")
	if !ok || lo.Kind != "loopback" || lo.Ether || lo.Index != 1 {
		t.Errorf("lo = %+v, %v", lo, ok)
	}
	locals := 0
	for _, r := range n.Routes {
		if r.Type != "local" || r.Table != 255 || r.Dst.Bits() != r.Dst.Addr().BitLen() {
			continue
		}
		locals++
		res, err := n.RouteTo(r.Dst.Addr(), r.Dev, r.Ifindex)
		if err != nil || !res.Local {
			t.Errorf("route to own address %s via %s: %+v, %v; want local", r.Dst.Addr(), r.Dev, res, err)
		}
	}
	if locals == 0 {
		t.Logf("no local routes (no interface with an address is up); %d routes read", len(n.Routes))
	}
	if v := n.Sysctls.IPv4DefaultTTL; v == nil || *v < 1 || *v > 255 {
		t.Errorf("net.ipv4.ip_default_ttl = %v", v)
	}
	// DCB was asked for every real Ether netdev: each is there, or its
	// failure is named in Errors.
	for _, l := range n.Links {
		if !hasDCB(l) {
			continue
		}
		d, _ := s.DCBOf("", l.Name)
		if d == nil && len(s.ErrorsOf("dcb "+l.Name)) == 0 {
			t.Errorf("%s: no DCB state and no error", l.Name)
		}
	}
	// What Collect returns survives the document round trip unchanged.
	var a, b bytes.Buffer
	if err := s.Encode(&a); err != nil {
		t.Fatal(err)
	}
	back, err := host.Decode(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatalf("decoding a collected snapshot: %v", err)
	}
	if err := back.Encode(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("round trip differs:\n%s\n%s", a.String(), b.String())
	}
}

func TestCollectSections(t *testing.T) {
	s, err := Collect(Options{Sections: SectionNet})
	if err != nil {
		t.Fatal(err)
	}
	if s.RDMA != nil || s.DCB != nil || len(s.Namespaces) != 1 {
		t.Errorf("net only: rdma %v dcb %v namespaces %d", s.RDMA, s.DCB, len(s.Namespaces))
	}
	if _, err := s.View(""); !errors.As(err, new(*host.MissingError)) || !strings.Contains(err.Error(), "no rdma section") {
		t.Errorf("View without rdma = %v, want a MissingError naming rdma", err)
	}
	s, err = Collect(Options{Sections: SectionRDMA, SysfsRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.RDMA == nil || len(s.RDMA.Devices) != 0 || s.Namespaces != nil {
		t.Errorf("rdma only, empty sysfs: %+v", s)
	}
}

func TestCollectMissingNamespace(t *testing.T) {
	_, err := Collect(Options{Netns: []string{"roce-probe-no-such-netns"}})
	if !errors.Is(err, host.ErrNoNetns) || !strings.Contains(err.Error(), `"roce-probe-no-such-netns"`) {
		t.Errorf("Collect(missing netns) = %v, want ErrNoNetns naming it", err)
	}
}

// linkFromNetlink on the structs vishvananda/netlink returns for a QinQ
// inner VLAN with QoS maps, a macvlan in another namespace and a bond.
func TestLinkFromNetlink(t *testing.T) {
	v := &netlink.Vlan{
		LinkAttrs: netlink.LinkAttrs{Name: "q1000.10", Index: 7, MTU: 1500, ParentIndex: 6, NetNsID: -1, EncapType: "ether",
			HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 0, 1}, OperState: netlink.OperUp},
		VlanId: 10, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q,
		EgressQosMap: map[uint32]uint32{0: 2}, IngressQosMap: map[uint32]uint32{3: 3},
	}
	l := linkFromNetlink(v)
	if l.Kind != vlan.KindVLAN || l.Tag == nil || *l.Tag != (vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}) || l.ParentIndex != 6 || l.ParentOtherNetns ||
		l.EgressQoS.String() != "0:2" || l.IngressQoS.String() != "3:3" || l.OperState != "up" || !l.Ether || l.MAC.String() != "02:00:00:00:00:01" {
		t.Errorf("vlan = %+v", l)
	}
	ad := linkFromNetlink(&netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Name: "o", Index: 6, NetNsID: -1}, VlanId: 1000, VlanProtocol: netlink.VLAN_PROTOCOL_8021AD})
	if ad.Tag.TPID != vlan.TPID8021AD {
		t.Errorf("802.1ad TPID = %v", ad.Tag.TPID)
	}
	mv := linkFromNetlink(&netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "net1", Index: 3, ParentIndex: 9, NetNsID: 0}})
	if mv.Kind != vlan.KindMacvlan || !mv.ParentOtherNetns {
		t.Errorf("macvlan with IFLA_LINK_NETNSID: kind %s other netns %v", mv.Kind, mv.ParentOtherNetns)
	}
	ve := linkFromNetlink(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0", Index: 2, ParentIndex: 3, NetNsID: 1}})
	if ve.Kind != vlan.KindVeth || ve.ParentOtherNetns {
		t.Errorf("veth: kind %s other netns %v (a veth peer is not a lower device)", ve.Kind, ve.ParentOtherNetns)
	}
	b := linkFromNetlink(&netlink.Bond{LinkAttrs: netlink.LinkAttrs{Name: "bond0", Index: 4, NetNsID: -1}, ActiveSlave: 2})
	if b.Kind != vlan.KindBond || b.ActiveSlave != 2 {
		t.Errorf("bond = %+v", b)
	}
	d := linkFromNetlink(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "enp1s0f0", Index: 2, NetNsID: -1, EncapType: "ether"}})
	lo := linkFromNetlink(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: 1, NetNsID: -1, EncapType: "loopback"}})
	if d.Kind != vlan.KindPhysical || lo.Kind != vlan.KindLoopback {
		t.Errorf("device kinds: %s %s", d.Kind, lo.Kind)
	}
}

// Every IFLA_OPERSTATE value (include/uapi/linux/if.h IF_OPER_UNKNOWN = 0
// .. IF_OPER_UP = 6) gets the kernel's own name, /sys/class/net/*/operstate's
// (net/core/net-sysfs.c operstates[], Linux 6.1, in IF_OPER_* order).
func TestOperStateNames(t *testing.T) {
	kernel := []string{"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"}
	for v, want := range kernel {
		if got := operState(netlink.LinkOperState(v)); got != want {
			t.Errorf("IFLA_OPERSTATE %d = %q, want %q", v, got, want)
		}
	}
}

// A snapshot's operstates are the kernel's sysfs ones, read in the same
// namespace: a veth whose peer is down is "lowerlayerdown" (its iflink is
// the peer, so the kernel's default_operstate, net/core/link_watch.c,
// Linux 6.1, counts it as stacked on a device that is down), its peer
// "down", an up veth pair "up" and the loopback "unknown".
func TestCollectOperStateIsSysfs(t *testing.T) {
	netnstest.RequireRoot(t)
	a, b := netnstest.New(t, "a"), netnstest.New(t, "b")
	netnstest.Veth(t, a, "ua0", "02:00:00:00:02:0a", b, "ub0", "02:00:00:00:02:0b")
	netnstest.Run(t, "ip", "-n", a, "link", "add", "name", "la0", "type", "veth", "peer", "name", "lb0")
	netnstest.Run(t, "ip", "-n", a, "link", "set", "la0", "up") // lb0 stays down
	netnstest.WaitOperState(t, a, "ua0", "up")
	netnstest.WaitOperState(t, a, "la0", "lowerlayerdown")
	s, err := Collect(Options{Netns: []string{a}, Sections: SectionNet})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Namespace(a)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"lo": "unknown", "ua0": "up", "la0": "lowerlayerdown", "lb0": "down"}
	for name, w := range want {
		l, ok := ns.ByName(name)
		if !ok {
			t.Errorf("%s: not in the snapshot", name)
			continue
		}
		sysfs := strings.TrimSpace(netnstest.Run(t, "ip", "netns", "exec", a, "cat", "/sys/class/net/"+name+"/operstate"))
		if l.OperState != sysfs || l.OperState != w {
			t.Errorf("%s: operstate %q, sysfs %q, want %q", name, l.OperState, sysfs, w)
		}
	}
}

// Entering another network namespace without CAP_SYS_ADMIN is named as
// such, not as vishvananda/netlink's "failed to set into network namespace
// 5 while creating netlink socket: operation not permitted". The test
// binary runs itself as nobody in a namespace it created as root.
func TestCollectNetnsNeedsRoot(t *testing.T) {
	if ns := os.Getenv("ROCE_PROBE_TEST_NETNS_AS_NOBODY"); ns != "" {
		_, err := Collect(Options{Netns: []string{ns}})
		fmt.Printf("collect error: %v; ErrPermission %v\n", err, errors.Is(err, ErrPermission))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates a network namespace and drops to nobody")
	}
	ns := fmt.Sprintf("rp-perm-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	dir, err := os.MkdirTemp("", "rp-perm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "host.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestCollectNetnsNeedsRoot$", "-test.v")
	cmd.Env = append(os.Environ(), "ROCE_PROBE_TEST_NETNS_AS_NOBODY="+ns)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test binary as nobody: %v: %s", err, out)
	}
	want := fmt.Sprintf(`network namespace %q: permission denied: entering another namespace needs root (CAP_SYS_ADMIN); ErrPermission true`, ns)
	if !strings.Contains(string(out), want) {
		t.Errorf("as nobody: %s\nwant %q", out, want)
	}
}
