package roceapp_test

// The Go snippets of README.md and docs/ (docs/lab.md's excepted: they are
// lab tests inside roce-probe's module), each as the body of a function
// whose parameters stand for what the snippet's text takes as given. They
// are compiled here, in a module outside roce-probe's import path, so they
// name importable packages only; TestDocSnippetsCompile checks that every
// snippet of the guides is one of these bodies. Change both together.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
	"github.com/roce-probe/roce-probe/trace"
)

// libraryRoce is docs/library.md's Roce snippet.
func libraryRoce() error {
	spec := roce.FrameSpec{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		VLANs: []roce.VLANTag{{ID: 100, PCP: 3}},
		Src:   netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		TOS: 106, TTL: 64, SrcPort: roce.RXESourcePort(0x11),
		BTH:     roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 0x12, PSN: 1},
		Headers: []gopacket.SerializableLayer{&roce.DETH{QKey: 0x11111111, SrcQP: 0x11}},
		Payload: []byte("hi"),
	}
	frame, err := spec.Build()
	if err != nil {
		return err
	}
	var p roce.Packet
	if err := roce.NewDecoder().Decode(frame, &p); err != nil {
		return err
	}
	fmt.Println(p.BTH.Opcode, p.DSCP(), p.ECN(), p.ICRCStatus) // UD_SEND_ONLY 26 2 valid
	return nil
}

// libraryCapture is docs/library.md's Capture snippet.
func libraryCapture() error {
	f, err := os.Open("capture.pcapng")
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := capture.NewReader(f)
	if err != nil {
		return err
	}
	sum, stats, err := r.Summarize(nil)
	if err != nil {
		return err
	}
	fmt.Println(stats.Frames, "frames,", stats.BadICRC, "with a bad ICRC")
	for _, fl := range sum.Flows() {
		fmt.Println(fl.Src, ">", fl.Dst, "QP", fl.DestQP, fl.Packets, "packets")
	}
	return nil
}

// libraryGID is docs/library.md's GID snippet.
func libraryGID(s *host.Snapshot) error {
	v, err := s.View("") // s: a *host.Snapshot
	if err != nil {
		return err
	}
	port, err := v.Port("mlx5_0", 1)
	if err != nil {
		return err
	}
	sel, err := gid.Select(port.Entries, gid.MustParse("192.168.1.20"), gid.Preferences{Exclude: v.Stale(*port)}, v.NS)
	if err != nil {
		return err // wraps gid.ErrNoEntry when nothing can reach the destination; sel.Reasons say why
	}
	fmt.Println("NCCL_IB_GID_INDEX =", sel.Entry.Index)
	return nil
}

// libraryVLAN is docs/library.md's VLAN snippet.
func libraryVLAN(v *host.View) error {
	d, err := v.NS.Describe("enp1s0f0.100") // v: a *host.View
	if err != nil {
		return err
	}
	fmt.Println("tags", d.Chain, "real netdev", d.Real, "egress map", d.EgressQoS)
	return nil
}

// libraryQoS is docs/library.md's QoS snippet.
func libraryQoS(v *host.View) error {
	src, err := v.Source("mlx5_0", 1, 3) // v: a *host.View; GID index 3
	if err != nil {
		return err
	}
	// sl 3, traffic class 106; or host.FlowParams{RDMACM: true} for rdma_cm (its configfs default ToS applies)
	r, err := qos.Check(v.Flow(src, host.FlowParams{SL: 3, TrafficClass: 106}))
	if err != nil {
		return err
	}
	fmt.Println(r.Verdict, r.Reasons)
	return nil
}

// libraryHost is docs/library.md's Host snippet.
func libraryHost() error {
	s, err := host.Load("node1.json.gz")
	if err != nil {
		return err
	}
	v, err := s.View("")
	if err != nil {
		return err
	}
	r, err := v.ResolveAH(host.AHRequest{Device: "mlx5_0", Attr: ah.Attr{PortNum: 1, SL: 3, IsGlobal: true,
		GRH: ah.GlobalRoute{DGID: gid.MustParse("192.168.1.20"), SGIDIndex: 3, HopLimit: 64, TrafficClass: 106}}})
	var ne *ah.NeighborError
	if err != nil && !errors.As(err, &ne) { // a next hop not in the neighbour table still resolves
		return err
	}
	fmt.Println(r.Wire.VLAN, r.Wire.PCP, *r.Wire.DSCP, *r.Wire.ECN)
	return nil
}

// libraryCollect is docs/library.md's Collect snippet.
func libraryCollect() error {
	s, err := collect.Collect(collect.Options{})
	if errors.Is(err, collect.ErrNotLinux) {
		return err // take the snapshot on the host; analyse it anywhere with host.Load
	}
	if err != nil {
		return err
	}
	return s.Save("node1.json.gz")
}

// libraryCounters is docs/library.md's Counters snippet.
func libraryCounters(v *host.View) {
	rep := counters.Analyze(v.CountersInput(nil, v.Snap.Counters)) // one sample: values since reset
	for _, f := range rep.Findings {
		fmt.Println(f.Severity, f.Code, f.Message)
	}
}

