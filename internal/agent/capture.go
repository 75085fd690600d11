package agent

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roce-probe/roce-probe/internal/probe"
	"github.com/roce-probe/roce-probe/vlan"
)

// Opener opens the raw socket of a netdev (probe.Open with
// probe.Incoming on Linux).
type Opener func(netdev string) (Port, error)

// capture runs one reader per netdev socket: replies go to the mesh,
// everything else to the probe listener (a probe.Responder, as `roce-probe
// listen` runs it), whose replies go back out of the same socket.
type capture struct {
	open    Opener
	mesh    *mesh
	log     *slog.Logger
	onError func(source string, err error)

	respMu sync.Mutex // serializes the responder (Handle and SetLocal)
	resp   *probe.Responder

	mu    sync.Mutex
	ports map[string]*capPort
	wg    sync.WaitGroup
}

type capPort struct {
	name    string
	p       Port
	closing atomic.Bool // closed by us: a read error is expected
	dead    atomic.Bool // the socket failed: open it again at the next sync
}

func newCapture(open Opener, m *mesh, resp *probe.Responder, log *slog.Logger, onError func(string, error)) *capture {
	return &capture{open: open, mesh: m, resp: resp, log: log, onError: onError, ports: map[string]*capPort{}}
}

// wireNetdevs are the netdevs a listener captures on in ns: Ethernet
// netdevs that are up, not enslaved (their master is listed), not stacked
// on a lower device of the namespace (VLAN, macvlan: their frames are
// seen, tags included, on the lower device) and not the loopback.
func wireNetdevs(ns *vlan.Namespace) []string {
	var out []string
	for _, l := range ns.Links {
		if !l.Ether || l.Kind == vlan.KindLoopback || l.MasterIndex != 0 || !netdevUp(l.OperState) ||
			(l.Kind.Stacked() && !l.ParentOtherNetns) {
			continue
		}
		out = append(out, l.Name)
	}
	sort.Strings(out)
	return out
}

// setLocal gives the listener the host's addresses.
func (c *capture) setLocal(ns *vlan.Namespace) {
	macs, addrs := localAddresses(ns)
	c.respMu.Lock()
	c.resp.SetLocal(macs, addrs)
	c.respMu.Unlock()
}

// sync captures on exactly the netdevs of want: new ones and those whose
// socket failed are opened, the others closed.
func (c *capture) sync(want []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := map[string]bool{}
	for _, name := range want {
		keep[name] = true
		if cp := c.ports[name]; cp != nil && !cp.dead.Load() {
			continue
		}
		p, err := c.open(name)
		if err != nil {
			c.onError(sourceCapture, fmt.Errorf("capturing on %s: %w", name, err))
			delete(c.ports, name)
			continue
		}
		cp := &capPort{name: name, p: p}
		c.ports[name] = cp
		c.mesh.setPort(name, p)
		c.wg.Add(1)
		go c.read(cp)
	}
	for name, cp := range c.ports {
		if !keep[name] {
			c.stop(cp)
			delete(c.ports, name)
		}
	}
}

// count is the number of open sockets.
func (c *capture) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cp := range c.ports {
		if !cp.dead.Load() {
			n++
		}
	}
	return n
}

func (c *capture) stop(cp *capPort) {
	cp.closing.Store(true)
	c.mesh.dropPort(cp.name, cp.p)
	cp.p.Close()
}

// close closes every socket and waits for the readers (a Read waiting
// on a closed socket returns at once).
func (c *capture) close() {
	c.mu.Lock()
	for name, cp := range c.ports {
		c.stop(cp)
		delete(c.ports, name)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *capture) read(cp *capPort) {
	defer c.wg.Done()
	for {
		frame, at, err := cp.p.Read()
		if err != nil {
			if !cp.closing.Load() {
				c.onError(sourceCapture, fmt.Errorf("capturing on %s: %w", cp.name, err))
				cp.dead.Store(true)
				c.mesh.dropPort(cp.name, cp.p)
				cp.p.Close()
			}
			return
		}
		if frame != nil {
			c.handle(cp, frame, at)
		}
	}
}

// handle dispatches one captured frame.
func (c *capture) handle(cp *capPort, frame []byte, at time.Time) {
	if f, err := probe.ParseFrame(frame); err == nil {
		if pl, err := probe.ParsePayload(f.Payload); err == nil && pl.Kind == probe.KindReply {
			if at.IsZero() {
				at = time.Now()
			}
			c.mesh.reply(frame, pl.Session, at)
			return
		}
	}
	c.respMu.Lock()
	reply, _ := c.resp.Handle(frame)
	c.respMu.Unlock()
	if reply != nil {
		if err := cp.p.Write(reply); err != nil && !cp.closing.Load() {
			c.onError(sourceCapture, fmt.Errorf("answering on %s: %w", cp.name, err))
		}
	}
}
