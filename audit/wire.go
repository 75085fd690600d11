package audit

import (
	"errors"
	"io"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// Limits bound a wire sample: the frames taken, how long a capture runs,
// and the distinct (QP, markings) entries kept — memory is at most
// Entries entries whatever the traffic.
type Limits struct {
	Frames   int
	Duration time.Duration
	Entries  int
}

// DefaultLimits: 20000 frames, 1 s, 1024 entries.
var DefaultLimits = Limits{Frames: 20000, Duration: time.Second, Entries: 1024}

// Wire is a sample of the RoCE frames leaving the host: per QP (BTH
// destination QP, DETH source QP) and markings (VLAN tags, DSCP, ECN),
// the frames and bytes seen. Add takes the frames from a capture of the
// RoCE netdevs in the outgoing direction (Capture, Linux) or from a file
// (a capture of the mlx5 offloaded-traffic sniffer); frames whose source
// address is not the host's are left out, so a capture of both directions
// gives the same sample. Wire is not safe for concurrent use.
type Wire struct {
	lim   Limits
	local map[netip.Addr]bool
	dec   *roce.Decoder
	pkt   roce.Packet

	// Netdevs are the netdevs the frames were captured on.
	Netdevs []string
	// Start and End are the first and last frame's times.
	Start, End time.Time
	// Frames counts the RoCE frames the sample took (leaving the host).
	Frames int
	// Foreign counts RoCE frames from another host's address (received
	// frames in a capture of both directions), not taken.
	Foreign int
	// Undecodable counts frames that are not RoCE or are cut short.
	Undecodable int
	// LeftOut counts frames taken but of an entry beyond Limits.Entries,
	// and CNPs (the NIC's congestion notifications belong to no QP).
	LeftOut int

	entries map[wireKey]*wireEntry
	order   []wireKey
}

// wireKey is one QP's frames with one set of markings.
type wireKey struct {
	netdev    string
	src, dst  netip.Addr
	transport roce.Transport
	destQP    uint32
	srcQP     uint32 // DETH source QP; hasSrcQP says whether there is one
	hasSrcQP  bool
	ntags     int
	tags      [roce.MaxVLANTags]roce.VLANTag
	tos       uint8
	sport     uint16
}

type wireEntry struct {
	packets, bytes uint64
}

// NewWire returns an empty sample that takes the frames whose source is
// one of local (the host's addresses: probe.LocalAddresses).
func NewWire(local []netip.Addr, lim Limits) *Wire {
	if lim.Frames <= 0 {
		lim.Frames = DefaultLimits.Frames
	}
	if lim.Entries <= 0 {
		lim.Entries = DefaultLimits.Entries
	}
	w := &Wire{lim: lim, local: map[netip.Addr]bool{}, dec: roce.NewDecoder(), entries: map[wireKey]*wireEntry{}}
	for _, a := range local {
		w.local[a.Unmap()] = true
	}
	return w
}

// Full reports whether the sample has taken Limits.Frames frames.
func (w *Wire) Full() bool { return w.Frames >= w.lim.Frames }

// Limits returns the sample's bounds.
func (w *Wire) Limits() Limits { return w.lim }

// Add takes one frame captured on netdev at time at; it reports whether
// the sample has room for more.
func (w *Wire) Add(netdev string, frame []byte, at time.Time) bool {
	if w.Full() {
		return false
	}
	p := &w.pkt
	if err := w.dec.Decode(frame, p); err != nil || p.Truncated {
		w.Undecodable++
		return true
	}
	if !w.local[p.Src.Unmap()] {
		w.Foreign++
		return true
	}
	w.Frames++
	if w.Start.IsZero() || at.Before(w.Start) {
		w.Start = at
	}
	if at.After(w.End) {
		w.End = at
	}
	tr := p.BTH.Opcode.Transport()
	if tr == roce.TransportCNP {
		w.LeftOut++
		return !w.Full()
	}
	k := wireKey{netdev: netdev, src: p.Src.Unmap(), dst: p.Dst.Unmap(), transport: tr, destQP: p.BTH.DestQP, tos: p.TOS, sport: p.SrcPort}
	if p.HasDETH {
		k.srcQP, k.hasSrcQP = p.SrcQP, true
	}
	k.ntags = min(p.NumVLANs, roce.MaxVLANTags)
	copy(k.tags[:], p.VLANs[:k.ntags])
	e := w.entries[k]
	if e == nil {
		if len(w.entries) >= w.lim.Entries {
			w.LeftOut++
			return !w.Full()
		}
		e = &wireEntry{}
		w.entries[k] = e
		w.order = append(w.order, k)
	}
	e.packets++
	e.bytes += uint64(len(frame))
	return !w.Full()
}

// chain returns the key's tags as a vlan_chain.
func (k wireKey) chain() []vlan.ChainTag {
	out := make([]vlan.ChainTag, k.ntags)
	for i := 0; i < k.ntags; i++ {
		pcp := k.tags[i].PCP
		out[i] = vlan.ChainTag{Tag: vlan.Tag{ID: k.tags[i].ID, TPID: vlan.TPID(k.tags[i].TPID)}, PCP: &pcp}
	}
	return out
}

// Frames is a source of captured frames: capture.Reader's Next (a pcap or
// pcapng file), which returns io.EOF at the end.
type Frames interface {
	Next() ([]byte, gopacket.CaptureInfo, error)
}

// ReadFrom adds the frames of a capture file, taken on netdev (the name
// the sample reports), until the file ends or the sample is full. A file
// of both directions (the mlx5 offloaded-traffic sniffer's) gives the
// frames leaving the host: the others are counted as Foreign.
func (w *Wire) ReadFrom(src Frames, netdev string) error {
	w.Netdevs = append(w.Netdevs, netdev)
	for !w.Full() {
		f, ci, err := src.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		w.Add(netdev, f, ci.Timestamp)
	}
	return nil
}
