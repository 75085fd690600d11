package rocegen_test

import (
	"bytes"
	"fmt"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
)

// The sample capture: every frame is described, and the RoCE ones decode.
func ExampleSample() {
	frames := rocegen.Sample()
	var buf bytes.Buffer
	if err := rocegen.WritePcapNG(&buf, frames); err != nil {
		panic(err)
	}
	dec := roce.NewDecoder()
	var p roce.Packet
	for i, f := range frames {
		status := "not RoCE"
		if err := dec.Decode(f.Data, &p); err == nil {
			status = "ICRC " + p.ICRCStatus.String()
		}
		fmt.Printf("%2d %s: %s\n", i+1, f.Note, status)
	}
	// Output:
	//  1 RoCE v2 IPv4 untagged UD SEND_ONLY: ICRC valid
	//  2 RoCE v2 IPv4 VLAN 100 PCP 3 UD SEND_ONLY_WITH_IMMEDIATE, DSCP 26 ECN 2: ICRC valid
	//  3 RoCE v2 IPv6 untagged RC RDMA_WRITE_ONLY: ICRC valid
	//  4 RoCE v2 IPv6 QinQ 1000/10 RC ACKNOWLEDGE: ICRC valid
	//  5 RoCE v2 IPv4 VLAN 100 RC RDMA_WRITE_ONLY, ECN CE: ICRC valid
	//  6 RoCE v2 IPv4 VLAN 100 CNP: ICRC valid
	//  7 RoCE v1 untagged UD SEND_ONLY: ICRC valid
	//  8 RoCE v1 VLAN 100 PCP 3 RC SEND_ONLY: ICRC valid
	//  9 RoCE v2 IPv4 UD SEND_ONLY with a flipped payload bit (bad ICRC): ICRC invalid
	// 10 not RoCE: IPv4 UDP DNS query: not RoCE
}
