package probe

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/topology"
)

// ReplyTTL is the TTL / hop limit of replies.
const ReplyTTL = 64

// Counters count every frame a Responder was handed, by what became of it.
// They are safe to read while Handle or HandleReply runs.
type Counters struct {
	Frames      atomic.Uint64 // every frame handed to Handle or HandleReply
	NotRoCE     atomic.Uint64 // not a well-formed RoCE v2 UD SEND_ONLY frame
	BadICRC     atomic.Uint64 // RoCE v2 UD SEND_ONLY with a wrong ICRC
	Foreign     atomic.Uint64 // valid RoCE v2 frame without the probe signature
	Malformed   atomic.Uint64 // signature present, payload invalid
	Replies     atomic.Uint64 // probe replies (ignored: a listener answers probes only)
	NotForUs    atomic.Uint64 // sent to another MAC or IP address
	BadSource   atomic.Uint64 // sender address is multicast, broadcast, loopback or unspecified
	RateLimited atomic.Uint64 // valid probes not answered because of the rate limit
	Answered    atomic.Uint64 // replies built
}

// CounterSnapshot is a plain copy of Counters for printing.
type CounterSnapshot struct {
	Frames      uint64 `json:"frames"`
	NotRoCE     uint64 `json:"not_roce"`
	BadICRC     uint64 `json:"bad_icrc"`
	Foreign     uint64 `json:"foreign"`
	Malformed   uint64 `json:"malformed"`
	Replies     uint64 `json:"replies_ignored"`
	NotForUs    uint64 `json:"not_for_us"`
	BadSource   uint64 `json:"bad_source"`
	RateLimited uint64 `json:"rate_limited"`
	Answered    uint64 `json:"answered"`
}

// Snapshot copies the counters.
func (c *Counters) Snapshot() CounterSnapshot {
	return CounterSnapshot{
		Frames: c.Frames.Load(), NotRoCE: c.NotRoCE.Load(), BadICRC: c.BadICRC.Load(),
		Foreign: c.Foreign.Load(), Malformed: c.Malformed.Load(), Replies: c.Replies.Load(),
		NotForUs: c.NotForUs.Load(), BadSource: c.BadSource.Load(),
		RateLimited: c.RateLimited.Load(), Answered: c.Answered.Load(),
	}
}

// ResponderConfig configures a Responder.
type ResponderConfig struct {
	// LocalMACs and LocalAddrs are the listener's own addresses: probes
	// sent to other addresses are counted as NotForUs. Empty means any.
	LocalMACs  []net.HardwareAddr
	LocalAddrs []netip.Addr
	Rate       RateConfig
	Now        func() time.Time // clock; time.Now when nil
}

// Responder is the listener's logic without sockets: it validates a
// captured frame and builds the reply. Calls of Handle, HandleReply and
// SetLocal must not overlap (the caller serializes them); Counters may be
// read from any goroutine.
type Responder struct {
	cfg      ResponderConfig
	limit    *RateLimiter
	parser   frameParser // ParseFrame's, kept: calls do not overlap
	Counters Counters
}

// NewResponder returns a Responder.
func NewResponder(cfg ResponderConfig) (*Responder, error) {
	rl, err := NewRateLimiter(cfg.Rate)
	if err != nil {
		return nil, err
	}
	rl.Now = cfg.Now
	return &Responder{cfg: cfg, limit: rl}, nil
}

// SetLocal replaces the listener's own MAC and IP addresses (as
// ResponderConfig's LocalMACs and LocalAddrs) when the host's addresses
// change; the rate limiter and counters are kept. It must not run
// concurrently with Handle or HandleReply.
func (r *Responder) SetLocal(macs []net.HardwareAddr, addrs []netip.Addr) {
	r.cfg.LocalMACs = append([]net.HardwareAddr(nil), macs...)
	r.cfg.LocalAddrs = append([]netip.Addr(nil), addrs...)
}

// Limiter returns the responder's rate limiter (for its table size).
func (r *Responder) Limiter() *RateLimiter { return r.limit }

// Action says what a Responder did with a valid probe.
type Action string

// Actions.
const (
	ActionAnswered    Action = "answered"
	ActionRateLimited Action = "rate-limited"
)

// Event describes one valid probe a Responder saw.
type Event struct {
	Time     time.Time  `json:"time"`
	From     netip.Addr `json:"from"`
	FromMAC  string     `json:"from_mac"`
	To       netip.Addr `json:"to"`
	Session  uint64     `json:"session"`
	Seq      uint32     `json:"seq"`
	Sent     Markings   `json:"sent"`
	Received Markings   `json:"received"`
	// ReceivedTags are the VLAN tags the probe arrived with, outermost
	// first (Received has the outermost one's VLAN and PCP).
	ReceivedTags []roce.VLANTag   `json:"-"`
	Tagged       bool             `json:"tagged"`
	Findings     []Finding        `json:"-"`
	Action       Action           `json:"action"`
	Counters     *CounterSnapshot `json:"-"`
}

