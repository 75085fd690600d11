package fleet

import "time"

// Levels are the factors a Governor scales the probe rate by, in order:
// full rate, then a half, a quarter, a tenth (yuuki/rpingmesh's steps).
var Levels = [...]float64{1, 0.5, 0.25, 0.1}

// Pressure reasons (Governor.Observe).
const (
	PressureNone = ""             // the host is calm
	PressureCPU  = "cpu"          // the agent used more CPU than its budget
	PressureLate = "late_wakeups" // the agent's timers fired late: the host is busy
)

// Sample is what an agent measured of itself over one period: the wall
// time, its own CPU time (user + system), its sender's wake-ups and how
// many of them came later than it asked for by more than the Governor's
// Late.
//
// Upkeep is the part of CPU the agent spent on work whose cost does not
// depend on its probe rate — reading the host after a change, parsing
// its peer list at start-up, planning — which the budget does not count:
// probing less would not make it cheaper, so it must not lower the rate.
type Sample struct {
	Wall, CPU     time.Duration
	Upkeep        time.Duration
	Wakeups, Late int
}

// Governor decides how much of its planned probe rate an agent sends
// under host pressure: it steps down a level (Levels) after each period
// in which the agent's CPU without its upkeep (Sample.Upkeep: what is
// left is probing, answering probes and exporting) was over Budget or
// more than LateShare of its wake-ups were late, and back up one level
// after Calm periods in a row with that CPU under half the budget and
// under half that share late. Its
// results are probes a busy host did not send, not probes it sent late
// and counted as lost (a late wake-up delays a reply's read: loss and
// RTT measured on a busy host are the host's, not the network's). The
// zero value is not usable: NewGovernor.
type Governor struct {
	Budget    float64       // CPU seconds per second
	Late      time.Duration // a wake-up later than this is late
	LateShare float64       // the share of late wake-ups that is pressure
	Calm      int           // calm periods in a row before a step up

	level, calm int
	reason      string
}

// NewGovernor returns a Governor at full rate with the given CPU budget
// (a fraction of one core), a wake-up 50 ms late counted late, 20 % of
// them late as pressure, 3 calm periods to step up.
func NewGovernor(budget float64) *Governor {
	return &Governor{Budget: budget, Late: 50 * time.Millisecond, LateShare: 0.2, Calm: 3}
}

// Observe takes one period's sample and returns the scale to apply from
// now on, the pressure seen in this period (PressureNone, PressureCPU,
// PressureLate) and whether the scale changed. A sample of no wall time
// changes nothing.
func (g *Governor) Observe(s Sample) (scale float64, pressure string, changed bool) {
	if s.Wall <= 0 {
		return g.Scale(), PressureNone, false
	}
	cpu := max(s.CPU-s.Upkeep, 0).Seconds() / s.Wall.Seconds()
	late := 0.0
	if s.Wakeups > 0 {
		late = float64(s.Late) / float64(s.Wakeups)
	}
	was := g.level
	switch {
	case cpu > g.Budget:
		pressure = PressureCPU
	case late > g.LateShare:
		pressure = PressureLate
	}
	switch {
	case pressure != PressureNone:
		g.reason, g.calm = pressure, 0
		g.level = min(g.level+1, len(Levels)-1)
	case cpu < g.Budget/2 && late < g.LateShare/2:
		g.calm++
		if g.calm >= g.Calm && g.level > 0 {
			g.level--
			g.calm = 0
		}
		if g.level == 0 {
			g.reason = PressureNone
		}
	default: // between: hold
		g.calm = 0
	}
	return g.Scale(), pressure, g.level != was
}

// Scale is the current factor (one of Levels).
func (g *Governor) Scale() float64 { return Levels[g.level] }

// Pressure is the reason of the last step down, PressureNone once back at
// full rate.
func (g *Governor) Pressure() string { return g.reason }
