package roceapp_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// The fixtures: snapshots of an mlx5 host (host/testdata/README.md) and a
// capture of real Soft-RoCE frames (roce/testdata/make-rxe-captures.sh).
const (
	mlx5DSCP     = "../host/testdata/mlx5-dscp.json"     // DSCP trust, PFC on priority 3
	mlx5PCP      = "../host/testdata/mlx5-pcp.json"      // the same PFC/ETS, PCP trust
	mlx5Counters = "../host/testdata/mlx5-counters.json" // mlx5-dscp with counters and settings
	rxeCapture   = "../roce/testdata/rxe-ud-send.pcapng"
)

// Load a snapshot written by `roce-probe collect` on another host and list
// its RDMA ports. mlx5-dscp.json models an mlx5_0 whose port 1 is up on
// enp1s0f0 and whose port 2 is down on enp1s0f1 (host/testdata/README.md).
func Example_loadSnapshot() {
	s, err := host.Load(mlx5DSCP)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("host", s.Hostname, "kernel", s.Kernel)
	for _, d := range s.RDMA.Devices {
		for _, p := range d.Ports {
			fmt.Printf("%s port %d: %s on %s, %d GIDs\n", d.Name, p.Port, p.State, p.Netdev, len(p.GIDs))
		}
	}
	// Output:
	// host fixture-mlx5-dscp kernel 6.1.0-fixture
	// mlx5_0 port 1: ACTIVE on enp1s0f0, 14 GIDs
	// mlx5_0 port 2: DOWN on enp1s0f1, 2 GIDs
}

// Pick the source GID index for a destination, as rdma_cm would: the route
// to 192.168.1.20 leaves through enp1s0f0 with source 192.168.1.10, whose
// entries are index 2 (RoCE v1) and 3 (RoCE v2); v2 ranks first
// (docs/gid-selection.md). Index 3 is what NCCL_IB_GID_INDEX should be.
func Example_selectGID() {
	v, err := view(mlx5DSCP)
	if err != nil {
		fmt.Println(err)
		return
	}
	port, err := v.Port("mlx5_0", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	dst := gid.MustParse("192.168.1.20")
	sel, err := gid.Select(port.Entries, dst, gid.Preferences{Exclude: v.Stale(*port)}, v.NS)
	if err != nil {
		fmt.Println(err)
		return
	}
	e := sel.Entry
	fmt.Println("index", e.Index, e.GID, e.Type, "on", e.Netdev)
	fmt.Println("route via", sel.Route.Dev, "source", sel.Route.Src)
	// Output:
	// index 3 ::ffff:192.168.1.10 RoCE v2 on enp1s0f0
	// route via enp1s0f0 source 192.168.1.10
}

// Resolve an address handle with sl 3 and traffic class 106 to the markings
// its frames carry. mlx5's user AH puts sl & 7 in the PCP and the traffic
// class unchanged in the IP header (rdma-core providers/mlx5/verbs.c
// mlx5_create_ah; docs/qos.md): 106 = DSCP 26, ECN 2 (ECT(0)). Index 3 is
// on enp1s0f0 itself (untagged); index 5 on its VLAN device enp1s0f0.100.
func Example_resolveAH() {
	v, err := view(mlx5DSCP)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct {
		index int
		dst   string
	}{{3, "192.168.1.20"}, {5, "10.100.0.30"}} {
		r, err := v.ResolveAH(host.AHRequest{Device: "mlx5_0", Attr: ah.Attr{
			PortNum: 1, SL: 3, IsGlobal: true,
			GRH: ah.GlobalRoute{DGID: gid.MustParse(c.dst), SGIDIndex: uint8(c.index), HopLimit: 64, TrafficClass: 106},
		}})
		// The snapshot holds no neighbours (host/testdata/README.md):
		// the resolution comes with a NeighborError saying that
		// ibv_create_ah would have to ARP for the next hop first.
		var ne *ah.NeighborError
		if errors.As(err, &ne) {
			fmt.Println("no neighbour entry for", ne.Route.NextHop, "on", ne.Route.Dev)
		} else if err != nil {
			fmt.Println(err)
			return
		}
		w := r.Wire
		tag := "untagged"
		if w.VLAN != nil {
			tag = fmt.Sprintf("vlan %d pcp %d", *w.VLAN, *w.PCP)
		}
		fmt.Printf("index %d: RoCE v%d from %s on %s, %s, dscp %d ecn %d\n", c.index, w.RoCEVersion, w.Src, w.Netdev, tag, *w.DSCP, *w.ECN)
	}
	// Output:
	// no neighbour entry for 192.168.1.20 on enp1s0f0
	// index 3: RoCE v2 from 192.168.1.10 on enp1s0f0, untagged, dscp 26 ecn 2
	// no neighbour entry for 10.100.0.30 on enp1s0f0.100
	// index 5: RoCE v2 from 10.100.0.10 on enp1s0f0.100, vlan 100 pcp 3, dscp 26 ecn 2
}

// Check whether a flow is lossless. In mlx5-dscp.json the port trusts DSCP
// (its APP table maps DSCP 26 to priority 3), priority 3 is in traffic class
// 1 and has PFC on: both flows are lossless. mlx5-pcp.json has the same PFC
// and ETS without APP entries, so the port trusts PCP: the VLAN 100 flow
// (PCP 3) stays lossless, the untagged one gets 802.1Q's default priority 0,
// which has no PFC (host/testdata/README.md, docs/qos.md).
func Example_lossless() {
	for _, file := range []string{mlx5DSCP, mlx5PCP} {
		v, err := view(file)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, index := range []int{3, 5} {
			r, err := checkFlow(v, "mlx5_0", 1, index, 3, 106)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%s index %d: trust %s, priority %d, tc %d, pfc %v: %s\n",
				v.Snap.Hostname, index, r.Trust, *r.Priority, *r.TC, *r.PFC, r.Verdict)
		}
	}
	// Output:
	// fixture-mlx5-dscp index 3: trust dscp, priority 3, tc 1, pfc true: lossless
	// fixture-mlx5-dscp index 5: trust dscp, priority 3, tc 1, pfc true: lossless
	// fixture-mlx5-pcp index 3: trust pcp, priority 0, tc 0, pfc false: lossy
	// fixture-mlx5-pcp index 5: trust pcp, priority 3, tc 1, pfc true: lossless
}

