package capture_test

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// Read a capture frame by frame and decode its RoCE packets.
func ExampleReader_Next() {
	f, err := os.Open("../testdata/sample.pcapng")
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
			fmt.Printf("%d: %v\n", r.Frame(), err)
			continue
		}
		if r.Frame() <= 3 {
			fmt.Printf("%d: %s v%d %s > %s %s icrc %s\n", r.Frame(), r.Format(), p.Version, p.Src, p.Dst, p.BTH.Opcode, p.ICRCStatus)
		}
	}
	// Output:
	// 1: pcapng v2 192.168.100.1 > 192.168.100.2 UD_SEND_ONLY icrc valid
	// 2: pcapng v2 192.168.100.1 > 192.168.100.2 UD_SEND_ONLY_WITH_IMMEDIATE icrc valid
	// 3: pcapng v2 fd00:100::1 > fd00:100::2 RC_RDMA_WRITE_ONLY icrc valid
	// 10: not a RoCE packet: UDP destination port is not 4791
}

// Summarise the RoCE flows of a capture file per flow, on all cores.
func ExampleReader_Summarize() {
	f, err := os.Open("../testdata/sample.pcapng")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	cr, err := capture.NewReader(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, stats, err := cr.Summarize(func(e capture.FrameError) { fmt.Printf("frame %d: %v\n", e.Frame, e.Err) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d frames, %d RoCE, %d with a bad ICRC\n", stats.Frames, stats.RoCE, stats.BadICRC)
	for _, fl := range sum.Flows() {
		fmt.Printf("v%d %s > %s qp %#x: %d packets, PSN %d-%d\n", fl.Version, fl.Src, fl.Dst, fl.DestQP, fl.Packets, fl.FirstPSN, fl.LastPSN)
	}
	// Output:
	// 10 frames, 9 RoCE, 1 with a bad ICRC
	// v2 192.168.100.1 > 192.168.100.2 qp 0x12: 3 packets, PSN 1-4
	// v2 fd00:100::1 > fd00:100::2 qp 0x21: 1 packets, PSN 100-100
	// v2 fd00:100::1 > fd00:100::2 qp 0x20: 1 packets, PSN 100-100
	// v2 192.168.100.1 > 192.168.100.2 qp 0x21: 1 packets, PSN 101-101
	// v2 192.168.100.1 > 192.168.100.2 qp 0x20: 1 packets, PSN 0-0
	// v1 ::ffff:192.168.100.1 > ::ffff:192.168.100.2 qp 0x12: 1 packets, PSN 3-3
	// v1 ::ffff:192.168.100.1 > ::ffff:192.168.100.2 qp 0x21: 1 packets, PSN 7-7
}
