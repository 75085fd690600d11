package counters

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
)

// PortInfo is what the analysis knows of an RDMA port besides its
// counters.
type PortInfo struct {
	Device string
	Port   int
	// Driver is the RDMA driver (a qos.Driver name): it picks the table
	// of meanings.
	Driver string
	// Netdev is the port's RoCE netdev, Real the real netdev below it
	// (whose ethtool set and DCB count the port's frames); "" when
	// unknown.
	Netdev, Real string
	// Slaves are, when Real is a bond (RoCE LAG), its slaves: the NIC
	// ports whose ethtool sets and DCB count the port's frames.
	Slaves []string
	// Boundary says, when the port's frames leave through a device of
	// another network namespace (a pod's macvlan, ipvlan or VLAN device on
	// the host's NIC: vlan.Description.Boundary), why Real, its counters
	// and its DCB cannot be known from here; "" otherwise.
	Boundary string
	Netns    string
	// TCOverride is the port's mlx5 traffic class override (nil: not
	// read).
	TCOverride *qos.TCOverride
	// RDMACM is rdma_cm's configfs default of the port (nil: not read).
	RDMACM *qos.RDMACMDefault
}

// NetdevInfo is what the analysis knows of a real netdev: its DCB state
// and DCQCN configuration.
type NetdevInfo struct {
	Netns, Netdev string
	// DCB is nil when it was not read; Supported false when the netdev
	// has none.
	DCB   *qos.DCB
	DCQCN *qos.DCQCN
	// Pause is the netdev's 802.3x pause settings; nil when not read.
	Pause *qos.Pause
}

// Input is what Analyze works on: the current sample, the previous one
// (nil: one sample, no rates) and the ports and netdevs to report.
type Input struct {
	Prev, Cur *Sample
	Ports     []PortInfo
	Netdevs   []NetdevInfo
}

// Report is the analysis of one sample (the JSON object `roce-probe
// counters` prints per sample; docs/json.md, "counters").
type Report struct {
	Time time.Time `json:"time"`
	// Interval is the time since the previous sample in seconds; nil
	// with one sample.
	Interval       *float64       `json:"interval_s"`
	Ports          []PortReport   `json:"ports"`
	Netdevs        []NetdevReport `json:"netdevs"`
	Priorities     []PrioReport   `json:"priorities"`
	RoCEPriorities []RoCEPriority `json:"roce_priorities"`
	Findings       []Finding      `json:"findings"`
}

// Value is a counter's value, its rate per second since the previous
// sample (nil with one sample, or when the counter went backwards: a
// reset) and its meaning (nil when unknown).
type Value struct {
	Value   uint64   `json:"value"`
	Rate    *float64 `json:"rate"`
	Meaning *string  `json:"meaning"`
	delta   *uint64  // nil: no previous value or a reset
	reset   bool
	counter string // the driver's name, for a netdev's port-level counter
}

// PortReport is one RDMA port's counters, by the driver's names.
type PortReport struct {
	Device   string           `json:"device"`
	Port     int              `json:"port"`
	Netdev   *string          `json:"netdev"`
	Source   string           `json:"source"`
	Counters map[string]Value `json:"counters"`
}

// NetdevReport is a real netdev's port-level Ethernet counters (the ones
// with a meaning; the whole ethtool set is in the snapshot).
type NetdevReport struct {
	Netns    *string          `json:"netns"`
	Netdev   string           `json:"netdev"`
	Driver   *string          `json:"kernel_driver"`
	Counters map[string]Value `json:"counters"`
}

// PrioValue is a per-priority counter's value and rate, and the name the
// driver gives it (for the DCB counters, "dcb requests[p]").
type PrioValue struct {
	Value   uint64   `json:"value"`
	Rate    *float64 `json:"rate"`
	Counter string   `json:"counter"`
	delta   *uint64
}

// PrioReport is one priority of one real netdev: every per-priority
// counter (nil when the driver has none), whether PFC is on (nil when
// unknown) and whether it is one of the netdev's RoCE priorities.
type PrioReport struct {
	Netdev string
	Netns  string
	Prio   uint8
	PFC    *bool
	RoCE   bool
	Values map[PrioCounter]*PrioValue
	// PFCRequests / PFCIndications are DCB's PFC frames sent / received
	// on this priority.
	PFCRequests, PFCIndications *PrioValue
}

// RoCEPriority is a priority of a netdev that carries RoCE, and why
// roce-probe thinks so.
type RoCEPriority struct {
	Netns  *string `json:"netns"`
	Netdev string  `json:"netdev"`
	Prio   uint8   `json:"prio"`
	PFC    *bool   `json:"pfc_enabled"`
	// Assumed is true when no configuration names a RoCE priority and
	// this is the priority RoCE uses by default (DefaultRoCEPriority).
	Assumed bool     `json:"assumed"`
	Why     []string `json:"why"`
}

