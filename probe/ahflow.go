package probe

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
)

// RandomSport returns a UDP source port for one probe run (`roce-probe
// send` without --sport) or one agent flow: a random port of the range
// RoCE v2 senders use, 0xC000..0xFFFF (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN..
// MAX, include/rdma/ib_verbs.h; roce.MinUDPSourcePort). It is not a
// secret: math/rand/v2's generator picks it.
func RandomSport() uint16 {
	return roce.MinUDPSourcePort | uint16(rand.IntN(0x10000-roce.MinUDPSourcePort))
}

// BaseMarkings are the markings a probe asks for from an address handle's
// sl and traffic class, before a driver's rule is known (MarkingsFromAH
// replaces what the driver's profile knows): PCP sl & 7 (the 3 bits an
// 802.1Q tag has; mlx5 maps sl to the PCP so), DSCP tclass >> 2, ECN
// tclass & 3, TTL ttl and UDP source port sport. Tagged and VLAN are the
// probe's endpoint's to set.
func BaseMarkings(sl, tclass, ttl uint8, sport uint16) Markings {
	return Markings{PCP: sl & 7, DSCP: tclass >> 2, ECN: tclass & 3, TTL: ttl, Sport: sport}
}

// AHFlow is the address handle a probe imitates: the source GID entry
// (Device, Port, GIDIndex), the sl, traffic class and hop limit an
// application sets, how the address vector reaches the driver (Path; ""
// for user-ah), and the UDP source port of the run (RandomSport), used
// when the driver's is not fixed.
type AHFlow struct {
	Device           string
	Port             int // 0: 1
	GIDIndex         int
	SL, TrafficClass uint8
	HopLimit         uint8
	Path             qos.Path
	Sport            uint16
}

// Base is the flow's BaseMarkings.
func (f AHFlow) Base() Markings { return BaseMarkings(f.SL, f.TrafficClass, f.HopLimit, f.Sport) }

// AHResolver resolves one AHFlow to many destinations: a host.AHResolver
// for the flow's address handle, and each resolution's probe markings
// (MarkingsFromAH over the flow's Base). `roce-probe send --dev
// --gid-index` and each agent flow probe with what it resolves. It is
// not safe for concurrent use.
type AHResolver struct {
	r    *host.AHResolver
	base Markings
}

// ErrSourceNotRoCEv2 is wrapped when a probe's source GID entry is not a RoCE
// v2 one: probes are RoCE v2 frames (UDP port roce.UDPPort), which a RoCE
// v1 or IB entry's QPs do not send.
var ErrSourceNotRoCEv2 = errors.New("want RoCE v2 (probes are RoCE v2 frames)")

// SourceEntry says why GID entry e cannot be a probe's source, or nil:
// an error wrapping ErrSourceNotRoCEv2, "is a RoCE v1 GID: want RoCE v2 (...)",
// for the caller to prefix with the entry's name. NewAHResolver, `send
// --gid-index` and the agent's flows check their source with it.
func SourceEntry(e gid.Entry) error {
	if e.Type == gid.TypeRoCEv2 {
		return nil
	}
	return fmt.Errorf("is a %s GID: %w", e.Type, ErrSourceNotRoCEv2)
}

// NewAHResolver prepares f's address handle on view v. It fails as
// host.View.NewAHResolver fails (the device, port or entry is unusable),
// and, wrapping ErrSourceNotRoCEv2, when the entry is not a RoCE v2 one
// (SourceEntry).
func NewAHResolver(v *host.View, f AHFlow) (*AHResolver, error) {
	req := host.AHRequest{Device: f.Device, Path: f.Path, Attr: ah.Attr{IsGlobal: true, PortNum: uint8(f.Port), SL: f.SL,
		GRH: ah.GlobalRoute{SGIDIndex: uint8(f.GIDIndex), HopLimit: f.HopLimit, TrafficClass: f.TrafficClass}}}
	r, err := v.NewAHResolver(req)
	if err != nil {
		return nil, err
	}
	if src := r.Source(); src != nil {
		if err := SourceEntry(src.Entry); err != nil {
			return nil, fmt.Errorf("probe: GID index %d of %s port %d %w", f.GIDIndex, f.Device, src.Port.Port, err)
		}
	}
	return &AHResolver{r: r, base: f.Base()}, nil
}

// Resolve resolves the flow's address handle to dst: the resolution, the
// markings a probe to dst carries and notes on what the driver's profile
// does not know (MarkingsFromAH). A next hop whose MAC is not known yet
// is no failure here: the error is then the *ah.NeighborError, returned
// with the resolution and the markings, for the caller to have the kernel
// resolve it (ResolveEndpoint does). Any other error comes with a nil
// resolution.
func (r *AHResolver) Resolve(dst gid.GID) (*host.AHResult, Markings, []string, error) {
	res, err := r.r.Resolve(dst)
	if err != nil {
		var nerr *ah.NeighborError
		if !errors.As(err, &nerr) || res == nil || res.Resolution == nil {
			return nil, Markings{}, nil, err
		}
	}
	m, notes := MarkingsFromAH(res, r.base)
	return res, m, notes, err
}