// libraryProbe is docs/library.md's Probe snippet.
func libraryProbe(ctx context.Context, v *host.View) error {
	ep, err := probe.ResolveEndpoint(v.NS, "enp1s0f0.100", netip.Addr{}, netip.MustParseAddr("10.100.0.30"), time.Second)
	if err != nil {
		return err
	}
	sum, err := probe.Send(ctx, probe.SendConfig{Endpoint: ep, Count: 3, Interval: 100 * time.Millisecond, Timeout: time.Second,
		Base: probe.Markings{PCP: 3, DSCP: 26, ECN: probe.ECNECT0, TTL: 64}},
		func(r probe.Result) { fmt.Println(r.Seq, r.Findings()) })
	if err != nil {
		return err
	}
	fmt.Printf("%+v\n", sum)
	return nil
}

// libraryTrace is docs/library.md's Trace snippet.
func libraryTrace(ctx context.Context, ep probe.Endpoint) error {
	res, err := trace.Run(ctx, trace.Config{Endpoint: ep, Paths: 4, Base: probe.Markings{DSCP: 26, ECN: probe.ECNECT0}})
	if err != nil {
		return err
	}
	for _, p := range res.Paths {
		fmt.Println(p.Sports, trace.Reached(p.Hops), res.PathChanges(p))
	}
	return nil
}

// libraryFabric is docs/library.md's Fabric snippet.
func libraryFabric() error {
	hosts, err := fabric.ReadFiles([]string{"node1.json.gz", "node2.json.gz"}, 0)
	if err != nil {
		return err
	}
	rep, err := fabric.Analyze(hosts, fabric.SourceFiles)
	if err != nil {
		return err
	}
	for _, f := range rep.Findings {
		fmt.Println(f.Check, f.Network, len(f.Groups), "groups")
	}
	return nil
}

// snapshotInGo is docs/snapshot.md's "In Go" snippet.
func snapshotInGo(attr ah.Attr) error {
	s, err := collect.Collect(collect.Options{}) // on the Linux host; anywhere else: host.Load("node1.json.gz")
	if err != nil {
		return err
	}
	v, err := s.View("") // the view namespace, every GID table mapped
	if err != nil {
		return err
	}
	src, err := v.Source("mlx5_0", 1, 3) // GID entry, VLAN chain, driver, DCB of the real netdev
	if err != nil {
		return err
	}
	r, err := v.ResolveAH(host.AHRequest{Device: "mlx5_0", Attr: attr}) // the frame an AH puts on the wire
	if err != nil {
		return err
	}
	fmt.Println(src.Entry.Netdev, src.Desc.Chain, r.Wire.DSCP)
	return nil
}

// ahLibrary is docs/ah.md's "Library" snippet.
func ahLibrary(attr ah.Attr, qpn uint32, data []byte) error {
	s, err := host.Load("node1.json.gz") // a snapshot: GID tables, links, routes, neighbours, sysctls
	if err != nil {
		return err
	}
	v, err := s.View("") // every GID entry mapped: netdev, VLAN, MAC, MTU
	if err != nil {
		return err
	}
	p, err := v.Port("rxe0", 1)
	if err != nil {
		return err
	}
	r, err := ah.Resolve(attr, ah.TableOf(p.Entries), v.NS,
		ah.ResolveOptions{Driver: qos.DriverRXE, SrcQPN: qpn})
	if err != nil {
		return err // an unresolved next hop is an *ah.NeighborError, returned with r
	}
	frame, err := r.Frame(ah.Datagram{SrcQPN: qpn, DestQPN: 0x12, QKey: 0x11111111, PSN: 0, Payload: data})
	if err != nil {
		return err
	}
	fmt.Printf("% x\n", frame)
	return nil
}

// countersGuide is docs/counters.md's "In Go" snippet.
func countersGuide(view *host.View, prev, cur *counters.Sample) {
	in := view.CountersInput(prev, cur)               // host.View: ports, netdevs, DCB, settings of two samples
	r := counters.Analyze(in.Select("mlx5_0", 1, "")) // --dev mlx5_0 --port 1 (or "", 0, "enp1s0f0" for --netdev)
	for _, p := range r.Ports {
		for name, v := range p.Counters {
			if v.Meaning != nil {
				fmt.Println(name, v.Value, counters.Meaning(*v.Meaning).Text())
			}
		}
	}
	for _, p := range r.Priorities {
		if d := p.Discards(); d != nil { // rx_discards + rx_buf_discard + rx_cong_discard
			fmt.Println(p.Netdev, p.Prio, d.Value)
		}
	}
	if r.HasError() { /* a finding of severity error: counters exits 1 */
	}
}

// decodeLibrary is docs/decode.md's "Using the library" snippet.
func decodeLibrary(f io.Reader) error {
	cr, err := capture.NewReader(f) // f: an *os.File or any io.Reader of a pcap or pcapng capture
	if err != nil {
		return err
	}
	var p roce.Packet
	for {
		_, err := cr.NextPacket(&p)
		var fe capture.FrameError
		if errors.As(err, &fe) {
			continue // a malformed RoCE frame: fe.Frame, fe.Err
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err // a damaged capture
		}
		if p.ICRCStatus == roce.ICRCInvalid {
			fmt.Printf("frame %d: icrc %x, want %x\n", cr.Frame(), p.ICRC, p.WantICRC())
		}
	}
	fmt.Printf("%+v\n", cr.Stats())
	return nil
}

// The roce snippet builds a frame with traffic class 106 (DSCP 26, ECN 2)
// and decodes it again.
func Example_librarySnippetRoce() {
	if err := libraryRoce(); err != nil {
		fmt.Println(err)
	}
	// Output: UD_SEND_ONLY 26 2 valid
}
