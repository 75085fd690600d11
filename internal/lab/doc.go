// Package lab builds and describes the Soft-RoCE lab: a real RoCE v2 stack
// (rdma_rxe) on a veth pair with VLAN and QinQ devices, run natively or in a
// Debian kernel under qemu, that lab tests (build tag lab) send and capture
// frames through. See docs/lab.md for how to run lab tests
// (scripts/lab.sh test) and how to add one.
//
// # Topology
//
// topology.go is the single source of truth for names and addresses: the
// constants RDMADevice (rxe0), HostNetdev (veth0), PeerNetdev (veth1),
// PeerNetns ("peer"), HostMAC, PeerMAC, MTU, and Nets, one Net per IP
// network (untagged, vlan100 with egress-qos-map {0:3 2:5 4:6 6:7}, vlan200
// without a map, qinq1000.10 with 802.1ad 1000 outside and 802.1Q 10
// inside). Each Net names the host and peer netdevs that own its
// addresses; each VLAN names the devices that add that tag. Lab tests use
// these values instead of literals.
//
// # Building the fabric
//
//	Up(Options) error      // build everything in the running kernel (root); roce-probe lab up
//	Down() error           // remove it again; roce-probe lab down
//	GetStatus() (Status, error) // what exists; roce-probe lab status
//
// Up loads rdma_rxe (after crc32_generic, which rxe needs), 8021q, veth,
// ib_uverbs and rdma_ucm, creates the peer namespace, the veth pair, the
// VLAN devices with IPv6 DAD turned off, the addresses, and rxe0 on veth0,
// then waits until rxe0's port is ACTIVE and its GID table has the
// link-local GID of every host netdev and one GID per host address. When a
// lab test starts, all of that is true. Errors: ErrNotRoot, ErrNoRXE,
// ErrNoVLAN (wrapped with the modprobe output).
//
// # Helpers for lab tests
//
//	InPeer(f func() error) error          // run f on a thread inside the peer namespace
//	InNetns(name string, f func() error) error
//	StartInPeer(cmd *exec.Cmd) error      // start a command in the peer namespace
//	RunInPeer(ctx, name, args...) ([]byte, error) // run one, combined output
//	CapturePeer() (*Capture, error)       // AF_PACKET capture on veth1 in the peer namespace
//	CaptureIn(netns, iface string) (*Capture, error)
//	(*Capture).Wait(ctx, match func(Frame) bool) (Frame, error)
//	(*Capture).Frames() []Frame
//	(*Capture).Stop() []Frame
//	WritePcapng(path, iface string, frames []Frame) error
//	ArtifactDir(t) string                 // where captures go so scripts/lab.sh brings them back
//	PortState(dev, port) (string, error)  // "ACTIVE", "DOWN", ...
//	WaitPortActive(dev, port, timeout) error
//
// The capture is pure Go (gopacket/afpacket, TPACKET_V2, no cgo) and sees
// every frame on veth1 in both directions. VLAN tags are on the wire as
// sent: veth moves the outermost tag into skb metadata, and the capture
// puts it back with its TPID (802.1Q or 802.1ad), so Frame.Data starts
// with the Ethernet header and all tags. One limit: a tag with TCI 0
// (VLAN 0, PCP 0) cannot be told apart from no tag and is not restored.
//
// A typical lab test:
//
//	c, err := lab.CapturePeer()
//	...
//	defer c.Stop()
//	// make rxe0 send something (internal/verbs, build tag ibverbs)
//	f, err := c.Wait(ctx, func(f lab.Frame) bool { return bytes.Contains(f.Data, payload) })
//	// decode f.Data with gopacket and roce/, compare with lab.Nets[i]
//	lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), "x.pcapng"), lab.PeerNetdev, c.Frames())
//
// # The multi-host fabric (Linux 7.x)
//
//	FabricUp(timeout) error / FabricDown() error // roce-probe lab up --fabric / lab down
//	Hosts, FabricNets, HostByName, FabricNetByName // fabric_topology.go: h1..h4, networks, addresses
//	UseFabric(t) *Switch                          // in a test: faults and captures, removed when t ends
//	(*Switch).Port("h3").RemarkDSCP(26, 0)        // also MarkCE, RemarkPCP, StripTag, DropRoCE
//	(*Switch).Link("h1", "h2").Loss(1)            // netem per direction: Netem{Loss, Delay, Duplicate, Reorder...}
//	(*Switch).Capture("h2"), CaptureHost("h2")    // on the switch port / on the host's NIC
//	RCPingpong, Perftest, PerftestCM, Ucmatose, Rping → Tool; (Tool).Run(t, ctx)
//	RCPingpongVia(a, b, addr, ...)                // between devices outside the fabric (Host{RDMADevice: "rxerca"})
//	Start(t, ns, prog, args...) *Proc; RunIn(ctx, ns, ...); WaitTCPListen; WaitCMListen
//	GIDIndex(dev, addr, netdev); RoceProbe()      // the run's roce-probe binary
//	Facts() KernelFacts                           // what differs between the kernels (kernel.go)
//
// Each host is a network namespace with its own rxe device (rxe1..rxe4) on
// its NIC eth0, the other end of which is a port of the bridge br0 in the
// switch namespace "sw". RDMA devices stay in the shared netns mode, in
// which rdma_cm works (docs/lab.md says why not exclusive).
//
// # The routed leaf-spine (Linux 7.x)
//
//	LeafSpineUp(timeout) / LeafSpineDown()        // roce-probe lab up --leaf-spine / lab down
//	RoutedHosts, Leaves, Spines, RouterPorts      // leafspine_topology.go: h5..h8 (rxe5..rxe8), leaf1, leaf2, spine1, spine2
//	UseLeafSpine(t) *LeafSpine                    // in a test: faults and captures, removed when t ends
//	(*LeafSpine).Host("h5") RoutedHost            // .Host for the Tools, .Leaf, .IP4, .IP6, .Addr(v6)
//	(*LeafSpine).Router("spine1").Port("leaf2")   // a *Port: RemarkDSCP, MarkCE, BleachECN, DropRoCE, Netem, Loss, Capture
//	(*Router).NoICMP(), ICMPRateLimit(d), Addrs() // router faults; the router's addresses
//	(*LeafSpine).CaptureHost("h5"), ShieldRXE     // a host's NIC; keep plain UDP probes to 4791 from rxe
//	SendUDP(ns, from, to, tos, ttl, payload)      // one UDP datagram with a TOS and TTL
//
// Leaves route the hosts' networks over both spines with multipath routes
// that hash on the 5-tuple; routers answer every TTL-expired packet (ICMP
// rate limit 0). Its tests live in *_leafspine_lab_test.go files, which
// scripts/lab.sh runs with the leaf-spine alone up (the single-host lab
// and the bridged fabric removed: in shared RDMA netns mode their devices
// would be in every namespace). docs/lab.md has the picture and the
// addresses.
//
// Reading GID tables is package gid's job; this package reads sysfs only to
// know when the fabric is ready and to find a host's GID index.
package lab