// Handle examines one captured frame. For a valid probe addressed to this
// listener it returns the event and, unless rate-limited, the reply frame to
// send back out of the same netdev; the reply is never longer than frame.
// Everything else is counted and gets (nil, nil).
func (r *Responder) Handle(frame []byte) ([]byte, *Event) {
	reply, f, p, act := r.answer(frame, "")
	if act == "" {
		return nil, nil
	}
	now := time.Now()
	if r.cfg.Now != nil {
		now = r.cfg.Now()
	}
	got := f.Markings()
	return reply, &Event{Time: now, From: f.Src, FromMAC: f.SrcMAC.String(), To: f.Dst, Session: p.Session, Seq: p.Seq,
		Sent: p.Sent, Received: got, ReceivedTags: f.Tags, Tagged: got.Tagged, Findings: Compare(p.Sent, &got), Action: act}
}

// HandleReply is Handle without the Event, for a listener that only
// answers (the agent's): the same decision, the same counters and the
// same reply, or nil.
func (r *Responder) HandleReply(frame []byte) []byte {
	reply, _, _, _ := r.answer(frame, "")
	return reply
}

// HandleReplyToR is HandleReply for a listener whose netdev is plugged
// into the switch tor ("" when not known): a probe of TopologyPayloadLen
// bytes, which asks for it, gets it in its reply.
func (r *Responder) HandleReplyToR(frame []byte, tor string) []byte {
	reply, _, _, _ := r.answer(frame, tor)
	return reply
}

// answer is the decision of Handle and HandleReply: it counts the frame
// and, for a valid probe addressed to this listener, returns it parsed
// with what was done (ActionAnswered with the reply, or
// ActionRateLimited); everything else gets the Action "".
func (r *Responder) answer(frame []byte, tor string) ([]byte, Frame, Payload, Action) {
	r.Counters.Frames.Add(1)
	f, err := r.parser.parse(frame)
	if err != nil {
		if errors.Is(err, ErrBadICRC) {
			r.Counters.BadICRC.Add(1)
		} else {
			r.Counters.NotRoCE.Add(1)
		}
		return nil, f, Payload{}, ""
	}
	p, err := ParsePayload(f.Payload)
	switch {
	case errors.Is(err, ErrNoSignature):
		r.Counters.Foreign.Add(1)
		return nil, f, p, ""
	case err != nil:
		r.Counters.Malformed.Add(1)
		return nil, f, p, ""
	case p.Kind == KindReply:
		r.Counters.Replies.Add(1)
		return nil, f, p, ""
	}
	if !r.forUs(f) {
		r.Counters.NotForUs.Add(1)
		return nil, f, p, ""
	}
	if !unicastSource(f) {
		r.Counters.BadSource.Add(1)
		return nil, f, p, ""
	}
	if !r.limit.Allow(f.Src) {
		r.Counters.RateLimited.Add(1)
		return nil, f, p, ActionRateLimited
	}
	reply, err := buildReply(f, p, tor)
	if err != nil || len(reply) > len(frame) {
		// Cannot happen for a frame that parsed (the reply payload is the
		// minimum size and the headers mirror the probe's); count it as
		// malformed rather than send something larger.
		r.Counters.Malformed.Add(1)
		return nil, f, p, ""
	}
	r.Counters.Answered.Add(1)
	return reply, f, p, ActionAnswered
}

func (r *Responder) forUs(f Frame) bool {
	if len(r.cfg.LocalMACs) > 0 && !slices.ContainsFunc(r.cfg.LocalMACs, func(m net.HardwareAddr) bool {
		return string(m) == string(f.DstMAC)
	}) {
		return false
	}
	if len(r.cfg.LocalAddrs) > 0 && !slices.Contains(r.cfg.LocalAddrs, f.Dst.Unmap()) {
		return false
	}
	return true
}

// unicastSource reports whether the probe's sender can be answered without
// reflecting traffic at a group or at ourselves.
func unicastSource(f Frame) bool {
	if f.SrcMAC[0]&1 != 0 || string(f.SrcMAC) == "\x00\x00\x00\x00\x00\x00" || f.DstMAC[0]&1 != 0 {
		return false
	}
	return CheckDestination(f.Src) == nil
}

// buildReply mirrors the probe: back to its source MAC and IP, from the
// MAC and IP it was sent to, with the tags it arrived with, the DSCP it
// arrived with and the ECN it was sent with, to its source QP; with tor
// when the probe asked for it (TopologyPayloadLen) and tor is a valid
// switch name.
func buildReply(f Frame, p Payload, tor string) ([]byte, error) {
	rp := Payload{Kind: KindReply, Session: p.Session, Seq: p.Seq, SentNano: p.SentNano, Sent: p.Sent, Received: f.Markings()}
	if p.Len == TopologyPayloadLen && topology.ValidSwitch(tor) {
		rp.Len, rp.ToR = TopologyPayloadLen, tor
	}
	b, err := rp.Marshal()
	if err != nil {
		return nil, err
	}
	r := Frame{
		DstMAC: f.SrcMAC, SrcMAC: f.DstMAC, Tags: f.Tags,
		Src: f.Dst, Dst: f.Src, DSCP: f.DSCP, ECN: p.Sent.ECN, TTL: ReplyTTL, Sport: f.Sport,
		PKey: f.PKey, DestQP: f.SrcQP, SrcQP: f.DestQP, PSN: f.PSN, QKey: f.QKey, Payload: b,
	}
	return r.Build()
}
