package fleetsim

import (
	"fmt"
	"math"
	"time"
)

// FaultKind is what breaks.
type FaultKind uint8

const (
	// DeadNIC: the NIC sends and receives nothing.
	DeadNIC FaultKind = iota
	// LossyPort: the ToR port facing the NIC (or its cable, or the NIC's
	// own port) drops a share of the frames, both ways.
	LossyPort
	// LossyLink: the link between a ToR and a spine drops a share of the
	// frames crossing it, one way or both: only the flows hashed onto
	// that spine.
	LossyLink
	// RemarkLink: the link between a ToR and a spine rewrites the DSCP of
	// the frames crossing it one way (a spine's or ToR's wrong QoS
	// policy): only the flows hashed onto that spine.
	RemarkLink
	// NoisyHost: the NIC's host is overloaded (late wake-ups, a throttled
	// CPU): its agent reads replies late and its listener answers late,
	// so probes to and from it time out although the network delivered
	// them. Its agent's Governor sees the pressure and marks its results.
	NoisyHost
	numKinds
)

func (k FaultKind) String() string {
	return [...]string{"dead_nic", "lossy_port", "lossy_link", "remark_link", "noisy_host"}[k]
}

// Direction is the way a link fault acts: Up (ToR to spine), Down (spine
// to ToR) or both.
type Direction uint8

// Directions.
const (
	Up Direction = 1 << iota
	Down
	Both = Up | Down
)

func (d Direction) String() string {
	return [...]string{"", "up", "down", "both"}[d&Both]
}

// Fault is one injected fault and when it acts.
type Fault struct {
	Kind FaultKind
	// NIC is the NIC of DeadNIC, LossyPort and NoisyHost.
	NIC int32
	// ToR and Spine are the link of LossyLink and RemarkLink, Dir its
	// way.
	ToR, Spine int32
	Dir        Direction
	// Loss is the share of frames the port or link drops, or, for a noisy
	// host, the share of probes to or from it that time out; Late is a
	// noisy host's share of late wake-ups.
	Loss, Late float64
	// Start and End bound when it acts (simulated time from the run's
	// start).
	Start, End time.Duration
}

func (f Fault) String() string {
	switch f.Kind {
	case LossyLink, RemarkLink:
		return fmt.Sprintf("%s leaf%05d-%s %s loss %.3f [%v, %v)", f.Kind, f.ToR, SpineName(f.Spine), f.Dir, f.Loss, f.Start, f.End)
	}
	return fmt.Sprintf("%s nic %d loss %.3f [%v, %v)", f.Kind, f.NIC, f.Loss, f.Start, f.End)
}

func (f Fault) active(t time.Duration) bool { return t >= f.Start && t < f.End }

// overlaps says whether the fault acts at some time in [t0, t1).
func (f Fault) overlaps(t0, t1 time.Duration) bool { return f.Start < t1 && t0 < f.End }

// drawFaults draws the run's faults: perEpoch in each epoch, each in a ToR
// of its own (and a link fault on a spine of its own), of a kind drawn
// uniformly, starting within onset of the epoch's start and lasting
// duration. Loss shares are log-uniform in 1 %..100 % for links, 2 %..50 %
// for ports (a port that drops everything is a dead NIC to the probes),
// late wake-up shares uniform in 30 %..90 % (a late one makes its probe
// time out half the time: loss = late/2).
func drawFaults(f *Fabric, seed uint64, epochs, perEpoch int, epoch, onset, duration time.Duration) []Fault {
	var out []Fault
	for e := range epochs {
		usedToR := map[int32]bool{}
		usedSpine := map[int32]bool{}
		for j := 0; j < perEpoch; j++ {
			r := func(k uint64) uint64 { return mix(seed, 0xfa17, uint64(e), uint64(j), k) }
			u := func(k uint64) float64 { return float64(r(k)>>11) / (1 << 53) }
			ft := Fault{Kind: FaultKind(r(0) % uint64(numKinds)), NIC: -1, ToR: -1, Spine: -1}
			ft.Start = time.Duration(e)*epoch + time.Duration(u(1)*float64(onset))
			ft.End = ft.Start + duration
			tor := int32(r(2) % uint64(len(f.ToRs)))
			for try := uint64(0); usedToR[tor] && try < uint64(len(f.ToRs)); try++ {
				tor = (tor + 1) % int32(len(f.ToRs))
			}
			if usedToR[tor] {
				break // more faults than ToRs
			}
			switch ft.Kind {
			case LossyLink, RemarkLink:
				sp := int32(r(3) % uint64(f.Spines))
				for try := 0; usedSpine[sp] && try < f.Spines; try++ {
					sp = (sp + 1) % int32(f.Spines)
				}
				if usedSpine[sp] {
					ft.Kind = DeadNIC // no spine left this epoch
					break
				}
				usedSpine[sp] = true
				ft.ToR, ft.Spine, ft.Dir = tor, sp, Direction(1+r(4)%3)
				if ft.Kind == LossyLink {
					ft.Loss = logUniform(u(5), 0.01, 1)
				}
			}
			if ft.ToR < 0 {
				span := f.ToRs[tor]
				ft.NIC = span[0] + int32(r(6)%uint64(span[1]-span[0]))
				switch ft.Kind {
				case DeadNIC:
					ft.Loss = 1
				case LossyPort:
					ft.Loss = logUniform(u(5), 0.02, 0.5)
				case NoisyHost:
					ft.Late = 0.3 + 0.6*u(5)
					ft.Loss = ft.Late / 2
				}
			}
			usedToR[tor] = true
			out = append(out, ft)
		}
	}
	return out
}

func logUniform(u, lo, hi float64) float64 { return lo * math.Pow(hi/lo, u) }