// checkFlow follows an AH's sl and traffic class on a GID entry to the
// port's verdict. View.Flow builds the flow as `roce-probe check` does,
// with the settings the host applies behind the application's back.
func checkFlow(v *host.View, dev string, port, index int, sl, tclass uint8) (qos.Result, error) {
	src, err := v.Source(dev, port, index)
	if err != nil {
		return qos.Result{}, err
	}
	return qos.Check(v.Flow(src, host.FlowParams{SL: sl, TrafficClass: tclass}))
}

// Check an rdma_cm connection whose application sets no ToS: rdma_cm uses
// the port's configfs default_roce_tos (drivers/infiniband/core/cma.c,
// cma_resolve_iboe_route), 106 on mlx5_0 port 1 in mlx5-counters.json, and
// the connected QP's DSCP is the traffic class >> 2 (mlx5_set_path;
// docs/qos.md): 26, which the APP table maps to priority 3 (PFC on). In
// mlx5-tcoverride.json MLNX_OFED's traffic class override (Global
// tclass=96) replaces it for connected QPs: DSCP 24, which the APP table
// does not map (only 26 and 48), so the priority is the firmware's: unknown
// (host/testdata/README.md, docs/qos.md "Verdict rules").
func Example_rdmaCM() {
	for _, file := range []string{mlx5Counters, "../host/testdata/mlx5-tcoverride.json"} {
		v, err := view(file)
		if err != nil {
			fmt.Println(err)
			return
		}
		src, err := v.Source("mlx5_0", 1, 3)
		if err != nil {
			fmt.Println(err)
			return
		}
		r, err := qos.Check(v.Flow(src, host.FlowParams{RDMACM: true}))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: tos %d, dscp %d: %s\n", filepath.Base(file), *r.TOS, *r.DSCP, r.Verdict)
	}
	// Output:
	// mlx5-counters.json: tos 106, dscp 26: lossless
	// mlx5-tcoverride.json: tos 106, dscp 24: unknown
}

// Decode a capture and check every frame's ICRC. rxe-ud-send.pcapng holds
// eight UD SEND Only frames Linux 6.1's Soft-RoCE sent, one over IPv4 and
// one over IPv6 on each lab network (untagged, 802.1Q 100, 802.1Q 200,
// 802.1ad 1000 + 802.1Q 10), traffic class 0x6a (DSCP 26, ECN 2), to QP
// 0xabcd with Q_Key 0x1234abcd; the kernel computed their ICRCs
// (roce/testdata/make-rxe-captures.sh).
func Example_decodeCapture() {
	f, err := os.Open(rxeCapture)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	r, err := capture.NewReader(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	dec := roce.NewDecoder()
	var p roce.Packet
	for {
		data, ci, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := dec.DecodeCaptured(data, ci, &p); err != nil {
			fmt.Println(r.Frame(), err)
			continue
		}
		var tags []uint16
		for _, t := range p.VLANs[:p.NumVLANs] {
			tags = append(tags, t.ID)
		}
		fmt.Printf("%d: IPv%d vlans %v %s qp %#x qkey %#x dscp %d ecn %d icrc %s\n",
			r.Frame(), p.IPVersion, tags, p.BTH.Opcode, p.BTH.DestQP, p.QKey, p.DSCP(), p.ECN(), p.ICRCStatus)
	}
	// Output:
	// 1: IPv4 vlans [] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 2: IPv6 vlans [] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 3: IPv4 vlans [100] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 4: IPv6 vlans [100] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 5: IPv4 vlans [200] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 6: IPv6 vlans [200] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 7: IPv4 vlans [1000 10] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
	// 8: IPv6 vlans [1000 10] UD_SEND_ONLY qp 0xabcd qkey 0x1234abcd dscp 26 ecn 2 icrc valid
}

// Read the counters findings of a snapshot's counter sample. In
// mlx5-counters.json, mlx5_0 port 1 counted out_of_sequence 120,
// duplicate_request 15, packet_seq_err 30 and local_ack_timeout_err 2 on
// enp1s0f0, whose PFC is on for priority 3 (meant to be lossless):
// loss_on_lossless. It counted 500 np_ecn_marked_roce_packets and no CNP
// sent: ecn_without_cnp. With one sample every finding is info
// (docs/counters.md, "Findings"; host/testdata/README.md).
func Example_countersFindings() {
	v, err := view(mlx5Counters)
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := counters.Analyze(v.CountersInput(nil, v.Snap.Counters))
	for _, f := range rep.Findings {
		fmt.Println(f.Severity, f.Code)
	}
	// Unordered output:
	// info ecn_without_cnp
	// info loss_on_lossless
}

// view loads a snapshot and opens it in the namespace it was taken in.
func view(path string) (*host.View, error) {
	s, err := host.Load(path)
	if err != nil {
		return nil, err
	}
	return s.View("")
}
