//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/roce-probe/roce-probe/roce"
)

// egressGrace is how long after sending a probe whose reply came back its
// result waits for the egress copy (the egress capture normally sees it
// first, but its goroutine may run late on a loaded host: the lab's TCG
// VM under a loaded machine missed one at 20 ms). Waiting costs only
// when no copy comes: the results are then emitted this much later, and
// probes are still sent at their interval.
const egressGrace = 250 * time.Millisecond

// Send sends probes from cfg.Endpoint and calls emit with each probe's
// result, in order, once its reply came back or its timeout passed. It
// needs CAP_NET_RAW (a *PermissionError says so).
func Send(ctx context.Context, cfg SendConfig, emit func(Result)) (Summary, error) {
	if cfg.Count < 1 {
		return Summary{}, fmt.Errorf("probe: count %d: want at least 1", cfg.Count)
	}
	ep := cfg.Endpoint
	base := cfg.Base
	base.Tagged = len(ep.Tags) > 0
	if base.Tagged {
		base.VLAN = ep.Tags[0].ID
	} else {
		base.VLAN, base.PCP = 0, 0
		if cfg.Sweep == SweepPCP {
			return Summary{}, fmt.Errorf("probe: a PCP sweep needs a VLAN tag, and %s sends untagged frames: use a VLAN netdev", ep.Netdev)
		}
	}
	tags := append([]roce.VLANTag(nil), ep.Tags...)
	for i := range tags {
		tags[i].PCP = base.PCP
	}
	p, err := NewProber(Frame{SrcMAC: ep.SrcMAC, DstMAC: ep.DstMAC, Tags: tags, Src: ep.Src, Dst: ep.Dst})
	if err != nil {
		return Summary{}, err
	}
	p.PayloadLen = cfg.PayloadLen
	var plan []Markings
	if cfg.Sweep != "" {
		for _, v := range cfg.Sweep.Values() {
			for i := 0; i < cfg.Count; i++ {
				plan = append(plan, cfg.Sweep.Apply(base, v))
			}
		}
	} else {
		for i := 0; i < cfg.Count; i++ {
			plan = append(plan, base)
		}
	}

	rx, err := Open(ep.Wire, Incoming)
	if err != nil {
		return Summary{}, err
	}
	defer rx.Close()
	egress, err := Open(ep.Wire, Outgoing)
	if err != nil {
		return Summary{}, err
	}
	defer egress.Close()

	var mu sync.Mutex
	readCtx, stopReading := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var readErr error
	for _, c := range []*Conn{rx, egress} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for readCtx.Err() == nil {
				frame, _, err := c.Read()
				if err != nil {
					mu.Lock()
					if readErr == nil && !errors.Is(err, ErrClosed) {
						readErr = err
					}
					mu.Unlock()
					return
				}
				if frame != nil {
					mu.Lock()
					p.Match(frame, time.Now())
					mu.Unlock()
				}
			}
		}()
	}
	defer func() { stopReading(); wg.Wait() }()

	sum := Summary{Findings: map[FindingKind]int{}}
	if cfg.Sweep != "" {
		sum.Sweep = NewSweep(cfg.Sweep)
	}
	var rttSum time.Duration
	emitted, sent := 0, 0
	nextSend := time.Now()
	for emitted < len(plan) {
		now := time.Now()
		if sent < len(plan) && !now.Before(nextSend) && ctx.Err() == nil {
			mu.Lock()
			frame, _, err := p.Next(plan[sent], now)
			mu.Unlock()
			if err != nil {
				return sum, err
			}
			if err := rx.Write(frame); err != nil {
				return sum, err
			}
			sent++
			nextSend = now.Add(cfg.Interval)
		}
		if ctx.Err() != nil && emitted >= sent {
			break // interrupted: report what was sent
		}
		mu.Lock()
		var ready []Result
		for emitted < sent {
			r := p.Result(uint32(emitted))
			age := now.Sub(r.SentAt)
			done := age >= cfg.Timeout || (r.Received != nil && (r.Egress != nil || age >= egressGrace)) || ctx.Err() != nil
			if !done {
				break
			}
			ready = append(ready, r)
			emitted++
		}
		err := readErr
		mu.Unlock()
		if err != nil {
			return sum, err
		}
		for _, r := range ready {
			sum.Sent++
			if r.Received != nil {
				sum.Answered++
				rttSum += r.RTT
				if sum.RTTMin == 0 || r.RTT < sum.RTTMin {
					sum.RTTMin = r.RTT
				}
				if r.RTT > sum.RTTMax {
					sum.RTTMax = r.RTT
				}
			} else {
				sum.Lost++
			}
			if r.Egress != nil {
				sum.EgressSeen++
				if *r.Egress != r.Sent {
					sum.EgressOff++
				}
			}
			for _, f := range r.Findings() {
				sum.Findings[f.Kind]++
			}
			if sum.Sweep != nil {
				v, _ := cfg.Sweep.get(r.Sent)
				sum.Sweep.Add(v, r.Received)
			}
			emit(r)
		}
		time.Sleep(time.Millisecond)
	}
	if sum.Answered > 0 {
		sum.RTTAvg = rttSum / time.Duration(sum.Answered)
	}
	return sum, ctx.Err()
}