func rateOf(cur uint64, prev *uint64, dt float64) (rate *float64, delta *uint64, reset bool) {
	if prev == nil || dt <= 0 {
		return nil, nil, false
	}
	if cur < *prev {
		return nil, nil, true
	}
	d := cur - *prev
	r := float64(d) / dt
	r = math.Round(r*1000) / 1000
	return &r, &d, false
}

func lookup(m map[string]uint64, name string) *uint64 {
	if v, ok := m[name]; ok {
		return &v
	}
	return nil
}

// Analyze builds the report of in.Cur (with rates against in.Prev): every
// RDMA port's counters with their meanings, each real netdev's port-level
// and per-priority counters, its RoCE priorities and the findings.
func Analyze(in Input) Report {
	cur := in.Cur
	if cur == nil {
		cur = &Sample{}
	}
	r := Report{Time: cur.Time, Ports: []PortReport{}, Netdevs: []NetdevReport{}, Priorities: []PrioReport{},
		RoCEPriorities: []RoCEPriority{}, Findings: []Finding{}}
	var dt float64
	if in.Prev != nil {
		dt = cur.Time.Sub(in.Prev.Time).Seconds()
		iv := math.Round(dt*1000) / 1000
		r.Interval = &iv
	}
	a := &analysis{in: in, dt: dt, r: &r}
	for _, pi := range in.Ports {
		p := cur.Port(pi.Device, pi.Port)
		if p == nil {
			continue
		}
		pr := PortReport{Device: p.Device, Port: p.Port, Netdev: null.String(pi.Netdev), Source: p.Source, Counters: map[string]Value{}}
		prev := in.Prev.Port(p.Device, p.Port)
		add := func(m map[string]uint64, pm map[string]uint64, withMeaning bool) {
			for name, v := range m {
				var pv *uint64
				if prev != nil {
					pv = lookup(pm, name)
				}
				rate, delta, reset := rateOf(v, pv, dt)
				val := Value{Value: v, Rate: rate, delta: delta, reset: reset}
				if withMeaning {
					if mn := MeaningOf(pi.Driver, name); mn != "" {
						s := string(mn)
						val.Meaning = &s
					}
				}
				if reset {
					a.resets = append(a.resets, pi.Device+" port "+itoa(pi.Port)+" "+name)
				}
				pr.Counters[name] = val
			}
		}
		var ph, pc map[string]uint64
		if prev != nil {
			ph, pc = prev.HWCounters, prev.Counters
		}
		add(p.HWCounters, ph, true)
		add(p.Counters, pc, false)
		r.Ports = append(r.Ports, pr)
	}
	for _, ni := range in.Netdevs {
		a.netdev(ni)
	}
	a.findings()
	return r
}

type analysis struct {
	in     Input
	dt     float64
	r      *Report
	resets []string
	// prios of each netdev, by netns/netdev key
	prios map[[2]string][]*PrioReport
	roce  map[[2]string]map[uint8][]string
	port  map[[2]string]map[PortCounter]Value
	// meanings indexes each port report's counter names by meaning.
	meanings map[*PortReport]map[Meaning][]string
}

func itoa(i int) string { return strconv.Itoa(i) }

