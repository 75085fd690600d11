package probe

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCompare(t *testing.T) {
	tagged := Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	untagged := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	with := func(m Markings, f func(*Markings)) *Markings { f(&m); return &m }
	type want struct {
		kind      FindingKind
		sent, got int
		text      string
	}
	for _, tc := range []struct {
		name     string
		sent     Markings
		received *Markings
		want     []want
	}{
		{"unchanged", tagged, &tagged, nil},
		{"loss", tagged, nil, []want{{FindingLoss, 0, 0, "no reply"}}},
		{"tag stripped", tagged, with(tagged, func(m *Markings) { m.Tagged, m.VLAN, m.PCP = false, 0, 0 }),
			[]want{{FindingTagStripped, 100, -1, "VLAN tag stripped: sent VLAN 100 PCP 3"}}},
		{"tag added", untagged, with(untagged, func(m *Markings) { m.Tagged, m.VLAN, m.PCP = true, 5, 2 }),
			[]want{{FindingTagAdded, -1, 5, "arrived with VLAN 5 PCP 2"}}},
		{"vlan and pcp", tagged, with(tagged, func(m *Markings) { m.VLAN, m.PCP = 200, 0 }),
			[]want{{FindingVLANChanged, 100, 200, "VLAN changed 100→200"}, {FindingPCPRemarked, 3, 0, "PCP remarked 3→0"}}},
		{"dscp", untagged, with(untagged, func(m *Markings) { m.DSCP = 0 }), []want{{FindingDSCPRemarked, 26, 0, "DSCP remarked 26→0"}}},
		{"ce", untagged, with(untagged, func(m *Markings) { m.ECN = ECNCE }), []want{{FindingECNMarked, 2, 3, "ECN marked CE (sent ECT(0))"}}},
		{"bleached", untagged, with(untagged, func(m *Markings) { m.ECN = ECNNotECT }), []want{{FindingECNChanged, 2, 0, "ECN changed ECT(0)→Not-ECT"}}},
		{"not-ect to ce is not marking", *with(untagged, func(m *Markings) { m.ECN = 0 }), with(untagged, func(m *Markings) { m.ECN = ECNCE }),
			[]want{{FindingECNChanged, 0, 3, "ECN changed Not-ECT→CE"}}},
		{"three hops", untagged, with(untagged, func(m *Markings) { m.TTL = 61 }), []want{{FindingRoutedHops, 64, 61, "TTL 64→61: 3 routed hops"}}},
		{"ttl raised", untagged, with(untagged, func(m *Markings) { m.TTL = 255 }), []want{{FindingTTLRaised, 64, 255, "TTL raised 64→255"}}},
		{"sport", untagged, with(untagged, func(m *Markings) { m.Sport = 1 }), []want{{FindingSportChanged, 0xc000, 1, "UDP source port changed 49152→1"}}},
		{"family", untagged, with(untagged, func(m *Markings) { m.IPv6 = true }), []want{{FindingFamilyChanged, 0, 1, "sent as IPv4, arrived as IPv6"}}},
	} {
		got := Compare(tc.sent, tc.received)
		if len(got) != len(tc.want) {
			t.Errorf("%s: findings %v, want %d", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			g := got[i]
			if g.Kind != w.kind || g.Sent != w.sent || g.Received != w.got || !strings.Contains(g.Message, w.text) {
				t.Errorf("%s: finding %d = %+v, want %s %d→%d %q", tc.name, i, g, w.kind, w.sent, w.got, w.text)
			}
		}
	}
}

func TestSweep(t *testing.T) {
	s := NewSweep(SweepDSCP)
	if len(s.Entries) != 64 {
		t.Fatalf("%d entries, want 64", len(s.Entries))
	}
	base := Markings{TTL: 64}
	for v := uint8(0); v < 64; v++ {
		m := SweepDSCP.Apply(base, v)
		switch {
		case v == 5: // lost
			s.Add(v, nil)
		case v == 46: // remarked to 0 twice
			r := SweepDSCP.Apply(m, 0)
			s.Add(v, &r)
			s.Add(v, &r)
		case v == 10: // inconsistently remarked
			r1, r2 := SweepDSCP.Apply(m, 10), SweepDSCP.Apply(m, 12)
			s.Add(v, &r2)
			s.Add(v, &r1)
		default:
			s.Add(v, &m)
		}
	}
	if got := s.Entries[10].Received; !reflect.DeepEqual(got, []uint8{10, 12}) {
		t.Errorf("DSCP 10 received %v, want [10 12]", got)
	}
	c := s.Counts()
	if c["unchanged"] != 61 || c["remarked"] != 1 || c["mixed"] != 1 || c["lost"] != 1 {
		t.Errorf("counts %v", c)
	}
	want := []string{
		"DSCP  5 → lost",
		"DSCP 10 → 10, 12",
		"DSCP 46 → 0",
		"DSCP map over 64 values: 61 unchanged, 1 remarked, 1 mixed, 0 untagged, 1 lost",
	}
	if got := s.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	p := NewSweep(SweepPCP)
	tagged := Markings{Tagged: true, VLAN: 10, TTL: 64}
	for v := uint8(0); v < 8; v++ {
		m := SweepPCP.Apply(tagged, v)
		if v == 3 {
			m.Tagged, m.VLAN, m.PCP = false, 0, 0
		}
		p.Add(v, &m)
	}
	if p.Entries[3].Status() != "untagged" || p.Entries[4].Status() != "unchanged" || len(p.Entries) != 8 {
		t.Errorf("PCP sweep entries %+v", p.Entries)
	}
	if _, err := ParseSweepField("ecn"); err == nil {
		t.Error("sweep ecn accepted")
	}
}

// Every probe Next returns is, byte for byte, the frame Frame.Build makes
// of the same fields, whether Next serialized it in full (first probe,
// other markings, other payload length) or patched the previous one: the
// PSN (across its 24-bit wrap), the sequence number, the timestamp and the
// ICRC, untagged, tagged and double-tagged, IPv4 and IPv6, padded or not.
func TestProberNextPatched(t *testing.T) {
	for _, c := range testEncaps {
		t.Run(c.name, func(t *testing.T) {
			tmpl := testFrame(c.tags, c.v6)
			tmpl.Payload, tmpl.PSN = nil, 0
			p, err := NewProber(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			p.base = 0xfffffd // the PSN wraps after three probes
			a := Markings{Tagged: c.tags != nil, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
			b := a
			b.DSCP, b.TTL = 46, 3
			if b.Tagged {
				b.VLAN, b.PCP = c.tags[0].ID, 5
			}
			t0 := time.Unix(1700000000, 123456789)
			for i, step := range []struct {
				m   Markings
				pad int
			}{{a, 0}, {a, 0}, {a, 0}, {a, 0}, {b, 0}, {b, 0}, {a, 0}, {a, 64}, {a, 64}, {a, 0}} {
				p.PayloadLen = step.pad
				now := t0.Add(time.Duration(i) * 1234567 * time.Nanosecond)
				got, seq, err := p.Next(step.m, now)
				if err != nil {
					t.Fatal(err)
				}
				want := tmpl
				want.SetMarkings(step.m)
				want.PSN = seq & 0xffffff
				sent := want.Markings()
				if want.Payload, err = (Payload{Kind: KindProbe, Len: step.pad, Session: p.Session(), Seq: seq, SentNano: now.UnixNano(), Sent: sent}).Marshal(); err != nil {
					t.Fatal(err)
				}
				wb, err := want.Build()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, wb) {
					t.Fatalf("probe %d (seq %#x, markings %+v, pad %d):\n got % x\nwant % x", i, seq, step.m, step.pad, got, wb)
				}
				if r := p.Result(seq); r.Sent != sent || !slices.Equal(r.SentTags, want.Tags) || !r.SentAt.Equal(now) {
					t.Errorf("probe %d: result %+v, want sent %+v tags %v at %v", i, r, sent, want.Tags, now)
				}
				got[len(got)-1] ^= 0xff // the caller's frame is its own
			}
		})
	}
}

// The prober matches only replies and egress copies of its own session
// and sequence numbers.
func TestProberMatch(t *testing.T) {
	tmpl := testFrame(nil, false)
	p, err := NewProber(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0)
	m := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	probe, seq, err := p.Next(m, t0)
	if err != nil || seq != 0 {
		t.Fatal(seq, err)
	}
	// The egress copy of our own probe.
	if s, ok := p.Match(probe, t0); !ok || s != 0 || p.Result(0).Egress == nil {
		t.Fatalf("egress copy not matched (%d %v)", s, ok)
	}
	// A reply from another session is not ours.
	other, _ := NewProber(tmpl)
	if other.Session() == p.Session() {
		t.Fatal("two probers with one session ID")
	}
	op, _, _ := other.Next(m, t0)
	if pl, err := ParsePayload(mustFrame(t, op).Payload); err != nil || pl.Session != other.Session() {
		t.Errorf("probe carries session %x (%v), Session() says %x", pl.Session, err, other.Session())
	}
	if _, ok := p.Match(op, t0); ok {
		t.Error("another session's probe matched")
	}
	// The real reply, through a Responder.
	f, _ := ParseFrame(probe)
	f.DstMAC, f.Dst = listenerMAC, listenerIP
	f.SrcMAC, f.Src = senderMAC, senderIP
	f.DSCP = 8
	in, _ := f.Build()
	r, _ := NewResponder(ResponderConfig{})
	reply, _ := r.Handle(in)
	if reply == nil {
		t.Fatal("no reply")
	}
	if _, ok := p.Match(reply, t0.Add(3*time.Millisecond)); !ok {
		t.Fatal("reply not matched")
	}
	res := p.Result(0)
	if res.Received == nil || res.Received.DSCP != 8 || res.RTT != 3*time.Millisecond {
		t.Errorf("result %+v", res)
	}
	if fs := res.Findings(); len(fs) != 1 || fs[0].Kind != FindingDSCPRemarked {
		t.Errorf("findings %v", fs)
	}
	if p.Pending() != 0 {
		t.Errorf("%d pending", p.Pending())
	}
	// The sender learns afterwards that the probe left 1 ms after t0 (it
	// was written after others of its batch): the round trip was 2 ms.
	p.SetSentAt(0, t0.Add(time.Millisecond))
	if res := p.Result(0); res.RTT != 2*time.Millisecond || !res.SentAt.Equal(t0.Add(time.Millisecond)) {
		t.Errorf("after SetSentAt(t0+1ms): RTT %v, sent at %v; want 2ms, t0+1ms", res.RTT, res.SentAt)
	}
}

// A reply whose kernel timestamp (the wall clock, no monotonic reading)
// is before the probe's send time — the wall clock stepped back in between,
// as in the lab's VMs, where /pairs showed rtt_us -17037 — has a round trip
// of zero, not a negative one.
func TestProberRTTNeverNegative(t *testing.T) {
	p, err := NewProber(testFrame(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now() // with its monotonic reading, as a sender's
	probe, _, err := p.Next(Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}, sent)
	if err != nil {
		t.Fatal(err)
	}
	reply := replyTo(t, probe)
	stamped := sent.Round(0).Add(-17 * time.Millisecond) // a kernel timestamp: wall clock only
	if _, ok := p.Match(reply, stamped); !ok {
		t.Fatal("reply not matched")
	}
	if rtt := p.Result(0).RTT; rtt != 0 {
		t.Errorf("RTT %v with the reply stamped 17 ms before the send: want 0", rtt)
	}
	p.SetSentAt(0, sent.Add(time.Second)) // a send time after the reply's
	if rtt := p.Result(0).RTT; rtt < 0 {
		t.Errorf("RTT %v after SetSentAt later than the reply: want ≥ 0", rtt)
	}
}

// A probe that left this host with other markings than intended (tc or
// netfilter on the sender) is reported as such, once: the path is judged
// by what left the host (the issue saw "dscp-remarked ×4" for 2 probes
// remarked by the sender alone).
func TestResultFindingsEgress(t *testing.T) {
	sent := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	egress := sent
	egress.DSCP = 0
	received := egress
	r := Result{Sent: sent, Egress: &egress, Received: &received}
	fs := r.Findings()
	if len(fs) != 1 || fs[0].Message != "on egress from this host: DSCP remarked 26→0" || fs[0].Kind != FindingDSCPRemarked {
		t.Errorf("host remarks, path keeps: findings %v, want the host's remark once", fs)
	}
	// The host remarks 26→0 and the path 0→10: two findings, each where
	// it happened.
	received.DSCP = 10
	fs = r.Findings()
	if len(fs) != 2 || fs[0].Message != "on egress from this host: DSCP remarked 26→0" || fs[1].Message != "DSCP remarked 0→10" {
		t.Errorf("host and path remark: findings %v", fs)
	}
	// Lost after leaving as intended: the path's loss only.
	r.Egress, r.Received = &sent, nil
	if fs := r.Findings(); len(fs) != 1 || fs[0].Kind != FindingLoss {
		t.Errorf("egress as intended, lost: findings %v, want only the path's loss", fs)
	}
	r.Received = &received
	received = sent
	received.DSCP = 8
	if fs := r.Findings(); len(fs) != 1 || fs[0].Message != "DSCP remarked 26→8" {
		t.Errorf("egress as intended: findings %v, want only the path's", fs)
	}
}

// replyTo answers probe as a listener at listenerIP would (through a
// Responder), so the prober sees a real reply frame.
func replyTo(t *testing.T, probe []byte) []byte {
	t.Helper()
	f, err := ParseFrame(probe)
	if err != nil {
		t.Fatal(err)
	}
	f.DstMAC, f.Dst = listenerMAC, listenerIP
	f.SrcMAC, f.Src = senderMAC, senderIP
	in, _ := f.Build()
	r, _ := NewResponder(ResponderConfig{})
	reply, _ := r.Handle(in)
	if reply == nil {
		t.Fatal("no reply")
	}
	return reply
}

// A long-running sender releases the probes it is done with: their
// replies are no longer matched, later probes keep their numbers, and the
// results kept stay bounded by the probes in flight.
func TestProberRelease(t *testing.T) {
	p, err := NewProber(testFrame(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0)
	m := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	var probes [][]byte
	for i := 0; i < 5; i++ {
		b, seq, err := p.Next(m, t0)
		if err != nil || seq != uint32(i) {
			t.Fatal(seq, err)
		}
		probes = append(probes, b)
	}
	p.Release(3)
	if p.Released() != 3 || len(p.Results()) != 2 || p.Results()[0].Seq != 3 {
		t.Fatalf("after Release(3): base %d, results %+v", p.Released(), p.Results())
	}
	if _, ok := p.Match(replyTo(t, probes[1]), t0); ok {
		t.Error("a released probe's reply matched")
	}
	if s, ok := p.Match(replyTo(t, probes[4]), t0.Add(time.Millisecond)); !ok || s != 4 || p.Result(4).Received == nil {
		t.Errorf("probe 4's reply: %d %v %+v", s, ok, p.Result(4))
	}
	if _, seq, _ := p.Next(m, t0); seq != 5 {
		t.Errorf("next probe after a release: seq %d, want 5", seq)
	}
	p.Release(2) // below the base: nothing
	p.Release(100)
	if p.Released() != 6 || len(p.Results()) != 0 || p.Pending() != 0 {
		t.Errorf("after releasing everything: base %d, %d results", p.Released(), len(p.Results()))
	}
	// Sending and releasing for long keeps the backing array small.
	for i := 0; i < 100000; i++ {
		_, seq, _ := p.Next(m, t0)
		p.Release(seq + 1)
	}
	if c := cap(p.results); c > 64 {
		t.Errorf("after 100000 probes released one by one the results hold capacity %d", c)
	}
}

func mustFrame(t *testing.T, b []byte) Frame {
	t.Helper()
	f, err := ParseFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
