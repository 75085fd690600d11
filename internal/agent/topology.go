package agent

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/topology"
)

// LLDPReader reads the LLDP frames of one netdev (collect.LLDPListener).
type LLDPReader interface {
	// Next waits until deadline for a frame: collect.ErrNoLLDP when none
	// came, os.ErrClosed once closed.
	Next(deadline time.Time) (topology.Heard, error)
	Close() error
}

// lldpWatch keeps one LLDP listener per RoCE netdev and the newest frame
// each heard; the host reads give the frames to collect (Options.LLDPHeard),
// which decides the attachments.
type lldpWatch struct {
	listen  func(netdev string) (LLDPReader, error)
	onError func(source string, err error)
	changed chan struct{} // capacity 1: a frame told something new

	mu        sync.Mutex
	heard     map[string]topology.Heard
	listeners map[string]LLDPReader
	why       map[string]error // netdevs whose listener could not be opened
	wg        sync.WaitGroup
}

// lldpPoll is how long a listener's Next waits before it looks again
// (Close ends a wait at once; this bounds nothing but idle wake-ups).
const lldpPoll = time.Minute

func newLLDPWatch(listen func(string) (LLDPReader, error), onError func(string, error)) *lldpWatch {
	return &lldpWatch{listen: listen, onError: onError, changed: make(chan struct{}, 1),
		heard: map[string]topology.Heard{}, listeners: map[string]LLDPReader{}, why: map[string]error{}}
}

// sync listens on exactly netdevs.
func (w *lldpWatch) sync(netdevs []string) {
	if w == nil {
		return
	}
	want := map[string]bool{}
	for _, nd := range netdevs {
		want[nd] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for nd, l := range w.listeners {
		if !want[nd] {
			l.Close()
			delete(w.listeners, nd)
			delete(w.heard, nd)
		}
	}
	for nd := range w.why {
		if !want[nd] {
			delete(w.why, nd)
		}
	}
	for nd := range want {
		if w.listeners[nd] != nil {
			continue
		}
		l, err := w.listen(nd)
		if err != nil {
			if w.why[nd] == nil || w.why[nd].Error() != err.Error() {
				w.onError(sourceLLDP, err)
			}
			w.why[nd] = err
			continue
		}
		delete(w.why, nd)
		w.listeners[nd] = l
		w.wg.Add(1)
		go w.read(nd, l)
	}
}

func (w *lldpWatch) read(nd string, l LLDPReader) {
	defer w.wg.Done()
	for {
		h, err := l.Next(time.Now().Add(lldpPoll))
		switch {
		case errors.Is(err, collect.ErrNoLLDP):
			continue
		case errors.Is(err, os.ErrClosed):
			return
		case err != nil:
			w.mu.Lock()
			open := w.listeners[nd] == l
			if open {
				delete(w.listeners, nd)
				w.why[nd] = err
			}
			w.mu.Unlock()
			l.Close()
			if open {
				w.onError(sourceLLDP, fmt.Errorf("LLDP on %s: %w (listening again at the next host read)", nd, err))
			}
			return
		}
		w.mu.Lock()
		if w.listeners[nd] != l {
			w.mu.Unlock()
			return
		}
		old, had := w.heard[nd]
		w.heard[nd] = h
		w.mu.Unlock()
		if !had || old.Neighbor.Switch() != h.Neighbor.Switch() || old.Neighbor.SwitchPort() != h.Neighbor.SwitchPort() || (old.Neighbor.TTL == 0) != (h.Neighbor.TTL == 0) {
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	}
}

// frames returns a copy of the newest frame of each netdev.
func (w *lldpWatch) frames() map[string]topology.Heard {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.heard)
}

func (w *lldpWatch) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	for nd, l := range w.listeners {
		l.Close()
		delete(w.listeners, nd)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// attachmentNetdevs lists the netdevs of a snapshot's attachments.
func attachmentNetdevs(t *host.Topology) []string {
	if t == nil {
		return nil
	}
	out := make([]string, len(t.Attachments))
	for i, a := range t.Attachments {
		out[i] = a.Netdev
	}
	return out
}

// torOf is the ToR the listener tells a prober that asks, by the netdev
// a probe arrived on: that netdev's switch, else — when every known
// attachment names one switch (a bond's or VLAN's netdev on a host with
// one ToR) — that one; "" when not known.
type torOf map[string]string

func newTorOf(t *host.Topology) torOf {
	m := torOf{}
	if t == nil {
		return m
	}
	one := ""
	for _, a := range t.Attachments {
		if !a.Known() {
			continue
		}
		m[a.Netdev] = a.Switch
		if one == "" {
			one = a.Switch
		} else if one != a.Switch {
			one = "\x00" // several: no default
		}
	}
	if one != "" && one != "\x00" {
		m[""] = one
	}
	return m
}

func (m torOf) of(netdev string) string {
	if s, ok := m[netdev]; ok {
		return s
	}
	return m[""]
}

// learnedToRs are the ToRs peers said in their probe replies, by address;
// bounded by the peers probed (forget drops the others).
type learnedToRs struct {
	mu      sync.Mutex
	m       map[netip.Addr]string
	version uint64 // counts the changes: the plan is made again after one
}

// set records the ToR a's probe replies told. It counts a change (the
// peers are indexed again at the next plan: 100,000 peers, about 75 ms of
// CPU) only when tor is not planned, the ToR the plan already has for a:
// a peer whose ToR the peer list gives tells what the plan knows, and
// every round's new sample of other ToRs would otherwise make the agent
// index its peers again every round.
func (l *learnedToRs) set(a netip.Addr, tor, planned string) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[netip.Addr]string{}
	}
	if l.m[a] != tor {
		l.m[a] = tor
		if tor != planned {
			l.version++
		}
	}
	l.mu.Unlock()
}

// changes is the number of changes so far.
func (l *learnedToRs) changes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

func (l *learnedToRs) get(a netip.Addr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[a]
}

// keep forgets the addresses not in peers.
func (l *learnedToRs) keep(peers []Peer) {
	want := make(map[netip.Addr]bool, len(peers))
	for _, p := range peers {
		want[p.Addr] = true
	}
	l.mu.Lock()
	for a := range l.m {
		if !want[a] {
			delete(l.m, a)
		}
	}
	l.mu.Unlock()
}

// topologyMetrics are roce_probe_topology_info: one series per RoCE
// netdev (the snapshot's attachments).
func topologyMetrics(t *host.Topology) []prometheus.Metric {
	if t == nil {
		return nil
	}
	md := descs()
	ms := make([]prometheus.Metric, 0, len(t.Attachments))
	for _, a := range t.Attachments {
		ms = append(ms, prometheus.MustNewConstMetric(md.topologyInfo, prometheus.GaugeValue, 1, a.Netdev, a.Switch, a.SwitchPort, string(a.Source)))
	}
	return ms
}
