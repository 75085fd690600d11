package probe

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/roce-probe/roce-probe/roce"
)

// Result is what became of one probe.
type Result struct {
	Seq  uint32   `json:"seq"`
	Sent Markings `json:"sent"`
	// SentTags are the VLAN tags the probe was built with, outermost
	// first (Sent has the outermost one's VLAN and PCP); nil untagged.
	SentTags []roce.VLANTag `json:"-"`
	// Egress is the probe as captured leaving the sender's netdev
	// (PACKET_OUTGOING): what the host really put on the wire. Nil if the
	// egress capture did not see it. EgressTags are the tags it left with.
	Egress     *Markings      `json:"egress"`
	EgressTags []roce.VLANTag `json:"-"`
	// Received is what the listener reports arrived; nil if no reply came.
	Received *Markings     `json:"received"`
	RTT      time.Duration `json:"rtt_ns,omitempty"`
	SentAt   time.Time     `json:"-"`
}

// Findings compares what was sent with what arrived, and what was meant to
// be sent with what left the host.
func (r Result) Findings() []Finding {
	var fs []Finding
	// What the path did is judged against what left this host: a change
	// made on the sending host is reported once, as the host's, not a
	// second time as the path's.
	left := r.Sent
	if r.Egress != nil {
		left = *r.Egress
		if left != r.Sent {
			for _, f := range Compare(r.Sent, r.Egress) {
				f.Message = "on egress from this host: " + f.Message
				fs = append(fs, f)
			}
		}
	}
	return append(fs, Compare(left, r.Received)...)
}

// Prober is the sender's logic without sockets: it builds numbered probes
// from a template frame and matches captured frames to them. Only one
// goroutine may use it at a time.
type Prober struct {
	template Frame
	session  uint64
	results  []Result // by sequence number - base; probes are numbered from 0
	base     uint32   // sequence number of results[0]: those below were released
	built    builtProbe
	// PayloadLen pads probe payloads to this length (0: PayloadLen).
	PayloadLen int
}

// builtProbe is the last probe a Prober built in full, with what it was
// built from, and where the fields that differ from probe to probe are:
// the next probe with the same markings is a copy with those fields and
// the ICRC written again.
type builtProbe struct {
	frame      []byte   // nil: none yet
	in         Markings // the markings asked for
	payloadLen int
	sent       Markings       // the markings as sent (the family from the addresses)
	tags       []roce.VLANTag // the tags as sent
	psn, pl    int            // offsets of the BTH's PSN and of the payload
}

// NewProber returns a Prober that sends probes shaped like template (MACs,
// tags, addresses, QPs; markings are set per probe) with a random session
// ID.
func NewProber(template Frame) (*Prober, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("probe: session ID: %w", err)
	}
	if template.DestQP == 0 {
		template.DestQP = DefaultDestQP
	}
	if template.SrcQP == 0 {
		template.SrcQP = DefaultSrcQP
	}
	if template.QKey == 0 {
		template.QKey = DefaultQKey
	}
	if template.PKey == 0 {
		template.PKey = 0xffff
	}
	return &Prober{template: template, session: binary.BigEndian.Uint64(b[:])}, nil
}

// Session returns the session ID the prober's probes carry (replies carry
// it back), so a sender with many probers can hand each reply to its own.
func (p *Prober) Session() uint64 { return p.session }

// Next builds the next probe with markings m, sent at now, and returns its
// frame and sequence number. The frame is the caller's.
//
// A probe with the same markings (and PayloadLen) as the one before is the
// previous frame with its PSN, sequence number and timestamp written again
// and its ICRC recomputed (roce.FillICRC), not serialized anew: the agent
// sends every stream's probes with one set of markings.
func (p *Prober) Next(m Markings, now time.Time) ([]byte, uint32, error) {
	if err := m.Validate(); err != nil {
		return nil, 0, err
	}
	seq := p.base + uint32(len(p.results))
	bp := &p.built
	if bp.frame == nil || bp.in != m || bp.payloadLen != p.PayloadLen {
		b, err := p.build(m, seq, now)
		if err != nil {
			return nil, 0, err
		}
		p.results = append(p.results, Result{Seq: seq, Sent: bp.sent, SentTags: bp.tags, SentAt: now})
		return b, seq, nil
	}
	b := append([]byte(nil), bp.frame...)
	b[bp.psn], b[bp.psn+1], b[bp.psn+2] = byte(seq>>16), byte(seq>>8), byte(seq)
	binary.BigEndian.PutUint32(b[bp.pl+payloadSeqOff:], seq)
	binary.BigEndian.PutUint64(b[bp.pl+payloadSentOff:], uint64(now.UnixNano()))
	if err := roce.FillICRC(b); err != nil {
		return nil, 0, err
	}
	p.results = append(p.results, Result{Seq: seq, Sent: bp.sent, SentTags: bp.tags, SentAt: now})
	return b, seq, nil
}

