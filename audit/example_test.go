package audit_test

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/audit"
	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/roce"
)

// A host configured for lossless RoCE on priority 3 (PCP trust, PFC on
// 3): one frame of a process's UD QP leaves on VLAN 100 with PCP 0. The
// audit names the process and the priority.
func ExampleAudit() {
	s, err := host.Load("../host/testdata/mlx5-pcp.json")
	if err != nil {
		panic(err)
	}
	v, err := s.View("")
	if err != nil {
		panic(err)
	}
	spec := roce.FrameSpec{DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
		VLANs: []roce.VLANTag{{TPID: 0x8100, ID: 100, PCP: 0}},
		Src:   netip.MustParseAddr("10.100.0.10"), Dst: netip.MustParseAddr("10.100.0.20"), TTL: 64, SrcPort: 0xc000,
		BTH:     roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xffff, DestQP: 0x99},
		Headers: []gopacket.SerializableLayer{&roce.DETH{QKey: 1, SrcQP: 0x1a}}, Payload: make([]byte, 8)}
	frame, err := spec.Build()
	if err != nil {
		panic(err)
	}
	w := audit.NewWire([]netip.Addr{netip.MustParseAddr("10.100.0.10")}, audit.DefaultLimits)
	w.Add("enp1s0f0", frame, time.Now())
	qps := &census.Census{QPs: []census.QP{{Device: "mlx5_0", Port: 1, QPN: 0x1a, Type: "UD", PID: 4242, Comm: "train.py"}}}
	r := audit.Audit(audit.Input{View: v, Wire: w, Owners: audit.OwnersOf(qps)})
	for _, f := range r.Findings {
		fmt.Println(f.Severity, f.Code, *f.QP.PID, *f.Priority)
	}
	// Output:
	// error qp_off_priority 4242 0
}