// netdev adds one real netdev's port-level counters, priorities and RoCE
// priorities.
func (a *analysis) netdev(ni NetdevInfo) {
	if a.prios == nil {
		a.prios, a.roce, a.port = map[[2]string][]*PrioReport{}, map[[2]string]map[uint8][]string{}, map[[2]string]map[PortCounter]Value{}
	}
	key := [2]string{ni.Netns, ni.Netdev}
	cur := a.in.Cur.Netdev(ni.Netns, ni.Netdev)
	prev := a.in.Prev.Netdev(ni.Netns, ni.Netdev)
	var n, pn Normalized
	driver := ""
	if cur != nil {
		driver = cur.Driver
		n = Normalize(cur.Driver, cur.Stats)
	}
	if prev != nil {
		pn = Normalize(prev.Driver, prev.Stats)
	}
	if cur != nil {
		nr := NetdevReport{Netns: null.String(ni.Netns), Netdev: ni.Netdev, Driver: null.String(driver), Counters: map[string]Value{}}
		a.port[key] = map[PortCounter]Value{}
		for c, v := range n.Port {
			var pv *uint64
			if p, ok := pn.Port[c]; ok && prev != nil {
				pv = &p.Value
			}
			rate, delta, reset := rateOf(v.Value, pv, a.dt)
			s := string(c)
			val := Value{Value: v.Value, Rate: rate, Meaning: &s, delta: delta, reset: reset, counter: v.Counter}
			if reset {
				a.resets = append(a.resets, ni.Netdev+" "+v.Counter)
			}
			nr.Counters[v.Counter] = val
			a.port[key][c] = val
		}
		a.r.Netdevs = append(a.r.Netdevs, nr)
	}
	roce, assumed := rocePriorities(ni, a.in.Ports)
	a.roce[key] = roce
	pfcCur, pfcPrev := a.in.Cur.PFCOf(ni.Netns, ni.Netdev), a.in.Prev.PFCOf(ni.Netns, ni.Netdev)
	hasPFCCounters := ni.DCB != nil && ni.DCB.Supported && ni.DCB.PFC != nil && pfcCur != nil
	if !n.HasPrio() && !hasPFCCounters && len(roce) == 0 {
		return
	}
	for p := uint8(0); p < 8; p++ {
		pr := &PrioReport{Netdev: ni.Netdev, Netns: ni.Netns, Prio: p, Values: map[PrioCounter]*PrioValue{}}
		if ni.DCB != nil && ni.DCB.Supported && ni.DCB.PFC != nil {
			on := ni.DCB.PFC.On(p)
			pr.PFC = &on
		}
		_, pr.RoCE = roce[p]
		for c, v := range n.Prio[p] {
			var pv *uint64
			if pp, ok := pn.Prio[p][c]; ok && prev != nil {
				pv = &pp.Value
			}
			rate, delta, reset := rateOf(v.Value, pv, a.dt)
			if reset {
				a.resets = append(a.resets, ni.Netdev+" "+v.Counter)
			}
			pr.Values[c] = &PrioValue{Value: v.Value, Rate: rate, Counter: v.Counter, delta: delta}
		}
		if hasPFCCounters {
			mk := func(cur uint64, prev *uint64, name string) *PrioValue {
				rate, delta, _ := rateOf(cur, prev, a.dt)
				return &PrioValue{Value: cur, Rate: rate, Counter: name, delta: delta}
			}
			var rq, in *uint64
			if pfcPrev != nil {
				rq, in = &pfcPrev.Requests[p], &pfcPrev.Indications[p]
			}
			pr.PFCRequests = mk(pfcCur.Requests[p], rq, "dcb pfc requests["+itoa(int(p))+"]")
			pr.PFCIndications = mk(pfcCur.Indications[p], in, "dcb pfc indications["+itoa(int(p))+"]")
		}
		a.prios[key] = append(a.prios[key], pr)
		a.r.Priorities = append(a.r.Priorities, *pr)
	}
	ps := make([]uint8, 0, len(roce))
	for p := range roce {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	for _, p := range ps {
		rp := RoCEPriority{Netns: null.String(ni.Netns), Netdev: ni.Netdev, Prio: p, Assumed: assumed, Why: roce[p]}
		if ni.DCB != nil && ni.DCB.Supported && ni.DCB.PFC != nil {
			on := ni.DCB.PFC.On(p)
			rp.PFC = &on
		}
		a.r.RoCEPriorities = append(a.r.RoCEPriorities, rp)
	}
}

// HasError reports whether a finding of r is an error (SeverityError):
// the traffic is not what its configuration promises (`roce-probe
// counters` exits 1).
func (r *Report) HasError() bool {
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Discards is the frames of the priority dropped on receive, whatever the
// reason: the sum of rx_discards, rx_buf_discard and rx_cong_discard that
// the driver has (mlx5 has all three), with the sum of their rates when
// each has one. Nil when the driver counts no discards per priority.
func (p *PrioReport) Discards() *PrioValue {
	var out *PrioValue
	var rate float64
	rated := true
	for _, c := range []PrioCounter{PrioRxDiscards, PrioRxBufDiscard, PrioRxCongDiscard} {
		v := p.Values[c]
		if v == nil {
			continue
		}
		if out == nil {
			out = &PrioValue{}
		} else {
			out.Counter += " + "
		}
		out.Value += v.Value
		out.Counter += v.Counter
		if v.Rate == nil {
			rated = false
		} else {
			rate += *v.Rate
		}
	}
	if out != nil && rated {
		out.Rate = &rate
	}
	return out
}

// Select keeps the part of in one RDMA device or one netdev is about:
// with device (and port, 0 for every port) its ports and the real netdevs
// below them (a bond with its slaves: PortInfo.Slaves); with real (a real
// netdev) the ports on it and that netdev.
// Both empty keep everything; real wins over device.
func (in Input) Select(device string, port int, real string) Input {
	if device == "" && real == "" {
		return in
	}
	keep := map[string]bool{}
	var ports []PortInfo
	for _, p := range in.Ports {
		ok := p.Device == device && (port == 0 || p.Port == port)
		if real != "" {
			ok = p.Real == real
		}
		if ok {
			ports = append(ports, p)
			keep[p.Real] = true
			for _, sl := range p.Slaves {
				keep[sl] = true
			}
		}
	}
	if real != "" {
		keep[real] = true
	}
	var nds []NetdevInfo
	for _, n := range in.Netdevs {
		if keep[n.Netdev] {
			nds = append(nds, n)
		}
	}
	in.Ports, in.Netdevs = ports, nds
	return in
}
