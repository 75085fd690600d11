package qos

import (
	"testing"

	"github.com/roce-probe/roce-probe/gid"
)

func BenchmarkParseDCBReply(b *testing.B) {
	reply := ieeeReply()
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		var d DCB
		if err := ParseDCBReply(reply, &d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	f := Flow{Device: "mlx5_0", Port: 1, GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5,
		Link: mlx5Link(), DCB: roceDCB(true), SL: 3, TrafficClass: 106}
	b.ReportAllocs()
	for b.Loop() {
		if r, err := Check(f); err != nil || r.Verdict != Lossless {
			b.Fatal(r.Verdict, err)
		}
	}
}