// build serializes probe seq with markings m in full (Frame.Build) and
// keeps it, and where its PSN and payload are, in p.built.
func (p *Prober) build(m Markings, seq uint32, now time.Time) ([]byte, error) {
	f := p.template
	f.SetMarkings(m)
	f.PSN = seq & 0xffffff
	sent := f.Markings() // the family comes from the addresses
	pl, err := Payload{Kind: KindProbe, Len: p.PayloadLen, Session: p.session, Seq: seq, SentNano: now.UnixNano(), Sent: sent}.Marshal()
	if err != nil {
		return nil, err
	}
	f.Payload = pl
	b, err := f.Build()
	if err != nil {
		return nil, err
	}
	var w roce.Walk
	if err := roce.WalkFrame(b, &w); err != nil {
		return nil, fmt.Errorf("probe: walking the probe just built: %w", err)
	}
	p.built = builtProbe{frame: append([]byte(nil), b...), in: m, payloadLen: p.PayloadLen, sent: sent, tags: f.Tags,
		psn: w.Transport + bthPSNOff, pl: w.Transport + bthLen + dethLen}
	return b, nil
}

// Match examines a captured frame. A reply to one of this session's probes
// fills in that probe's Received markings and round-trip time; this
// session's own probe seen on egress fills in its Egress markings. It
// returns the sequence number and true when the frame was one of these.
func (p *Prober) Match(frame []byte, now time.Time) (uint32, bool) {
	f, err := ParseFrame(frame)
	if err != nil {
		return 0, false
	}
	pl, err := ParsePayload(f.Payload)
	if err != nil {
		return 0, false
	}
	return p.MatchParsed(f, pl, now)
}

// MatchParsed is Match of a frame already parsed: f is ParseFrame's and pl
// ParsePayload's of f.Payload. A caller that parses a frame to find its
// session's Prober passes it on without parsing it again.
func (p *Prober) MatchParsed(f Frame, pl Payload, now time.Time) (uint32, bool) {
	if pl.Session != p.session || pl.Seq < p.base || int64(pl.Seq-p.base) >= int64(len(p.results)) {
		return 0, false
	}
	r := &p.results[pl.Seq-p.base]
	if pl.Sent != r.Sent {
		return 0, false // not what we sent under that number
	}
	switch pl.Kind {
	case KindReply:
		if r.Received == nil {
			got := pl.Received
			r.Received = &got
			// The reply's time (a kernel timestamp: the wall clock) may
			// come before the send's when the wall clock stepped back in
			// between (seen in the lab's VMs), or when the reply was
			// read before its sender recorded the end of its write
			// (SetSentAt): the round trip is then shorter than the
			// clocks tell, and counted as zero, never negative.
			r.RTT = max(now.Sub(r.SentAt), 0)
		}
	case KindProbe:
		if r.Egress == nil {
			m := f.Markings()
			r.Egress, r.EgressTags = &m, f.Tags
		}
	}
	return pl.Seq, true
}

// SetSentAt records when probe seq actually left, for a sender that builds
// a batch of probes at one time and writes them one after another: its
// round-trip time is then measured from t. seq must be a probe sent and
// not released.
func (p *Prober) SetSentAt(seq uint32, t time.Time) {
	r := &p.results[seq-p.base]
	if r.Received != nil {
		r.RTT = max(r.RTT-t.Sub(r.SentAt), 0)
	}
	r.SentAt = t
}

// Result returns the result of probe seq so far. seq must be a probe sent
// and not released.
func (p *Prober) Result(seq uint32) Result { return p.results[seq-p.base] }

// Results returns the results of every probe sent so far and not released.
func (p *Prober) Results() []Result { return append([]Result(nil), p.results...) }

// Release forgets the results of the probes numbered below seq (a reply
// to one of them is no longer matched), so that a sender that runs for
// long keeps only the probes it still waits for: memory stays bounded by
// the probes in flight.
func (p *Prober) Release(seq uint32) {
	n := int64(seq) - int64(p.base)
	if n <= 0 {
		return
	}
	if n > int64(len(p.results)) {
		n = int64(len(p.results))
	}
	clear(p.results[:n]) // no pointers into released results are kept
	p.results = p.results[n:]
	p.base += uint32(n)
}

// Released returns the sequence number of the oldest probe not released
// (the next one to be sent when all are).
func (p *Prober) Released() uint32 { return p.base }

// Pending returns how many probes have no reply yet.
func (p *Prober) Pending() int {
	n := 0
	for _, r := range p.results {
		if r.Received == nil {
			n++
		}
	}
	return n
}
