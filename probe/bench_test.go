package probe

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkResponderProbe is the listener's cost for one valid probe:
// parse, ICRC check, payload checks, rate limit, the reply frame and the
// Event (`roce-probe listen`), for a probe that arrives as sent and for
// one whose path remarked it (PCP, DSCP, ECN, TTL: the Event's findings).
func BenchmarkResponderProbe(b *testing.B) {
	benchResponder(b, func(r *Responder, frame []byte) []byte { reply, _ := r.Handle(frame); return reply })
}

// BenchmarkResponderReply is BenchmarkResponderProbe through HandleReply,
// the agent's path: the same decision and reply, without the Event.
func BenchmarkResponderReply(b *testing.B) {
	benchResponder(b, (*Responder).HandleReply)
}

func benchResponder(b *testing.B, handle func(*Responder, []byte) []byte) {
	sent := Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	remarked := Markings{Tagged: true, VLAN: 100, PCP: 0, DSCP: 0, ECN: ECNCE, TTL: 62, Sport: 0xc000}
	for _, c := range []struct {
		name    string
		arrived Markings
	}{{"as-sent", sent}, {"remarked", remarked}} {
		b.Run(c.name, func(b *testing.B) {
			clk := &fakeClock{t: time.Unix(1000, 0)}
			r := newTestResponder(b, clk, RateConfig{Rate: 1e12, Burst: 1e12, GlobalRate: 1e12, GlobalBurst: 1e12})
			frame := probeFrom(b, senderIP, senderMAC, sent, c.arrived, 0)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if handle(r, frame) == nil {
					b.Fatal("not answered")
				}
			}
		})
	}
}

// BenchmarkResponderFlood is the cost of one frame of a flood that is
// dropped after the ICRC check (the most expensive way to be ignored
// before payload parsing).
func BenchmarkResponderFlood(b *testing.B) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	r := newTestResponder(b, clk, RateConfig{})
	m := Markings{TTL: 64}
	frame := probeFrom(b, senderIP, senderMAC, m, m, 0)
	frame[len(frame)-1] ^= 1
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if reply, _ := r.Handle(frame); reply != nil {
			b.Fatal("answered")
		}
	}
}

// BenchmarkRateLimiterNewSenders is the rate limiter's cost per frame when
// every frame comes from a new address (a spoofed flood).
func BenchmarkRateLimiterNewSenders(b *testing.B) {
	rl, err := NewRateLimiter(RateConfig{})
	if err != nil {
		b.Fatal(err)
	}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	rl.Now = clk.now
	i := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		i++
		rl.Allow(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
}

// BenchmarkProberNext is the sender's cost for one probe of a stream whose
// markings stay the same (the agent's case): the frame and its ICRC.
func BenchmarkProberNext(b *testing.B) {
	p, err := NewProber(Frame{SrcMAC: senderMAC, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		Src: netip.MustParseAddr("10.77.0.1"), Dst: netip.MustParseAddr("10.77.0.2")})
	if err != nil {
		b.Fatal(err)
	}
	m := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	now := time.Unix(1000, 0)
	b.ReportAllocs()
	for b.Loop() {
		_, seq, err := p.Next(m, now)
		if err != nil {
			b.Fatal(err)
		}
		p.Release(seq + 1)
	}
}
